"""The shell door's overlay mode: where its upper layer is, and `apply` (one chokepoint: read, decide, audit, act).

`POST /v0/shell/apply` (and `apply: true` on run, after the command) reads the upper layer, turns it into the
ordered change list (doors/shell/_changes.py), audits one `shell.apply` event, then applies each change
through the fs door (doors/shell/_apply.py). Applies are one at a time (a lock): two would race on the ledger.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import trio

from doors._refusal import DoorRefused
from doors.shell._apply import FsCalls, Ledger, apply_changes, summary
from doors.shell._changes import change_list
from doors.shell._refusals import refuse
from doors.shell._upper import read_entries, read_file

_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")  # mountinfo writes space, tab, newline, backslash as \040 ...
# One file's bytes are held in memory while the fs door takes them, up to APPLY_CONNECTIONS files at once, in the
# shell's memory limit (the fs door's own max_file_bytes defaults to 10 MiB).
MAX_APPLY_FILE_BYTES = 16 * 1024 * 1024
Audit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class OverlayPlaces:
    """What the launcher told the door of its overlay: the upper layer's path and the fs door's socket."""

    upper: str
    fs_socket: str

    @classmethod
    def from_rows(cls, rows: Mapping[str, Any]) -> OverlayPlaces | None:
        """The overlay's places in mode "overlay" (both rows must be there), else None."""
        if rows.get("workspace") != "overlay":
            return None
        return cls(str(rows["overlay_upper"]), str(rows["fs_socket"]))


@dataclass
class Applier:
    """Applies the upper layer at `upper` through `fs`; remembers what it applied (the ledger)."""

    upper: str
    fs: FsCalls
    audit: Audit
    max_file_bytes: int = MAX_APPLY_FILE_BYTES
    ledger: Ledger = field(default_factory=Ledger)
    _lock: trio.Lock = field(default_factory=trio.Lock)

    async def apply(self, by: str, command_id: str | None = None) -> dict[str, Any]:
        """Apply every change not applied yet; the answer: per path its outcome, and the counts."""
        async with self._lock:
            root = os.open(self.upper, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                try:
                    changes = change_list(read_entries(root), self.ledger.stamps)
                except OSError as exc:
                    raise refuse(503, "shell.apply", f"the upper layer cannot be read: {exc.strerror}",
                                 "retry; report this if it persists") from None
                ops = Counter(change.op for change in changes)
                self.audit({"door": "shell", "kind": "shell.apply", "changes": len(changes), "ops": dict(ops),
                            "by": by, **({"id": command_id} if command_id else {})})
                outcomes = await apply_changes(self.fs, changes, lambda entry: read_file(root, entry,
                                               self.max_file_bytes), self.max_file_bytes, self.ledger)
            finally:
                os.close(root)
        return {"paths": outcomes, **summary(outcomes)}


def overlay_problem(mountinfo: str, workspace: str, upper: str) -> str | None:
    """Why the mounts (/proc/self/mountinfo's text) are not the overlay the manifest asks for, or None: the
    topmost mount at `workspace` must be an overlay, noexec; the one at `upper` read-only. Pure."""
    top: dict[str, tuple[str, set[str]]] = {}
    for line in mountinfo.splitlines():
        fields = line.split()
        if "-" in fields and len(fields) > 5:
            point = _OCTAL_ESCAPE.sub(lambda match: chr(int(match.group(1), 8)), fields[4])
            top[point] = (fields[fields.index("-") + 1], set(fields[5].split(",")))
    fstype, flags = top.get(workspace, ("", set()))
    if fstype != "overlay" or "noexec" not in flags:
        return f"the workspace {workspace} is not a noexec overlay here ({fstype or 'no mount'})"
    if "ro" not in top.get(upper, ("", set()))[1]:
        return f"the upper layer is not shown read-only at {upper}"
    return None


def check_overlay(places: OverlayPlaces, workspace: str) -> None:
    """Fail closed at start: no door runs commands in overlay mode without the overlay the launcher mounts."""
    with open("/proc/self/mountinfo") as mounts:
        problem = overlay_problem(mounts.read(), workspace, places.upper)
    if problem is not None:
        raise RuntimeError(f"overlay mode: {problem}; no command would be confined as the manifest says")


def no_overlay() -> DoorRefused:
    """The refusal of apply in a mode without an overlay."""
    return refuse(409, "shell.workspace", "this session's shell has no overlay: there is nothing to apply",
                  "set doors.shell.workspace to \"overlay\" (with the edge shell→fs)")
