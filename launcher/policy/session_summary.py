"""A session told from its audit log: what the app had the doors do, and what they refused, by whom. Pure.

Read from the log the launcher wrote and verified, never from the app's own account, so an agent cannot make
its summary say what it did not do. Each door's event becomes one line; the HTTP request lines that repeat a
door's decision are left out.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

_SIZED_OPS = frozenset({"write", "append"})  # a read's event is written when it opens: its size is not known
_SKIPPED_KINDS = frozenset({"http.request", "model.open", "shell.run"})  # repeated by the event that ends it


@dataclass(frozen=True)
class Act:
    """One thing a door did or refused for a client."""

    door: str
    what: str
    row: str = ""  # the manifest row that refused it (doors.<door>.<row>), when refused

    def as_dict(self) -> dict[str, str]:
        return {"door": self.door, "what": self.what, **({"row": self.row} if self.row else {})}


@dataclass
class SessionSummary:
    did: list[Act] = field(default_factory=list)
    refused: list[Act] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"did": [act.as_dict() for act in self.did], "refused": [act.as_dict() for act in self.refused]}


def manifest_row(door: str, row: str) -> str:
    """The row as a person finds it in the manifest: `doors.fs.read_only` for the fs door's `read_only`."""
    return row if row.startswith("doors.") or not row else f"doors.{door}.{row}"


def _command(argv: object) -> str:
    if not isinstance(argv, list) or not argv:
        return "a script"
    return " ".join([os.path.basename(str(argv[0])), *(str(arg) for arg in argv[1:])])


def _shell(event: Mapping[str, Any], commands: Mapping[str, str]) -> str:
    command = commands.get(str(event.get("id")), "a command")
    if event.get("timed_out"):
        return f"ran {command}: timed out"
    if event.get("signal") is not None:
        return f"ran {command}: killed by signal {event['signal']}"
    return f"ran {command}: exit {event.get('exit_code')}"


def _described(event: Mapping[str, Any], commands: Mapping[str, str]) -> str:
    kind, door = str(event.get("kind", "")), str(event.get("door", ""))
    if kind == "shell.exit":
        return _shell(event, commands)
    if kind == "model.call":
        return f"answered a call to {event.get('model')}: {event.get('charged_microusd', 0)} micro-USD"
    if kind == "net.request":
        return f"{event.get('method')} {event.get('requested')}"
    if door == "fs" or "op" in event:
        notes = [f"{event['bytes']} bytes"] if event.get("op") in _SIZED_OPS and event.get("decision") == "allow" \
            and "bytes" in event else []
        notes += ["through the mount"] if event.get("via") == "mount" else []
        return f"{event.get('op')} {event.get('path')}" + (f" ({', '.join(notes)})" if notes else "")
    return kind or "an event"


def _refused(event: Mapping[str, Any]) -> bool:
    return event.get("decision") == "refuse" or event.get("ended") == "refused"


def summarize(events: Iterable[Mapping[str, Any]]) -> SessionSummary:
    """Every door event of a session's log, in order, as what was done and what was refused."""
    summary = SessionSummary()
    commands: dict[str, str] = {}
    for event in events:
        if event.get("event") != "door.event":
            continue
        kind, door = str(event.get("kind", "")), str(event.get("door", event.get("role", "")))
        if kind == "shell.run":
            commands[str(event.get("id"))] = _command(event.get("argv"))
        if kind in _SKIPPED_KINDS or event.get("op") == "sweep":
            continue
        act = Act(door, _described(event, commands))
        if _refused(event):
            summary.refused.append(Act(door, act.what, manifest_row(door, str(event.get("row") or ""))))
        else:
            summary.did.append(act)
    return summary


def render_summary(summary: SessionSummary) -> list[str]:
    """The summary as lines for a person."""
    lines = [f"what the app did (from the audit log, {len(summary.did)} acts):"]
    lines += [f"  {act.door:<6} {act.what}" for act in summary.did] or ["  nothing through a door"]
    lines.append(f"what was refused ({len(summary.refused)}):")
    width = max((len(act.what) for act in summary.refused), default=0)
    lines += [f"  {act.door:<6} {act.what:<{width}}  refused by the {act.door} door, row {act.row or '?'}"
              for act in summary.refused] or ["  nothing"]
    return lines
