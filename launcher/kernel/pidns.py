"""A child that is pid 1 of a new pid namespace: fork() after unshare(CLONE_NEWPID), in the parent.

unshare(CLONE_NEWPID) does not move the caller: it sets the namespace its *next* child is born in (that
child is the namespace's init). The launcher therefore unshares, forks once and at once sets its own
namespace back for later children with setns, all while it is single-threaded. When the init exits the
kernel SIGKILLs every other process of the namespace and its exit completes only once they are gone.
"""

from __future__ import annotations

import os

from launcher.kernel._sys import libc

CLONE_NEWPID = 0x20000000


def fork_into_new_pid_namespace() -> int:
    """fork(): 0 in the child, which is pid 1 of a namespace of its own; the child's (host) pid in the parent.

    The caller's later children are born in the caller's own namespace again. Raises OSError (nothing
    forked) when the kernel refuses the namespace.
    """
    own = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    try:
        libc.unshare(CLONE_NEWPID)
        try:
            pid = os.fork()
        except BaseException:
            libc.setns(own, CLONE_NEWPID)
            raise
        if pid != 0:
            libc.setns(own, CLONE_NEWPID)
        return pid
    finally:
        os.close(own)
