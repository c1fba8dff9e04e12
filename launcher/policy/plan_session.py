"""The session's own rows in `check`: what the launcher itself holds for the whole session. Pure."""

from __future__ import annotations

from collections.abc import Iterator

from launcher.manifest import Manifest
from launcher.policy.plan_kernel import always
from launcher.policy.plan_spec import RowSpec
from pki.vocabulary import BOUNDARY

LAUNCHER = "the launcher (root)"


def session_rows(manifest: Manifest) -> Iterator[RowSpec]:
    """session.ttl, and session.audit (launcher/lifecycle/audit_cap.py)."""
    session = manifest.session
    yield RowSpec("session.ttl", f"the launcher ends the session after {session.ttl_s} s", BOUNDARY, LAUNCHER, always)
    yield RowSpec("session.audit", f"the launcher ends the session (fail closed) once its audit log holds "
                  f"{session.max_audit_mb} MiB (session.max_audit_mb): a loop of requests cannot fill the disk",
                  BOUNDARY, LAUNCHER, always)
