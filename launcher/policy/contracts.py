"""What each door is told: its rows, its fd contract and its DoorContract (docs/contracts.md). Pure: no I/O."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from doors import DoorContract
from launcher.manifest import Manifest


def door_rows(manifest: Manifest, role: str) -> dict[str, Any]:
    """The manifest's rows for door `role` (a copy); the fs door is also told the workspace it holds."""
    rows = manifest.door_rows(role)
    if role == "fs":
        rows["workspace"] = manifest.workspace
    return rows


@dataclass(frozen=True)
class DoorFds:
    """Where a door finds what the launcher hands it: target fd numbers, as docs/contracts.md lists them."""

    svid: int
    door: int
    proxies: Mapping[str, int]  # client role → the net door's proxy listener inside that client's netns

    @property
    def listen_fds(self) -> dict[str, int]:
        """The listeners by the names the door's contract gives them."""
        return {"door": self.door, **{f"proxy.{client}": fd for client, fd in self.proxies.items()}}

    @property
    def keep(self) -> tuple[int, ...]:
        """Every fd the door keeps open: 0–2, the status fd, the SVID memfd and its listeners."""
        return tuple(range(max((self.door, *self.proxies.values())) + 1))


def door_fds(role: str, proxy_clients: Iterable[str]) -> DoorFds:
    """The fd contract of door `role`; only the net door holds proxy listeners, one per client, in role order."""
    clients = sorted(proxy_clients) if role == "net" else []
    return DoorFds(svid=4, door=5, proxies={client: 6 + index for index, client in enumerate(clients)})


def door_contract(
    manifest: Manifest, role: str, sid: str, bundle_pem: str, fds: DoorFds, not_after: int,
) -> DoorContract:
    """The one description door `role` gets: who it is, its edges, its rows and its listeners. Holds no secret."""
    return DoorContract(
        role=role,
        session_id=sid,
        trust_domain=manifest.session.trust_domain,
        edges=tuple(sorted(manifest.edges)),
        bundle_pem=bundle_pem,
        rows=door_rows(manifest, role),
        listen_fds=fds.listen_fds,
        not_after=not_after,
    )
