"""The one chokepoint: every fs operation is decided, audited, and only then acted on.

`Dispatcher.conclude` is the only place an allowed operation touches the workspace: it takes the facts
gathered for a call, asks the pure core for the verdict (reserving quota atomically), emits the audit
event, and runs the act. Refusals found earlier (bad path, names, declared size, the kernel refusing to
resolve) go through `Dispatcher.refused`, which emits the same event.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from doors._http import Response, error_response
from doors._refusal import DoorRefused, Refusal
from doors.fs._decide import decide
from doors.fs._ops import kernel_refusal
from doors.fs._paths import WHO, WorkspacePath
from doors.fs._rules import Facts, FsRows, Op, Usage

log = logging.getLogger(__name__)

Audit = Callable[[dict[str, Any]], None]
MAX_AUDIT_PATH = 512


@dataclass(frozen=True)
class Call:
    """One operation as the dispatch sees it (never the content)."""

    op: Op
    path: WorkspacePath
    role: str = "app"
    dest: WorkspacePath | None = None
    want_exec: bool = False


class UsageMeter:
    """The session's bytes and files, with reservations for requests in flight. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.usage = Usage()

    def decide_and_reserve(self, rows: FsRows, call: Call, facts: Facts) -> Refusal | None:
        """Decide with the current usage and, when allowed (None), reserve what the call will use."""
        with self._lock:
            refusal = decide(
                call.op, call.path, rows, self.usage, facts, dest=call.dest, want_exec=call.want_exec, role=call.role
            )
            if refusal is None:
                self._add(*_cost(call, facts))
            return refusal

    def release(self, call: Call, facts: Facts) -> None:
        """Give back a reservation whose act failed."""
        byte_count, files = _cost(call, facts)
        with self._lock:
            self._add(-byte_count, -files)

    def _add(self, byte_count: int, files: int) -> None:
        self.usage = Usage(self.usage.bytes_written + byte_count, self.usage.files_created + files)


def _cost(call: Call, facts: Facts) -> tuple[int, int]:
    creates = call.op in (Op.WRITE, Op.APPEND, Op.MKDIR) and not facts.target.exists
    byte_count = facts.body_bytes if call.op in (Op.WRITE, Op.APPEND) else 0
    return byte_count, int(creates)


@dataclass
class Dispatcher:
    """Rows, usage and the audit sink of one fs door."""

    rows: FsRows
    audit: Audit
    meter: UsageMeter = field(default_factory=UsageMeter)

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
            "op": call.op.value if call else op,
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

    def _emit(self, event: dict[str, Any]) -> None:
        try:
            self.audit(event)
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
        """Audit and answer a refusal found before the final decision."""
        self._emit(self.event(call, refusal, raw_path=raw_path, op=op, role=role, byte_count=byte_count))
        return error_response(refusal)

    def conclude(self, call: Call, facts: Facts, act: Callable[[], Response]) -> Response:
        """Decide (reserving quota), audit, then act; a kernel failure of the act is audited too."""
        refusal = self.meter.decide_and_reserve(self.rows, call, facts)
        self._emit(self.event(call, refusal, byte_count=facts.body_bytes))
        if refusal is not None:
            return error_response(refusal)
        try:
            return act()
        except (OSError, DoorRefused) as err:
            self.meter.release(call, facts)
            failed = err.refusal if isinstance(err, DoorRefused) else kernel_refusal(err, call.path)
            self._emit(self.event(call, failed, byte_count=facts.body_bytes, outcome="failed"))
            return error_response(failed)
        except BaseException:
            self.meter.release(call, facts)
            raise
