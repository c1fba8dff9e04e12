"""Apply the overlay's change list through the fs door (edge shell→fs): every fs row judges every path.

Each change is one or a few fs requests; the answer per path is `applied`, `unchanged` (the workspace already
is so: a directory that exists, a deletion of what is gone) or `refused` with the refusal's row, who refused
(`fs` with its own row, or `shell` for what the fs door cannot take: a symlink, a special file, a file over
the door's read cap) and its detail and hint. What was applied (or unchanged) is recorded in the ledger with
the stamp it had, so it leaves the next change list until it changes again; what was refused stays. A file
applied before is written again with If-Match on the etag the fs door gave it then: if the app changed it
through the fs door since, the fs door refuses (409 `version`) rather than lose that change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from doors._refusal import Refusal
from doors.shell._changes import Change, Stamp, UpperEntry, applied_stamp

WHO = "shell"
ROW = "shell.apply"
Reader = Callable[[UpperEntry], bytes | None]


@dataclass(frozen=True)
class FsAnswer:
    """One answer of the fs door: its status and JSON body (the error shape when it refused)."""

    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def refusal(self) -> Refusal:
        shape = self.body if isinstance(self.body, dict) else {}
        return Refusal(self.status, str(shape.get("error", "http")), str(shape.get("who", "fs")),
                       shape.get("detail", ""), str(shape.get("hint", "")))

    def row(self) -> str:
        return self.refusal().row


@dataclass
class Ledger:
    """What was applied: each path's stamp (it leaves the change list while the stamp holds) and each written
    file's etag from the fs door (the If-Match of its next write)."""

    stamps: dict[str, Stamp] = field(default_factory=dict)
    etags: dict[str, str] = field(default_factory=dict)

    def record(self, change: Change, outcome: dict[str, Any]) -> None:
        """Note one change's outcome: an applied or unchanged path's stamp and etag; a refused one not."""
        if outcome["status"] == "refused":
            return
        self.stamps[change.path] = applied_stamp(change.entry)
        etag = outcome.get("etag")
        if isinstance(etag, str):
            self.etags[change.path] = etag
        else:
            self.etags.pop(change.path, None)


class FsCalls(Protocol):
    """The fs door's write API as the applier uses it (doors/shell/_fs_calls.py over the mTLS client), and how
    many requests it takes at once."""

    @property
    def concurrency(self) -> int: ...

    async def write(self, path: str, data: bytes, executable: bool, if_match: str | None = None) -> FsAnswer: ...
    async def mkdir(self, path: str) -> FsAnswer: ...
    async def delete(self, path: str) -> FsAnswer: ...
    async def listing(self, path: str) -> FsAnswer: ...
    async def stat(self, path: str) -> FsAnswer: ...


def _applied(change: Change, status: str = "applied") -> dict[str, Any]:
    return {"path": change.path, "op": change.op, "status": status}


def _refused(change: Change, refusal: Refusal) -> dict[str, Any]:
    return {"path": change.path, "op": change.op, "status": "refused", "row": refusal.row, "who": refusal.who,
            "detail": refusal.detail, "hint": refusal.hint}


def _shell_refusal(detail: str, hint: str) -> Refusal:
    return Refusal(403, ROW, WHO, detail, hint)


def _join(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


async def remove_tree(fs: FsCalls, path: str) -> Refusal | None:
    """Delete `path` and everything beneath it that the fs door lets this client see; the first refusal."""
    answer = await fs.delete(path)
    if answer.ok or answer.status == 404:
        return None
    if answer.row() != "not_empty":
        return answer.refusal()
    listed = await fs.listing(path)
    if not listed.ok:
        return listed.refusal()
    for item in listed.body.get("entries", []):
        child = _join(path, str(item["name"]))
        refusal = await remove_tree(fs, child) if item.get("kind") == "dir" else None
        if item.get("kind") != "dir":
            deleted = await fs.delete(child)
            refusal = None if deleted.ok or deleted.status == 404 else deleted.refusal()
        if refusal is not None:
            return refusal
    answer = await fs.delete(path)
    return None if answer.ok or answer.status == 404 else answer.refusal()


async def _write(fs: FsCalls, change: Change, read: Reader, max_bytes: int, if_match: str | None) -> dict[str, Any]:
    try:
        data = read(change.entry)
    except OSError as exc:
        return _refused(change, _shell_refusal(f"the door cannot read it in the upper layer: {exc.strerror}",
                                               "run apply again once the command that writes it has ended"))
    if data is None:
        return _refused(change, _shell_refusal(f"it holds more than {max_bytes} bytes, the most one apply sends",
                                               "keep build outputs this large out of the workspace"))
    answer = await fs.write(change.path, data, change.executable, if_match)
    if answer.row() == "not_a_file":  # a directory in the workspace became a file in the overlay
        refusal = await remove_tree(fs, change.path)
        if refusal is not None:
            return _refused(change, refusal)
        answer = await fs.write(change.path, data, change.executable)
    if not answer.ok:
        return _refused(change, answer.refusal())
    etag = answer.body.get("etag") if isinstance(answer.body, dict) else None
    return {**_applied(change), **({"etag": etag} if isinstance(etag, str) else {})}


async def _mkdir(fs: FsCalls, change: Change) -> dict[str, Any]:
    answer = await fs.mkdir(change.path)
    if answer.ok:
        return _applied(change, "applied" if answer.status == 201 or answer.body.get("created") else "unchanged")
    present = await fs.stat(change.path)  # a refused mkdir of a directory that is there already changes nothing
    if present.ok and present.body.get("kind") == "dir":
        return _applied(change, "unchanged")
    return _refused(change, answer.refusal())


async def _replace_dir(fs: FsCalls, change: Change) -> dict[str, Any]:
    """An opaque directory: whatever the workspace has at its path that the upper layer does not, goes."""
    listed = await fs.listing(change.path)
    refusal: Refusal | None = None
    gone: list[str] = []
    if listed.row() == "not_a_directory":
        gone.append(change.path)
    elif listed.ok:
        keep = set(change.entry.keep)
        gone += [_join(change.path, str(item["name"])) for item in listed.body.get("entries", [])
                 if str(item["name"]) not in keep]
    elif listed.status != 404:
        refusal = listed.refusal()
    for path in gone:
        refusal = refusal or await remove_tree(fs, path)
    if refusal is not None:
        return _refused(change, refusal)
    made = await _mkdir(fs, change)
    return {**made, "status": "applied"} if gone and made["status"] == "unchanged" else made


async def _delete(fs: FsCalls, change: Change) -> dict[str, Any]:
    answer = await fs.delete(change.path)
    if answer.ok:
        return _applied(change)
    if answer.status == 404:
        return _applied(change, "unchanged")
    refusal = await remove_tree(fs, change.path) if answer.row() == "not_empty" else answer.refusal()
    return _applied(change) if refusal is None else _refused(change, refusal)


async def apply_one(fs: FsCalls, change: Change, read: Reader, max_bytes: int,
                    if_match: str | None = None) -> dict[str, Any]:
    """Apply one change through the fs door (a write with If-Match `if_match`); its outcome for the answer."""
    if change.op == "refuse":
        return _refused(change, _shell_refusal(change.reason, "remove it from the overlay, or make it through the "
                                               "fs door another way"))
    if change.op == "write":
        return await _write(fs, change, read, max_bytes, if_match)
    if change.op == "mkdir":
        return await _mkdir(fs, change)
    if change.op == "replace_dir":
        return await _replace_dir(fs, change)
    return await _delete(fs, change)


def _batches(changes: tuple[Change, ...]) -> list[tuple[Change, ...]]:
    """The changes in order, a run of consecutive writes as one batch (each other change alone): writes of
    distinct paths whose directories come before them in the list, so they may go at once."""
    batches: list[tuple[Change, ...]] = []
    for change in changes:
        if change.op == "write" and batches and batches[-1][0].op == "write":
            batches[-1] = (*batches[-1], change)
        else:
            batches.append((change,))
    return batches


async def apply_changes(fs: FsCalls, changes: tuple[Change, ...], read: Reader, max_bytes: int,
                        ledger: Ledger) -> list[dict[str, Any]]:
    """Apply every change in order (a run of writes up to `fs.concurrency` at once); record what was applied
    (or unchanged) in `ledger`; the outcomes, in the list's order."""
    outcomes: list[dict[str, Any]] = []
    slots = trio.Semaphore(max(1, fs.concurrency))

    async def one(change: Change, index: int) -> None:
        async with slots:
            outcomes[index] = await apply_one(fs, change, read, max_bytes, ledger.etags.get(change.path))

    for batch in _batches(changes):
        start = len(outcomes)
        outcomes += [{}] * len(batch)
        async with trio.open_nursery() as nursery:
            for offset, change in enumerate(batch):
                nursery.start_soon(one, change, start + offset)
    for change, outcome in zip(changes, outcomes, strict=True):
        ledger.record(change, outcome)
    return outcomes


def summary(outcomes: list[dict[str, Any]]) -> dict[str, int]:
    """How many paths were applied, unchanged and refused."""
    counts = {"applied": 0, "unchanged": 0, "refused": 0}
    for outcome in outcomes:
        counts[outcome["status"]] += 1
    return counts
