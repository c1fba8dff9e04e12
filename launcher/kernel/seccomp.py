"""A seccomp deny list built with libseccomp: default allow, EPERM for the kernel's sharpest surfaces.

Other architectures (i386 via int 0x80, x32) hit libseccomp's bad-arch action, which kills the process.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from launcher.kernel._sys import libseccomp as scmp

AF_INET, AF_INET6, AF_PACKET = 2, 10, 17
SOCK_STREAM = 1
SOCK_TYPE_MASK = 0xF  # the low bits of socket()'s type; SOCK_NONBLOCK/SOCK_CLOEXEC sit above them
IPPROTO_TCP = 6
IPPROTO_UDP = 17
SOCK_DGRAM = 2
_INT = 0xFFFFFFFF  # int arguments: compare the low 32 bits only, as the kernel reads them


def _int_eq(arg: int, value: int) -> tuple[int, int, int, int]:
    """arg == value for a C int argument: a plain 64-bit EQ would let set high bits slip past."""
    return (arg, scmp.CMP_MASKED_EQ, _INT, value)

_NS_FLAGS = {  # clone() flags that make a namespace: unshare is denied, so clone must be too
    "CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}

DENIED_SYSCALLS = (
    "ptrace", "process_vm_readv", "process_vm_writev",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "bpf", "perf_event_open", "userfaultfd",
    "keyctl", "add_key", "request_key",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    "kexec_load", "kexec_file_load", "open_by_handle_at", "name_to_handle_at",
    "init_module", "finit_module", "delete_module", "swapon", "swapoff", "reboot", "acct",
    "iopl", "ioperm", "lookup_dcookie", "kcmp",
    "memfd_secret",  # memory even the kernel's direct map no longer holds: nothing here needs it
)
"""Denied outright, whatever their arguments (a name this architecture lacks is skipped)."""


@dataclass(frozen=True)
class Rule:
    """One ERRNO rule: the syscall, the errno, and ANDed (arg, op, datum_a, datum_b) comparisons."""

    syscall: str
    errno: int
    cmps: tuple[tuple[int, int, int, int], ...] = ()


def _only_protocol(family: int, sock_type: int, allowed: int) -> list[Rule]:
    """Refuse (family, sock_type) sockets whose protocol is neither 0 nor `allowed`."""
    kind = _int_eq(0, family), (1, scmp.CMP_MASKED_EQ, SOCK_TYPE_MASK, sock_type)
    rules = [Rule("socket", errno.EPERM, (*kind, (2, scmp.CMP_GT, allowed, 0)))]
    rules += [Rule("socket", errno.EPERM, (*kind, _int_eq(2, proto))) for proto in range(1, allowed)]
    return rules


AF_UNIX, AF_NETLINK = 1, 16
NETLINK_ROUTE = 0
AF_MAX = 46  # AF_MCTP (45) is the last family Linux 6.x defines
# An allow list of families: anything else (AF_VSOCK to the hypervisor, AF_BLUETOOTH, AF_CAN, AF_ALG, ...)
# is refused, whatever the kernel's config builds in. AF_NETLINK stays: glibc's getaddrinfo asks it about
# the component's own network namespace.
FAMILIES_ALLOWED = frozenset({AF_UNIX, AF_INET, AF_INET6, AF_NETLINK})


def _family_rules() -> list[Rule]:
    rules = [Rule("socket", errno.EPERM, (_int_eq(0, family),))
             for family in range(AF_MAX) if family not in FAMILIES_ALLOWED]
    rules.append(Rule("socket", errno.EPERM, ((0, scmp.CMP_GE, AF_MAX, 0),)))
    # Netlink only as NETLINK_ROUTE (protocol 0), the component's own netns: not uevents, audit, sock_diag...
    rules.append(Rule("socket", errno.EPERM, (_int_eq(0, AF_NETLINK), (2, scmp.CMP_GT, NETLINK_ROUTE, 0))))
    return rules


def _socketpair_rules() -> list[Rule]:
    """socketpair() takes socket()'s (family, type, protocol) and creates the family before refusing the pair
    (loading AF_TIPC's or AF_VSOCK's module on the way). Of the families socket() allows only AF_UNIX makes
    pairs, so it is the one left. Compared on all 64 bits: set high bits are refused too (fails closed)."""
    return [Rule("socketpair", errno.EPERM, ((0, scmp.CMP_GT, AF_UNIX, 0),)),
            Rule("socketpair", errno.EPERM, (_int_eq(0, 0),))]


def _socket_rules(deny_inet: bool, allow_udp: bool = False) -> list[Rule]:
    rules = _family_rules()
    for family in (AF_INET, AF_INET6):
        if deny_inet:
            rules.append(Rule("socket", errno.EPERM, (_int_eq(0, family),)))
            continue
        # Only TCP leaves (through the net door): every other socket type, and stream sockets whose
        # protocol is not 0/IPPROTO_TCP (SCTP, MPTCP), are refused. The egress doors (allow_udp) also
        # keep plain UDP, which their resolver needs; raw and ICMP datagram sockets stay refused.
        for sock_type in range(SOCK_TYPE_MASK + 1):
            if sock_type == SOCK_DGRAM and allow_udp:
                rules += _only_protocol(family, SOCK_DGRAM, IPPROTO_UDP)
            elif sock_type != SOCK_STREAM:
                fam_type = (_int_eq(0, family), (1, scmp.CMP_MASKED_EQ, SOCK_TYPE_MASK, sock_type))
                rules.append(Rule("socket", errno.EPERM, fam_type))
        stream = _int_eq(0, family), (1, scmp.CMP_MASKED_EQ, SOCK_TYPE_MASK, SOCK_STREAM)
        rules.append(Rule("socket", errno.EPERM, (*stream, (2, scmp.CMP_GT, IPPROTO_TCP, 0))))
        for proto in range(1, IPPROTO_TCP):
            rules.append(Rule("socket", errno.EPERM, (*stream, _int_eq(2, proto))))
    return rules


MSG_FASTOPEN = 0x20000000
# TCP_FASTOPEN (a listener's queue), _CONNECT (connect later sends SYN+data), _KEY, _NO_COOKIE.
TCP_FASTOPEN_OPTIONS = (23, 30, 33, 34)
# The flags argument of each send call that can carry MSG_FASTOPEN.
_SEND_FLAGS_ARG = {"sendto": 3, "sendmsg": 2, "sendmmsg": 3}


def _fast_open_rules() -> list[Rule]:
    """TCP Fast Open in every form. sendto/sendmsg(MSG_FASTOPEN) on an unconnected socket connects without
    Landlock's connect check (ABI <= 7 hooks connect() only); the launcher's netns also turn it off."""
    fast_open = MSG_FASTOPEN, MSG_FASTOPEN
    rules = [Rule(call, errno.EPERM, ((arg, scmp.CMP_MASKED_EQ, *fast_open),))
             for call, arg in _SEND_FLAGS_ARG.items()]
    rules += [Rule("setsockopt", errno.EPERM, (_int_eq(1, IPPROTO_TCP), _int_eq(2, option)))
              for option in TCP_FASTOPEN_OPTIONS]
    return rules


def listen_denied(deny_inet: bool, tcp_bind: tuple[int, ...]) -> bool:
    """Whether listen() is refused (pure): where TCP sockets may be made but no port may be bound.

    listen() on an unbound TCP socket binds an ephemeral port without Landlock's bind check (ABI <= 7), and
    seccomp cannot tell a TCP fd from a Unix one, so such a component cannot listen at all; doors get their
    listeners from the launcher by fd. A component with no inet sockets keeps listen() for Unix sockets.
    """
    return not deny_inet and not tcp_bind


# The fs door runs as the workspace owner's uid: it may not reach the owner's Unix sockets (ssh-agent, D-Bus)
# nor change metadata of the owner's files by path, which Landlock does not fence (docs/decisions/fs.md).
FS_DOOR_EXTRA = (
    "socket", "chmod", "fchmodat", "fchmodat2", "chown", "lchown", "fchownat", "fchown",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    "utime", "utimes", "futimesat", "utimensat",
)
# Of these, the calls denied only when they name a path (argument index of the path): futimens(fd), which is
# utimensat(fd, NULL, ...), stays allowed, so the fs door can set the times of a file it opened in the workspace
# (the mount's touch); utimensat with a path, even "" with AT_EMPTY_PATH, is refused.
BY_PATH_ONLY = {"utimensat": 1}


def deny_rules(deny_inet: bool, allow_udp: bool = False, extra: tuple[str, ...] = (),
               deny_listen: bool = False) -> tuple[Rule, ...]:
    """Every rule of the filter (pure): the deny list, namespace-making clone, clone3, sockets, Fast Open,
    `extra`, and listen() when `deny_listen`."""
    by_path = [name for name in extra if name in BY_PATH_ONLY]
    outright = (*DENIED_SYSCALLS, *(name for name in extra if name not in BY_PATH_ONLY),
                *(("listen",) if deny_listen and "listen" not in extra else ()))
    rules = [Rule(name, errno.EPERM) for name in outright]
    rules += [Rule(name, errno.EPERM, ((BY_PATH_ONLY[name], scmp.CMP_NE, 0, 0),)) for name in by_path]
    rules += [Rule("clone", errno.EPERM, ((0, scmp.CMP_MASKED_EQ, f, f),)) for f in _NS_FLAGS.values()]
    # clone3 passes its flags in memory seccomp cannot read: ENOSYS makes libc fall back to clone().
    rules.append(Rule("clone3", errno.ENOSYS))
    if "socket" not in extra:  # socket() denied outright needs no per-family rules
        rules += _socket_rules(deny_inet, allow_udp)
    rules += [rule for rule in _socketpair_rules() if rule.syscall not in extra]
    rules += [rule for rule in _fast_open_rules() if rule.syscall not in extra]
    return tuple(rules)


class SeccompError(RuntimeError):
    """The filter could not be built or loaded; the message names the rule."""


class PreparedFilter:
    """A built, not yet loaded, filter: build it before Landlock hides libseccomp, load it after."""

    def __init__(self, deny_inet: bool, allow_udp: bool = False, extra: tuple[str, ...] = (),
                 deny_listen: bool = False) -> None:
        self._filter = scmp.Filter(scmp.ACT_ALLOW)
        self.denied: list[str] = []
        try:
            self._filter.set_badarch(scmp.ACT_KILL_PROCESS)
            for rule in deny_rules(deny_inet, allow_udp, extra, deny_listen):
                added = self._filter.add(scmp.act_errno(rule.errno), rule.syscall, rule.cmps)
                if added and rule.syscall not in self.denied:
                    self.denied.append(rule.syscall)
        except OSError as exc:
            self._filter.release()
            raise SeccompError(f"seccomp filter not built: {exc}") from exc

    def release(self) -> None:
        """Free the context without loading it."""
        self._filter.release()

    def load(self) -> list[str]:
        """Load on the calling thread (needs no_new_privs), free the context, return the restricted syscalls."""
        try:
            self._filter.load()
        except OSError as exc:
            raise SeccompError(f"seccomp filter not loaded: {exc}") from exc
        finally:
            self._filter.release()
        return list(self.denied)


def denied_syscalls(deny_inet: bool, deny_listen: bool = False) -> list[str]:
    """The syscalls the filter would restrict on this architecture (for reports), without loading it."""
    prepared = PreparedFilter(deny_inet, deny_listen=deny_listen)
    prepared.release()
    return list(prepared.denied)


def apply_seccomp(deny_inet: bool, allow_udp: bool = False, extra: tuple[str, ...] = (),
                  deny_listen: bool = False) -> list[str]:
    """Build and load the deny filter on the calling thread; return the syscalls it restricts."""
    return PreparedFilter(deny_inet, allow_udp, extra, deny_listen).load()
