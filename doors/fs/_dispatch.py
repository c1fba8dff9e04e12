"""The one chokepoint: every fs operation is decided, audited, and only then acted on.

`Dispatcher.conclude` is the only place an allowed operation touches the workspace: it takes the facts
gathered for a call, asks the pure core for the verdict (reserving quota atomically), queues the audit
event, and runs the act only once the event is queued (a full queue: 503 `audit_backpressure`, nothing
done). Refusals found earlier (bad path, names, declared size, the kernel refusing to resolve) go through
`Dispatcher.refused`, which reports the same event (a refusal is no act: its event is reported, or counted
as lost when even that cannot be queued).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from doors._audit_queue import AuditBackpressure
from doors._http import Response, error_response
from doors._refusal import DoorRefused, Refusal
from doors.fs._decide import decide, decide_arriving, decide_upload_slot
from doors.fs._ops import kernel_refusal
from doors.fs._paths import WHO, WorkspacePath
from doors.fs._rules import Facts, FsRows, Op, Usage
from doors.fs._secrets import RecentWrites

log = logging.getLogger(__name__)

Audit = Callable[[dict[str, Any]], None]
T = TypeVar("T")
MAX_AUDIT_PATH = 512
OP_NAMES = {op: op.value for op in Op}  # Enum's `value` is a descriptor call: read once per op, not per event


@dataclass(frozen=True)
class Call:
    """One operation as the dispatch sees it (never the content)."""

    op: Op
    path: WorkspacePath
    role: str = "app"
    dest: WorkspacePath | None = None
    want_exec: bool = False


class UsageMeter:
    """The session's bytes and files, with reservations for requests in flight, and each client's uploads
    in flight. Thread-safe: bodies arrive in the trio thread, decisions are taken in worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.usage = Usage()
        self._uploads: dict[str, int] = {}

    def decide_and_reserve(
        self, rows: FsRows, call: Call, facts: Facts, upload: Upload | None = None
    ) -> Refusal | None:
        """Decide with the current usage and, when allowed (None), reserve what the call will use.

        An upload's bytes, reserved as they arrived, are its body: the decision sees the usage without them,
        and an allowed call keeps them as its reservation."""
        with self._lock:
            held = upload.take_all() if upload is not None else 0
            seen = Usage(self.usage.bytes_written - held, self.usage.files_created)
            refusal = decide(
                call.op, call.path, rows, seen, facts, dest=call.dest, want_exec=call.want_exec, role=call.role
            )
            byte_count, files = _cost(call, facts) if refusal is None else (0, 0)
            self.usage = Usage(seen.bytes_written + byte_count, seen.files_created + files)
            return refusal

    def release(self, call: Call, facts: Facts) -> None:
        """Give back a reservation whose act failed."""
        byte_count, files = _cost(call, facts)
        with self._lock:
            self._add(-byte_count, -files)

    def open_upload(self, rows: FsRows, role: str) -> Upload | Refusal:
        """A slot for one more body of `role`'s, or the refusal (429 max_concurrent_uploads)."""
        with self._lock:
            refusal = decide_upload_slot(rows, self._uploads.get(role, 0), role)
            if refusal is not None:
                return refusal
            self._uploads[role] = self._uploads.get(role, 0) + 1
        return Upload(self, rows, role)

    def reservation(self, rows: FsRows, role: str) -> Upload:
        """A body without an upload slot (a file staged through the mount: it lives on disk, not in memory, and
        its bytes count against max_total_bytes as they arrive all the same)."""
        return Upload(self, rows, role, slotted=False)

    def uploads(self, role: str) -> int:
        """How many of `role`'s bodies are in flight now."""
        with self._lock:
            return self._uploads.get(role, 0)

    def _add(self, byte_count: int, files: int) -> None:
        self.usage = Usage(self.usage.bytes_written + byte_count, self.usage.files_created + files)


class Upload:
    """One body in flight: its slot, and the bytes it reserved as they arrived. Close it when done."""

    def __init__(self, meter: UsageMeter, rows: FsRows, role: str, slotted: bool = True) -> None:
        self._meter = meter
        self._rows = rows
        self.role = role
        self.held = 0
        self._open = True
        self._slotted = slotted

    def take(self, more: int) -> Refusal | None:
        """Reserve the next `more` bytes of the body, or the refusal (507 max_total_bytes) reserving nothing."""
        meter = self._meter
        with meter._lock:
            refusal = decide_arriving(self._rows, meter.usage, self.held, more)
            if refusal is None:
                meter._add(more, 0)
                self.held += more
            return refusal

    def take_all(self) -> int:
        """Hand the bytes reserved over to the decision (call with the meter's lock held)."""
        held, self.held = self.held, 0
        return held

    def close(self) -> None:
        """Give back what is still reserved and the slot (a refused or aborted body keeps nothing)."""
        meter = self._meter
        with meter._lock:
            if not self._open:
                return
            self._open = False
            meter._add(-self.held, 0)
            self.held = 0
            if self._slotted:
                meter._uploads[self.role] -= 1


def _cost(call: Call, facts: Facts) -> tuple[int, int]:
    creates = call.op in (Op.WRITE, Op.APPEND, Op.MKDIR) and not facts.target.exists
    byte_count = facts.body_bytes if call.op in (Op.WRITE, Op.APPEND) else 0
    return byte_count, int(creates)


@dataclass
class Dispatcher:
    """Rows, usage and the audit sink of one fs door."""

    rows: FsRows
    audit: Audit  # queues the event of an act, or raises AuditBackpressure
    report: Audit | None = None  # queues the event of a refusal or a failure; default `audit`
    meter: UsageMeter = field(default_factory=UsageMeter)
    recent: RecentWrites = field(default_factory=RecentWrites)  # the tail of what was written, across files

    def event(
        self,
        call: Call | None,
        refusal: Refusal | None,
        *,
        raw_path: str = "",
        byte_count: int = 0,
        op: str = "",
        role: str = "app",
        outcome: str | None = None,
    ) -> dict[str, Any]:
        """The audit event: role, op, path, bytes, decision, row (`refusal` None: allowed). Never content."""
        event: dict[str, Any] = {
            "door": "fs",
            "client_role": call.role if call else role,  # the launcher stamps "role" with the door's own
            "op": OP_NAMES[call.op] if call else op,
            "path": call.path.text or "." if call else raw_path[:MAX_AUDIT_PATH],
            "bytes": byte_count,
            "decision": "allow" if refusal is None else "refuse",
            "status": 200 if refusal is None else refusal.status,
            "row": "" if refusal is None else refusal.row,
            "who": WHO if refusal is None else refusal.who,
        }
        if call and call.dest is not None:
            event["dest"] = call.dest.text
        if outcome is not None:
            event["outcome"] = outcome
        return event

    def _report(self, event: dict[str, Any]) -> None:
        try:
            (self.report or self.audit)(event)
        except AuditBackpressure:
            pass  # counted as lost by the queue; a refusal or a failure did nothing to audit first
        except Exception:  # the audit sink failing must not pass silently, nor crash the door
            log.exception("fs door could not emit an audit event")
            raise

    def refused(
        self,
        call: Call | None,
        refusal: Refusal,
        *,
        raw_path: str = "",
        op: str = "",
        role: str = "app",
        byte_count: int = 0,
    ) -> Response:
        """Report and answer a refusal found before the final decision."""
        self._report(self.event(call, refusal, raw_path=raw_path, op=op, role=role, byte_count=byte_count))
        return error_response(refusal)

    def settle(self, call: Call, facts: Facts, act: Callable[[], T], upload: Upload | None = None,
               extra: Mapping[str, Any] | None = None) -> T:
        """Decide (reserving quota; an upload's bytes become the call's), queue the event (with `extra`), then act
        and return what the act returns. A refusal, or an event that cannot be queued (the reservation given
        back), raises DoorRefused; a kernel failure of the act is reported and re-raised as it came."""
        refusal = self.meter.decide_and_reserve(self.rows, call, facts, upload)
        event = {**self.event(call, refusal, byte_count=facts.body_bytes), **(extra or {})}
        if refusal is not None:
            self._report(event)
            raise DoorRefused(refusal)
        try:
            self.audit(event)
        except AuditBackpressure as unaudited:
            self.meter.release(call, facts)
            raise DoorRefused(unaudited.refusal) from None
        try:
            return act()
        except (OSError, DoorRefused) as err:
            self.meter.release(call, facts)
            failed = err.refusal if isinstance(err, DoorRefused) else kernel_refusal(err, call.path)
            failed_event = self.event(call, failed, byte_count=facts.body_bytes, outcome="failed")
            self._report({**failed_event, **(extra or {})})
            raise
        except BaseException:
            self.meter.release(call, facts)
            raise

    def conclude(self, call: Call, facts: Facts, act: Callable[[], Response], upload: Upload | None = None) -> Response:
        """Decide (reserving quota; an upload's bytes become the call's), queue the event, then act; no act when
        the event cannot be queued (503, the reservation given back). A kernel failure of the act is reported."""
        try:
            return self.settle(call, facts, act, upload)
        except DoorRefused as refused:
            return error_response(refused.refusal)
        except OSError as err:
            return error_response(kernel_refusal(err, call.path))
