"""What the daemon writes down: one structured line per event on stderr (journald keeps it), every request
allowed or refused as an event of the daemon's own audit log (hash-chained and signed like a session's,
launcher/lifecycle/audit.py), and who owns each session it started (so `logs SID` answers its owner only,
after the session and after a restart)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping

from launcher.daemon.refusal_rate import Counted
from launcher.lifecycle import audit_keys
from launcher.lifecycle.audit import AuditLog
from pki.vocabulary import LAUNCHD_STATE_ROOT, new_sid, valid_sid


def log_line(event: str, **fields: object) -> None:
    """One JSON line on stderr: what the daemon did, for journald (never a secret: fields are the daemon's)."""
    record = {"ts": round(time.time(), 3), "event": event, **fields}
    with contextlib.suppress(OSError, ValueError):
        print(json.dumps(record, default=str, separators=(",", ":")), file=sys.stderr, flush=True)


class DaemonRecords:
    """The daemon's audit log (one per daemon start, under <state>/audit/<run id>/) and the session owners."""

    def __init__(self, state_root: str = LAUNCHD_STATE_ROOT) -> None:
        self.state_root = state_root
        self.run_id = new_sid()
        self._owners = os.path.join(state_root, "owners")
        os.makedirs(self._owners, mode=0o700, exist_ok=True)
        os.chmod(state_root, 0o700)
        audit_root = os.path.join(state_root, "audit")
        self.audit = AuditLog.create(os.path.join(audit_root, self.run_id), self.run_id)
        # <state>/keys/<run id>.pub: `sharness-launch verify-audit <state>/audit/<run id>` checks against it
        audit_keys.register(audit_root, self.run_id, self.audit.public_key_pem.encode())

    def event(self, event: str, fields: Mapping[str, object]) -> None:
        """One audit event, durable before the daemon acts on it, and its line on stderr."""
        self.audit.append({"event": event, **fields})
        self.audit.commit()
        log_line(event, **fields)

    def counted(self, summaries: Iterable[Counted]) -> None:
        """One `launchd.refusals_counted` event per summary of refusals counted, not written whole."""
        for each in summaries:
            self.event("launchd.refusals_counted", {"uid": each.uid, "count": each.count, "kinds": dict(each.kinds),
                                                    "over_s": round(each.last - each.first, 3)})

    def own(self, sid: str, uid: int) -> None:
        """Record that `uid` started session `sid` (written whole, then renamed)."""
        path = os.path.join(self._owners, sid)
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump({"sid": sid, "uid": uid, "started": int(time.time())}, handle)
        os.rename(tmp, path)

    def owner_of(self, sid: str) -> int | None:
        if not valid_sid(sid):
            return None
        try:
            with open(os.path.join(self._owners, sid), encoding="utf-8") as handle:
                return int(json.load(handle)["uid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def close(self) -> None:
        self.audit.close()
