"""Landlock: a pure rules record (checked: a writable path is never executable) and its enforcement.

The paths are strings here; the launcher also compares them by what they resolve to before the session
(launcher/lifecycle/preflight_paths.py), and grants through the very fds the private root was bound from.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from collections.abc import Mapping
from dataclasses import dataclass

from launcher.kernel._sys import libc

# Filesystem access rights (uapi/linux/landlock.h) and the ABI that introduced each.
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2
MAX_KNOWN_ABI = 7

_FS_BY_ABI = {1: (1 << 13) - 1, 2: FS_REFER, 3: FS_TRUNCATE, 5: FS_IOCTL_DEV}
# Rights that may be attached to a rule on a non-directory; others make landlock_add_rule fail with EINVAL.
FS_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
READ_RIGHTS = FS_READ_FILE | FS_READ_DIR
WRITE_RIGHTS = (
    READ_RIGHTS | FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_DIR | FS_MAKE_REG | FS_MAKE_SOCK
    | FS_MAKE_FIFO | FS_MAKE_SYM | FS_REFER | FS_TRUNCATE | FS_IOCTL_DEV
)
EXEC_RIGHTS = READ_RIGHTS | FS_EXECUTE  # the loader must read what it maps


class LandlockError(RuntimeError):
    """Rules that cannot be enforced as given: the message names the path or the right."""


def _norm(path: str) -> str:
    if not os.path.isabs(path):
        raise LandlockError(f"Landlock path {path!r} is not absolute")
    return os.path.normpath(path)


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


@dataclass(frozen=True)
class LandlockRules:
    """What one component may touch: fs paths by right, TCP ports, and IPC scoping."""

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    exec: tuple[str, ...] = ()
    tcp_bind: tuple[int, ...] = ()
    tcp_connect: tuple[int, ...] = ()
    scope_signals: bool = True
    scope_abstract_unix: bool = True
    # Paths granted only where they exist (system files some distributions lack); any other missing path fails.
    if_present: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for kind in ("read", "write", "exec", "if_present"):
            object.__setattr__(self, kind, tuple(_norm(p) for p in getattr(self, kind)))
        for port in (*self.tcp_bind, *self.tcp_connect):
            if not 0 <= port <= 65535:
                raise LandlockError(f"TCP port {port} is out of range")
        for w in self.write:
            for x in self.exec:
                if _overlaps(w, x):
                    raise LandlockError(
                        f"write path {w} overlaps exec path {x}: a writable path is never executable; "
                        "take one of them out of the role's files"
                    )


@dataclass(frozen=True)
class RulesetPlan:
    """The syscall-level shape of a LandlockRules at one ABI (pure)."""

    handled_fs: int
    handled_net: int
    scoped: int
    paths: tuple[tuple[str, int], ...]
    ports: tuple[tuple[int, int], ...]


def handled_fs_rights(abi: int) -> int:
    """Every fs right ABI `abi` knows: all are handled, so whatever is not granted is denied."""
    return sum(bits for since, bits in _FS_BY_ABI.items() if abi >= since)


def plan_ruleset(rules: LandlockRules, abi: int) -> RulesetPlan:
    """Translate rules into handled masks and per-path, per-port grants for ABI `abi` (pure)."""
    if abi < 1:
        raise LandlockError("Landlock is absent on this kernel (ABI 0): nothing can enforce these rules")
    abi = min(abi, MAX_KNOWN_ABI)
    fs = handled_fs_rights(abi)
    paths = [(p, READ_RIGHTS & fs) for p in rules.read]
    paths += [(p, WRITE_RIGHTS & fs) for p in rules.write]
    paths += [(p, EXEC_RIGHTS & fs) for p in rules.exec]
    net, ports = 0, []
    if abi >= 4:
        net = NET_BIND_TCP | NET_CONNECT_TCP
        ports = [(NET_BIND_TCP, p) for p in rules.tcp_bind]
        ports += [(NET_CONNECT_TCP, p) for p in rules.tcp_connect]
    scoped = 0
    if abi >= 6:
        scoped = (SCOPE_SIGNAL if rules.scope_signals else 0) | (
            SCOPE_ABSTRACT_UNIX_SOCKET if rules.scope_abstract_unix else 0
        )
    return RulesetPlan(fs, net, scoped, tuple(paths), tuple(ports))


def unheld(rules: LandlockRules, abi: int) -> tuple[str, ...]:
    """What these rules ask that ABI `abi` cannot hold (for --best-effort reports) (pure)."""
    checks = (
        (1, "filesystem", True),
        (2, "refer (cross-directory link/rename)", True),
        (3, "truncate", True),
        (4, "tcp ports", True),
        (5, "device ioctl", True),
        (6, "ipc scoping", rules.scope_signals or rules.scope_abstract_unix),
    )
    return tuple(name for since, name, asked in checks if asked and abi < since)


def _ruleset_attr(plan: RulesetPlan, abi: int) -> bytes:
    if abi >= 6:
        return struct.pack("=QQQ", plan.handled_fs, plan.handled_net, plan.scoped)
    if abi >= 4:
        return struct.pack("=QQ", plan.handled_fs, plan.handled_net)
    return struct.pack("=Q", plan.handled_fs)


def _open_rule_path(path: str, optional: bool) -> int | None:
    try:
        # Never through a magic link: /proc/self/root or /proc/<pid>/fd/N would grant whatever it points at.
        return libc.openat2(libc.AT_FDCWD, path, os.O_PATH, libc.RESOLVE_NO_MAGICLINKS)
    except OSError as exc:
        if exc.errno == errno.ENOENT and optional:
            return None
        if exc.errno == errno.ELOOP:
            raise LandlockError(f"Landlock path {path} passes a magic link (/proc/<pid>/root, fd/…) or a symlink "
                                "loop: never granted") from exc
        raise LandlockError(f"Landlock path {path} cannot be opened: {os.strerror(exc.errno or 0)}") from exc


def _add_path(ruleset_fd: int, path: str, access: int, fd: int) -> None:
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= FS_FILE_RIGHTS
        # struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd.
        libc.landlock_add_rule(ruleset_fd, RULE_PATH_BENEATH, struct.pack("=Qi", access, fd))
    except OSError as exc:
        raise LandlockError(f"Landlock rule for {path} refused by the kernel: {exc.strerror}") from exc


def _add_paths(ruleset_fd: int, rules: LandlockRules, plan: RulesetPlan, opened: Mapping[str, int]) -> None:
    for path, access in plan.paths:
        fd = opened.get(path)
        if fd is not None:
            _add_path(ruleset_fd, path, access, fd)
            continue
        fd = _open_rule_path(path, optional=path in rules.if_present)
        if fd is None:
            continue
        try:
            _add_path(ruleset_fd, path, access, fd)
        finally:
            os.close(fd)


def apply_landlock(rules: LandlockRules, abi: int, opened: Mapping[str, int] | None = None) -> None:
    """Enforce rules on the calling thread (and what it forks/execs) with ABI min(abi, 7).

    `opened`: O_PATH fds of paths already resolved (the private root's binds), granted as they are; other
    paths are opened here, never through a magic link. Needs no_new_privs (or CAP_SYS_ADMIN). Raises
    LandlockError when anything cannot be enforced.
    """
    plan = plan_ruleset(rules, abi)
    abi = min(abi, MAX_KNOWN_ABI)
    try:
        ruleset_fd = libc.landlock_create_ruleset(_ruleset_attr(plan, abi), 0)
    except OSError as exc:
        raise LandlockError(f"landlock_create_ruleset refused: {exc.strerror}") from exc
    try:
        _add_paths(ruleset_fd, rules, plan, opened or {})
        for access, port in plan.ports:
            libc.landlock_add_rule(ruleset_fd, RULE_NET_PORT, struct.pack("=QQ", access, port))
        libc.landlock_restrict_self(ruleset_fd)
    except OSError as exc:
        raise LandlockError(f"Landlock enforcement failed: {exc.strerror}") from exc
    finally:
        os.close(ruleset_fd)
