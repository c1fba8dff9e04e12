"""What each door is told: its rows, its fd contract and its DoorContract (docs/contracts.md). Pure: no I/O."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from doors import DoorContract
from launcher.manifest import Manifest
from launcher.policy.layout import SessionPaths
from pki.vocabulary import MODEL_LISTENER_PREFIX, PROXY_LISTENER_PREFIX


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
    return rows


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
    models: Mapping[str, int] = field(default_factory=dict)  # client role → the model door's listener in its netns

    @property
    def listen_fds(self) -> dict[str, int]:
        """The listeners by the names the door's contract gives them."""
        return {"door": self.door, **{f"{PROXY_LISTENER_PREFIX}{client}": fd for client, fd in self.proxies.items()},
                **{f"{MODEL_LISTENER_PREFIX}{client}": fd for client, fd in self.models.items()}}

    @property
    def keep(self) -> tuple[int, ...]:
        """Every fd the door keeps open: 0–2, the status fd, the SVID memfd, its listeners and secrets."""
        return tuple(range(max((self.door, *self.proxies.values(), *self.secrets.values(),
                                *self.models.values())) + 1))


def door_fds(role: str, proxy_clients: Iterable[str], secrets: Iterable[str] = (),
             model_clients: Iterable[str] = ()) -> DoorFds:
    """The fd contract of door `role`: only the net door holds proxy listeners, one per client, in role order;
    only the keys door holds secret sources, one per secret, in name order; only the model door holds plain-HTTP
    listeners, one per client, in role order; each after its listener."""
    clients = sorted(proxy_clients) if role == "net" else []
    names = sorted(secrets) if role == "keys" else []
    model = sorted(model_clients) if role == "model" else []
    return DoorFds(svid=4, door=5, proxies={client: 6 + index for index, client in enumerate(clients)},
                   secrets={name: 6 + index for index, name in enumerate(names)},
                   models={client: 6 + index for index, client in enumerate(model)})


def door_contract(
    manifest: Manifest, role: str, sid: str, bundle_pem: str, fds: DoorFds, not_after: int,
) -> DoorContract:
    """The one description door `role` gets: who it is, its edges, its rows and its listeners. Holds no secret."""
    rows = door_rows(manifest, role)
    if fds.secrets:
        rows["secret_fds"] = dict(fds.secrets)
    if role == "model" and ("model", "keys") in manifest.edges:
        rows["keys_socket"] = SessionPaths(sid).socket_path("keys")  # where it asks for the provider key
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
