"""The one description a door gets from the launcher: who it is and what it may do. Holds no secret."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from pki.vocabulary import STATUS_FD, SVID_FD

CONTRACT_ENV = "SHARNESS_DOOR_CONTRACT"


@dataclass(frozen=True)
class DoorContract:
    role: str
    session_id: str
    trust_domain: str
    edges: tuple[tuple[str, str], ...]
    bundle_pem: str
    rows: dict[str, Any] = field(default_factory=dict)
    listen_fds: dict[str, int] = field(default_factory=dict)
    status_fd: int = STATUS_FD
    svid_fd: int = SVID_FD
    not_after: int = 0
    # The keys door's fingerprint of the kept secrets (doors/_secret_match.py wire form), for the fs and net doors:
    # not a row (hello shows rows), and not in to_json (a contract in the environment never carries it).
    kept_secrets: dict[str, Any] | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "role": self.role,
                "session_id": self.session_id,
                "trust_domain": self.trust_domain,
                "edges": [list(edge) for edge in self.edges],
                "bundle_pem": self.bundle_pem,
                "rows": self.rows,
                "listen_fds": self.listen_fds,
                "status_fd": self.status_fd,
                "svid_fd": self.svid_fd,
                "not_after": self.not_after,
            },
            separators=(",", ":"),
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> DoorContract:
        raw = json.loads(text)
        return cls(
            role=raw["role"],
            session_id=raw["session_id"],
            trust_domain=raw["trust_domain"],
            edges=tuple((str(c), str(s)) for c, s in raw["edges"]),
            bundle_pem=raw["bundle_pem"],
            rows=dict(raw.get("rows", {})),
            listen_fds={str(k): int(v) for k, v in raw.get("listen_fds", {}).items()},
            status_fd=int(raw.get("status_fd", STATUS_FD)),
            svid_fd=int(raw.get("svid_fd", SVID_FD)),
            not_after=int(raw.get("not_after", 0)),
        )

    @classmethod
    def from_environ(cls) -> DoorContract:
        text = os.environ.get(CONTRACT_ENV)
        if text is None:
            raise RuntimeError(f"{CONTRACT_ENV} is not set: a door is started by sharness-launch")
        return cls.from_json(text)
