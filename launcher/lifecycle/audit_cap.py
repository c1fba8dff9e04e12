"""session.max_audit_mb: the session ends (fail closed) once its audit log holds that much.

An app can make allowed or refused requests in a loop, and each is one durable line: without a cap it fills
the disk the audit root is on. The doors must record what they do, so a full log cannot simply stop taking
lines; the session ends instead, with the line that says why as the log's last event before teardown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from launcher.lifecycle.supervise import Ending
from pki.vocabulary import EXIT_FAIL_CLOSED

if TYPE_CHECKING:
    from launcher.lifecycle.audit import AuditLog

FULL_EVENT = "session.audit_full"


class AuditCap:
    """Checked after each supervisor round's commit."""

    def __init__(self, max_audit_mb: int) -> None:
        self.max_audit_mb = max_audit_mb
        self.full = False

    def commit(self, log: AuditLog | None) -> Ending | None:
        """Commit the round's lines; None while the log is under the cap, else the Ending (every round from then
        on), the first time after writing FULL_EVENT."""
        if log is None:
            return None
        log.commit()
        size = log.size_bytes()
        if size < self.max_audit_mb * 1024 * 1024:
            return None
        if not self.full:
            self.full = True
            log.append({"event": FULL_EVENT, "max_audit_mb": self.max_audit_mb, "bytes": size})
            log.commit()
        return Ending(f"the session's audit log holds session.max_audit_mb ({self.max_audit_mb} MiB): the session "
                      "ends (fail closed), since what the doors did next could not be recorded; raise the row, or "
                      "read the log for what the app did in a loop", EXIT_FAIL_CLOSED, "audit")
