"""Confine a freshly forked child (still root) into one component, in the order DESIGN.md step 7 gives.

The seccomp filter is built first (once Landlock is on, libseccomp may no longer be readable); then
setsid → parent-death signal → netns → its own IPC namespace → cgroup → private root (kernel/mountns.py) →
rlimits → groups/gid/uid → parent-death signal again (setuid clears it) → no_new_privs, not dumpable →
Landlock → load seccomp → close every fd outside the contract → clean environment → cwd. netns, cgroup,
private root and Landlock are skipped when the spec has none; the IPC namespace never is. A pid namespace
cannot be entered here: its init is born in it (kernel/pidns.py), and step `pidns` names that init's failures.
"""

from __future__ import annotations

import errno
import fcntl
import os
import resource
import select
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from launcher.kernel import landlock, mountns, seccomp
from launcher.kernel._sys import libc
from launcher.kernel.cgroups import CgroupHandle
from launcher.kernel.landlock import LandlockRules
from pki.vocabulary import EXIT_CONFINEMENT_FAILED, EXIT_PARENT_GONE, EXIT_STEP_BASE

T = TypeVar("T")
# Step names in exit-code order (EXIT_STEP_BASE + index), not the order apply_confinement runs them in.
# EXIT_PARENT_GONE: the launcher died between fork and the parent-death signal, so the child did nothing.
STEPS = (
    "setsid", "pdeathsig", "netns", "cgroup", "rlimits", "ids", "no_new_privs", "landlock", "seccomp",
    "close_fds", "environ", "cwd", "mounts", "ipc", "pidns",
)
CLONE_NEWIPC = 0x08000000


class ConfinementError(RuntimeError):
    """One confinement step failed; the child must not run the component's code."""

    def __init__(self, step: str, detail: str) -> None:
        super().__init__(f"confinement step {step!r} failed: {detail}")
        self.step = step
        self.detail = detail

    @property
    def exit_code(self) -> int:
        return EXIT_STEP_BASE + STEPS.index(self.step) if self.step in STEPS else EXIT_CONFINEMENT_FAILED


def step_of_exit_code(code: int) -> str | None:
    """The confinement step a child's exit code names, or None when it is not a confinement failure."""
    if code == EXIT_PARENT_GONE:
        return "parent_gone"
    index = code - EXIT_STEP_BASE
    return STEPS[index] if 0 <= index < len(STEPS) else None


@dataclass(frozen=True)
class ConfinementSpec:
    """Everything one component's child needs to confine itself; holds no secret."""

    uid: int
    gid: int
    groups: tuple[int, ...]
    netns_fd: int | None
    cgroup: CgroupHandle | None
    rlimits: Mapping[int, tuple[int, int]]  # resource.RLIMIT_* → (soft, hard); RLIMIT_CORE is always 0
    landlock: LandlockRules | None
    landlock_abi: int
    seccomp_deny_inet: bool
    keep_fds: tuple[int, ...]  # 0, 1 and 2 are always kept
    env: Mapping[str, str]
    cwd: str
    parent_pid: int | None = None  # the launcher's pid taken before fork; None: orphaned means ppid 1
    # A pidfd of the launcher, for a child that is the init of its own pid namespace (its getppid() is 0
    # whether the launcher lives or not): readable means the launcher is gone. Replaces parent_pid.
    parent_pidfd: int | None = None
    seccomp_allow_udp: bool = False  # the egress doors' resolvers need UDP (raw and ICMP stay refused)
    seccomp_extra: tuple[str, ...] = ()  # further syscalls denied outright (the fs door's metadata calls)
    # A private root holding only these binds (and a hidepid proc); None: the host's mounts (kernel/mountns.py).
    mount_keep: tuple[mountns.Bind, ...] | None = None
    scratch: mountns.ScratchMount | None = None  # HOME and TMPDIR on a tmpfs of its own, in that private root
    devpts: bool = False  # a devpts instance of its own in that private root (the shell door's ttys)
    workspace_mount: mountns.FuseAttach | None = None  # the fs door's FUSE mount of the workspace (the app's)
    overlay: mountns.OverlayMount | None = None  # the shell's overlay of the workspace, in that private root

    def __post_init__(self) -> None:
        if self.uid == 0 or self.gid == 0 or 0 in self.groups:
            raise ConfinementError("ids", "a component never runs with uid, gid or a group 0")


def _step(step: str, fn: Callable[..., T], *args: object) -> T:
    try:
        return fn(*args)
    except ConfinementError:
        raise
    except (OSError, RuntimeError, ValueError) as exc:
        raise ConfinementError(step, str(exc)) from exc


def arm_parent_death_signal(parent_pid: int | None, parent_pidfd: int | None = None) -> None:
    """PR_SET_PDEATHSIG(SIGKILL), then exit EXIT_PARENT_GONE if the launcher died before it took."""
    libc.prctl(libc.PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent_pidfd is not None:
        gone = bool(select.select([parent_pidfd], [], [], 0)[0])
    else:
        ppid = os.getppid()
        gone = (parent_pid is not None and ppid != parent_pid) or (parent_pid is None and ppid == 1)
    if gone:
        os._exit(EXIT_PARENT_GONE)


def _setns(fd: int) -> None:
    try:
        libc.setns(fd, libc.CLONE_NEWNET)
    except OSError as exc:
        hint = ""
        if exc.errno == errno.EINVAL:
            hint = " (not a network namespace: was the fd overwritten, e.g. by place_fds?)"
        raise ConfinementError("netns", f"setns(fd {fd}): {exc.strerror}{hint}") from exc


def _own_ipc_namespace() -> None:
    # Unnamed on purpose: nothing outside holds it (no bind mount, no fd), so it dies with the component's
    # last process, and every SysV segment, queue and semaphore set and POSIX queue in it with it.
    libc.unshare(CLONE_NEWIPC)


def _seccomp_filter(spec: ConfinementSpec) -> seccomp.PreparedFilter:
    tcp_bind = spec.landlock.tcp_bind if spec.landlock is not None else ()
    deny_listen = seccomp.listen_denied(spec.seccomp_deny_inet, tcp_bind)
    return seccomp.PreparedFilter(spec.seccomp_deny_inet, spec.seccomp_allow_udp, spec.seccomp_extra, deny_listen)


def _rlimits(rlimits: Mapping[int, tuple[int, int]]) -> None:
    for res, (soft, hard) in rlimits.items():
        resource.setrlimit(res, (soft, hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _ids(uid: int, gid: int, groups: tuple[int, ...]) -> None:
    os.setgroups(list(groups))
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise ConfinementError("ids", f"ids did not take: uid {os.getresuid()} gid {os.getresgid()}")
    if sorted(os.getgroups()) != sorted(set(groups)):
        raise ConfinementError("ids", f"groups did not take: {os.getgroups()}")


def _no_new_privs() -> None:
    libc.prctl(libc.PR_SET_NO_NEW_PRIVS, 1)
    # Not dumpable: a process of the same uid cannot open our /proc/<pid>/mem or environ (reset by execve).
    libc.prctl(libc.PR_SET_DUMPABLE, 0)


def close_fds_except(keep: tuple[int, ...]) -> None:
    """Close every fd but 0, 1, 2 and `keep`, with close_range over the gaps."""
    kept = sorted({0, 1, 2, *keep})
    for low, high in zip(kept, [*kept[1:], None], strict=True):
        if high is None:
            libc.close_range(low + 1, 0xFFFFFFFF)
        elif high > low + 1:
            libc.close_range(low + 1, high - 1)


def _environ(env: Mapping[str, str]) -> None:
    os.environ.clear()
    os.environ.update(env)


def apply_confinement(spec: ConfinementSpec) -> None:
    """Run every confinement step in order in this (forked, root, single-threaded) child."""
    try:  # built first: once Landlock is on, libseccomp may no longer be readable
        prepared = _seccomp_filter(spec)
    except (OSError, RuntimeError) as exc:
        raise ConfinementError("seccomp", str(exc)) from exc
    _step("setsid", os.setsid)
    _step("pdeathsig", arm_parent_death_signal, spec.parent_pid, spec.parent_pidfd)
    if spec.netns_fd is not None:
        _step("netns", _setns, spec.netns_fd)
    _step("ipc", _own_ipc_namespace)
    if spec.cgroup is not None:
        _step("cgroup", spec.cgroup.join, 0)
    # The fds each kept path was bound from: Landlock grants the same files, then they are closed.
    bound: dict[str, int] = {}
    if spec.mount_keep is not None:
        bound = _step("mounts", mountns.enter_private_root, spec.mount_keep, mountns.PROC_OPTIONS, spec.scratch,
                      spec.devpts, spec.workspace_mount, spec.overlay)
    _step("rlimits", _rlimits, spec.rlimits)
    _step("ids", _ids, spec.uid, spec.gid, spec.groups)
    # Changing the euid clears the parent-death signal (commit_creds): arm it again, and re-check.
    _step("pdeathsig", arm_parent_death_signal, spec.parent_pid, spec.parent_pidfd)
    _step("no_new_privs", _no_new_privs)
    if spec.landlock is not None:
        _step("landlock", landlock.apply_landlock, spec.landlock, spec.landlock_abi, bound)
    for fd in bound.values():
        os.close(fd)
    _step("seccomp", prepared.load)
    _step("close_fds", close_fds_except, spec.keep_fds)
    _step("environ", _environ, spec.env)
    _step("cwd", os.chdir, spec.cwd)


def place_fds(mapping: Mapping[int, int]) -> None:
    """Put each source fd at its target number ({target: source}), inheritable, without clobbering.

    Every source is first duplicated above all the numbers involved, so a source sitting on another
    target is never overwritten before it is copied. Sources are left open (close them, or let
    close_fds_except do it).
    """
    if not mapping:
        return
    floor = max(*mapping.keys(), *mapping.values()) + 1
    temps = {target: fcntl.fcntl(source, fcntl.F_DUPFD_CLOEXEC, floor) for target, source in mapping.items()}
    try:
        for target, temp in temps.items():
            os.dup2(temp, target, inheritable=True)
    finally:
        for temp in temps.values():
            os.close(temp)
