"""Collect what dead sessions left: every session whose launcher (pid + start time) is gone is torn down.

The launcher calls `collect()` at every start; `sharness-launch gc` calls it on demand.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from launcher.lifecycle import sweep_lock
from launcher.lifecycle.journal import (
    BUSY,
    JOURNAL_NAME,
    STAGING_PREFIX,
    Journal,
    JournalEntry,
    JournalError,
    RemovalError,
)
from launcher.lifecycle.journal_removers import RemovalRefused, Remover, process_alive, remove_dir
from pki.vocabulary import REMOVABLE_ROOTS, RUN_ROOT, SESSIONS_ROOT, SID_PATTERN, valid_sid

_STAGING = re.compile(rf"^{re.escape(STAGING_PREFIX)}({SID_PATTERN})-([1-9][0-9]*)-([0-9]+)$")


@dataclass(frozen=True)
class GcError:
    sid: str
    kind: str
    name: str
    detail: str

    def __str__(self) -> str:
        return f"session {self.sid}: {self.kind} {self.name}: {self.detail}"


@dataclass(frozen=True)
class GcReport:
    sessions_removed: tuple[str, ...] = ()
    sessions_live: tuple[str, ...] = ()
    removed: tuple[JournalEntry, ...] = ()
    errors: tuple[GcError, ...] = ()
    journalless_skipped: bool = False  # a session was being created: what no journal names was not swept

    @property
    def ok(self) -> bool:
        return not self.errors

    def removed_per_kind(self) -> dict[str, list[str]]:
        """Names removed, grouped by kind, in removal order."""
        per_kind: dict[str, list[str]] = {}
        for entry in self.removed:
            per_kind.setdefault(entry.kind, []).append(entry.name)
        return per_kind

    def to_json(self) -> dict[str, object]:
        return {
            "sessions_removed": list(self.sessions_removed),
            "sessions_live": list(self.sessions_live),
            "removed": self.removed_per_kind(),
            "errors": [dataclasses.asdict(error) for error in self.errors],
            "journalless_skipped": self.journalless_skipped,
        }


@dataclass
class _Tally:
    sessions_removed: list[str] = field(default_factory=list)
    sessions_live: list[str] = field(default_factory=list)
    removed: list[JournalEntry] = field(default_factory=list)
    errors: list[GcError] = field(default_factory=list)
    journalless_skipped: bool = False

    def report(self) -> GcReport:
        return GcReport(tuple(self.sessions_removed), tuple(self.sessions_live), tuple(self.removed),
                        tuple(self.errors), self.journalless_skipped)


def collect(
    root: str = SESSIONS_ROOT,
    *,
    runtime_root: str = RUN_ROOT,
    allowed_roots: Sequence[str] = REMOVABLE_ROOTS,
    removers: Mapping[str, Remover] | None = None,
    wait: bool = True,
    after_listing: Callable[[], None] = lambda: None,
) -> GcReport:
    """Tear down every session under `root` whose launcher is dead; live ones are listed and left alone.

    `wait` off: when a session is being created right now, the journal-less sweep is skipped (said in the
    report) rather than waited for. `after_listing` runs between the journals' listing and the scan (tests)."""
    tally = _Tally()
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        names = []
    for name in names:
        staging = _STAGING.match(name)
        if valid_sid(name):
            _collect_session(os.path.join(root, name), allowed_roots, removers, tally)
        elif staging:
            _collect_staging(os.path.join(root, name), staging, tally)
    _collect_orphan_runtime_dirs(root, runtime_root, tally)
    if os.path.normpath(root) == SESSIONS_ROOT:  # a test's own root must never sweep real sessions
        with sweep_lock.sweeping(root, wait=wait) as held:
            if held:
                _collect_journalless(root, tally, after_listing)
            else:
                tally.journalless_skipped = True
    return tally.report()


def _collect_journalless(root: str, tally: _Tally, after_listing: Callable[[], None]) -> None:
    """Users, groups, netns and cgroups named for a session whose journal is gone entirely (lock held)."""
    from launcher.lifecycle import sweep_orphans

    try:
        listed = os.listdir(root)
    except FileNotFoundError:
        listed = []
    known = {name for name in listed if valid_sid(name)}
    known |= {m.group(1) for m in map(_STAGING.match, listed) if m}
    after_listing()
    orphans = sweep_orphans.scan(known)
    if not orphans.sids():
        return
    failed = sweep_orphans.remove(orphans)
    for kind, name, detail in failed:
        tally.errors.append(GcError("?", kind, name, f"{detail} (named for a session with no journal)"))
    failed_kinds = {kind for kind, _, _ in failed}
    failed_names = {name for _, name, _ in failed}
    for kind, names in (("user", orphans.accounts), ("netns", orphans.netns), ("cgroup", orphans.cgroups)):
        if kind != "user" or kind not in failed_kinds:  # accounts go in one transaction: all or none
            tally.removed += [JournalEntry(kind, name) for name in names if name not in failed_names]
    if not failed:
        tally.sessions_removed += sorted(orphans.sids())


def _collect_session(
    directory: str, allowed_roots: Sequence[str], removers: Mapping[str, Remover] | None, tally: _Tally
) -> None:
    sid = os.path.basename(directory)
    journal = Journal.open(os.path.join(directory, JOURNAL_NAME), allowed_roots=allowed_roots)
    try:
        owner = journal.owner()
    except JournalError as exc:
        tally.errors.append(GcError(sid, "journal", journal.path, f"{exc}; left for a person to look at"))
        return
    if owner is None:
        _collect_ownerless(directory, tally)
        return
    if process_alive(owner):
        tally.sessions_live.append(sid)
        return
    errors: list[RemovalError] = []
    journal.teardown(errors, removers=removers, removed=tally.removed)
    if [(e.kind, e.detail) for e in errors] == [("journal", BUSY)]:
        tally.sessions_live.append(sid)  # another collector (a launcher starting up) is removing it right now
        return
    tally.errors.extend(GcError(sid, e.kind, e.name, e.detail) for e in errors)
    if not errors:
        tally.sessions_removed.append(sid)


def _collect_ownerless(directory: str, tally: _Tally) -> None:
    """A session dir without a journal: its teardown stopped between unlink and rmdir; nothing is recorded."""
    sid = os.path.basename(directory)
    try:
        os.rmdir(directory)
    except FileNotFoundError:
        return
    except OSError as exc:
        detail = f"no journal owner line and not empty ({exc.strerror}); left for a person to look at"
        tally.errors.append(GcError(sid, "journal", directory, detail))
        return
    tally.sessions_removed.append(sid)


def _collect_staging(directory: str, staging: re.Match[str], tally: _Tally) -> None:
    """A journal still being created (or whose creator died before its rename): it recorded nothing yet."""
    sid, pid, start = staging.groups()
    if process_alive(f"{pid}:{start}"):
        return
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(directory, JOURNAL_NAME))
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(directory)
    except OSError as exc:
        tally.errors.append(GcError(sid, "journal", directory, f"{type(exc).__name__}: {exc}"))


def _collect_orphan_runtime_dirs(root: str, runtime_root: str, tally: _Tally) -> None:
    """`<runtime_root>/<sid>/` with no journal: safe, since a session journals its runtime dir first."""
    try:
        names = sorted(os.listdir(runtime_root))
    except FileNotFoundError:
        return
    staged = set()
    with contextlib.suppress(FileNotFoundError):
        staged = {m.group(1) for m in map(_STAGING.match, os.listdir(root)) if m}
    for sid in names:
        path = os.path.join(runtime_root, sid)
        if not valid_sid(sid) or sid in staged or os.path.lexists(os.path.join(root, sid)):
            continue
        try:
            remove_dir(path, (runtime_root,), (root,))
        except (OSError, RemovalRefused) as exc:
            tally.errors.append(GcError(sid, "dir", path, f"{type(exc).__name__}: {exc}"))
            continue
        tally.removed.append(JournalEntry("dir", path))
