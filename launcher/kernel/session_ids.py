"""Where a session's uids and gids come from: what the machine has in use, read for the allocator
(launcher/policy/id_alloc.py), and the ledger of ids handed out, which survives reboots (root, 0700).

`allocate` is called inside the account-file transaction (launcher/kernel/users.py), under lckpwdf: that
lock orders concurrent launchers, so the ledger's read and its append are one step.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import secrets
from collections.abc import Callable, Iterable

from launcher.policy import id_alloc
from pki.vocabulary import STATE_ROOT

LEDGER_DIR = f"{STATE_ROOT}/ids"
LEDGER = f"{LEDGER_DIR}/handed-out"
# Where any user may leave a file that outlives a session (its owner is then an id in use).
WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", "/run/lock")
SYSVIPC = ("/proc/sysvipc/msg", "/proc/sysvipc/sem", "/proc/sysvipc/shm")
DRAWN_FROM = id_alloc.SESSION_IDS  # read at each call: a test may pin the draw (tests/attacks/pinned_ids_launcher.py)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def excluded_spans() -> tuple[id_alloc.Span, ...]:
    """The ranges other allocators own on this machine: login.defs, /etc/subuid, /etc/subgid."""
    return (*id_alloc.login_defs_spans(_read("/etc/login.defs")),
            *id_alloc.subordinate_spans(_read("/etc/subuid")), *id_alloc.subordinate_spans(_read("/etc/subgid")))


STATUS_BYTES = 8192  # /proc/<pid>/status is some 1.5 kB: one read and the one that says end of file


def _status(pid: str) -> str:
    """One process's status, read to its end (a Groups line of thousands of groups is longer than a read) with
    no buffered file object: this runs for every process."""
    fd = os.open(f"/proc/{pid}/status", os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = [os.read(fd, STATUS_BYTES)]
        while chunks[-1]:
            chunks.append(os.read(fd, STATUS_BYTES))
        return b"".join(chunks).decode("ascii", "replace")
    finally:
        os.close(fd)


def _process_ids() -> set[int]:
    ids: set[int] = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):  # a process that ended meanwhile
                ids |= id_alloc.ids_in_status(_status(entry))
    return ids


def _owners_in(directory: str) -> set[int]:
    ids: set[int] = set()
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                ids |= {st.st_uid, st.st_gid}
    return ids


def ids_in_use() -> set[int]:
    """uids and gids held now by a process, a SysV IPC object, or an entry of a world-writable directory."""
    ids = _process_ids()
    for table in SYSVIPC:
        ids |= id_alloc.ids_in_sysvipc(_read(table))
    for directory in WORLD_WRITABLE:
        ids |= _owners_in(directory)
    return ids


def _known_to_nss(candidate: int) -> bool:
    """An account of any NSS source (LDAP, sssd, systemd's) with this id, which the files we read miss."""
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(candidate)
        except KeyError:
            continue
        return True
    return False


def _remember(ledger: str, ids: list[int], handed_out: id_alloc.Ledger) -> None:
    """Append `ids` to the ledger and fsync; once it is twice RECENT_IDS long, rewrite it with the newest."""
    os.makedirs(os.path.dirname(ledger), mode=0o700, exist_ok=True)
    os.chmod(os.path.dirname(ledger), 0o700)
    if id_alloc.needs_trim(handed_out.lines + len(ids)):
        tmp = f"{ledger}.new"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        text = id_alloc.ledger_text([*handed_out.recent(), *ids][-id_alloc.RECENT_IDS:])
    else:
        tmp = ""
        fd = os.open(ledger, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        text = id_alloc.ledger_text(ids)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    if tmp:
        os.rename(tmp, ledger)


def allocate(count: int, taken: Iterable[int], *, ledger: str = LEDGER,
             randbelow: Callable[[int], int] = secrets.randbelow) -> list[int]:
    """`count` fresh ids, none in `taken` (the account files' ids, the avoid set) nor in use nor handed out
    recently; written to the ledger before they are returned. Call it holding lckpwdf."""
    handed_out = id_alloc.read_ledger(_read(ledger))
    refused, in_use = set(taken), ids_in_use()
    spans = id_alloc.free_spans(DRAWN_FROM, excluded_spans())
    ids = id_alloc.pick_ids(count, spans, lambda i: i in refused or i in in_use or handed_out.holds(i)
                            or _known_to_nss(i), randbelow)
    _remember(ledger, ids, handed_out)
    return ids
