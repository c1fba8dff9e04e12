"""What each door is told: its rows, its fd contract and its DoorContract (docs/contracts.md). Pure: no I/O."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from doors import DoorContract
from launcher.manifest import Manifest
from launcher.policy.layout import PROXY_HOST, PROXY_PORT, SessionPaths


def door_rows(manifest: Manifest, role: str) -> dict[str, Any]:
    """The manifest's rows for door `role` (a copy); the fs door is also told the workspace it holds.

    The keys door is not told where its secrets lie (`from`): it gets each one as an open fd.
    """
    rows = manifest.door_rows(role)
    if role == "fs":
        rows["workspace"] = manifest.workspace
    if role == "keys":
        for secret in rows.get("secrets", {}).values():
            secret.pop("from", None)
    if role == "shell" and rows.get("workspace") == "read":
        rows["workspace_dir"] = manifest.workspace
    return rows


def shell_places(manifest: Manifest, sid: str) -> dict[str, Any]:
    """Where the shell door's commands live: HOME and TMPDIR on its scratch, and the proxy (edge shell→net)."""
    layout = SessionPaths(sid)
    proxy = f"http://{PROXY_HOST}:{PROXY_PORT}" if ("shell", "net") in manifest.edges else None
    return {"home": layout.home_dir("shell"), "tmp": layout.tmp_dir("shell"), "proxy": proxy}


def secret_names(manifest: Manifest) -> tuple[str, ...]:
    """The secrets the keys door keeps, in the order their fds are numbered."""
    return tuple(sorted(manifest.door_rows("keys").get("secrets", {})))


@dataclass(frozen=True)
class DoorFds:
    """Where a door finds what the launcher hands it: target fd numbers, as docs/contracts.md lists them."""

    svid: int
    door: int
    proxies: Mapping[str, int]  # client role → the net door's proxy listener inside that client's netns
    secrets: Mapping[str, int] = field(default_factory=dict)  # secret name → its source, opened by the launcher

    @property
    def listen_fds(self) -> dict[str, int]:
        """The listeners by the names the door's contract gives them."""
        return {"door": self.door, **{f"proxy.{client}": fd for client, fd in self.proxies.items()}}

    @property
    def keep(self) -> tuple[int, ...]:
        """Every fd the door keeps open: 0–2, the status fd, the SVID memfd, its listeners and secrets."""
        return tuple(range(max((self.door, *self.proxies.values(), *self.secrets.values())) + 1))


def door_fds(role: str, proxy_clients: Iterable[str], secrets: Iterable[str] = ()) -> DoorFds:
    """The fd contract of door `role`: only the net door holds proxy listeners, one per client, in role order;
    only the keys door holds secret sources, one per secret, in name order, after its listener."""
    clients = sorted(proxy_clients) if role == "net" else []
    names = sorted(secrets) if role == "keys" else []
    return DoorFds(svid=4, door=5, proxies={client: 6 + index for index, client in enumerate(clients)},
                   secrets={name: 6 + index for index, name in enumerate(names)})


def door_contract(
    manifest: Manifest, role: str, sid: str, bundle_pem: str, fds: DoorFds, not_after: int,
) -> DoorContract:
    """The one description door `role` gets: who it is, its edges, its rows and its listeners. Holds no secret."""
    rows = door_rows(manifest, role)
    if role == "shell":
        rows.update(shell_places(manifest, sid))
    if fds.secrets:
        rows["secret_fds"] = dict(fds.secrets)
    return DoorContract(
        role=role,
        session_id=sid,
        trust_domain=manifest.session.trust_domain,
        edges=tuple(sorted(manifest.edges)),
        bundle_pem=bundle_pem,
        rows=rows,
        listen_fds=fds.listen_fds,
        not_after=not_after,
    )
