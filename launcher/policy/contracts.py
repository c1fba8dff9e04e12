"""What each door is told: its rows, its fd contract and its DoorContract (docs/contracts.md). Pure: no I/O."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from doors import DoorContract
from launcher.manifest import Manifest
from launcher.policy.environment import model_env
from launcher.policy.layout import PROXY_HOST, PROXY_PORT, SessionPaths
from pki.vocabulary import (
    EGRESS_CA_ROW,
    MODEL_LISTENER_PREFIX,
    MOUNT_FD_ROW,
    MOUNT_OWNER_ROW,
    PROXY_LISTENER_PREFIX,
    SEALED_PREFIX,
)

# The doors that refuse content holding a kept secret, so the keys door's fingerprint is in their contracts.
FINGERPRINT_ROLES = frozenset({"fs", "net"})


def door_rows(manifest: Manifest, role: str) -> dict[str, Any]:
    """The manifest's rows for door `role` (a copy); the fs door is also told the workspace it holds.

    The keys door is not told where its secrets lie (`from`): it gets each one as an open fd, and is told
    which are sealed at rest (it opens those with the machine key's fd).
    """
    rows = manifest.door_rows(role)
    if role == "fs":
        rows["workspace"] = manifest.workspace
    if role == "keys":
        for secret in rows.get("secrets", {}).values():
            source = str(secret.pop("from", ""))
            if source.startswith(SEALED_PREFIX):
                secret["sealed"] = source.removeprefix(SEALED_PREFIX)  # the name its sealed file holds
    if role == "shell" and rows.get("workspace") in ("read", "overlay"):
        rows["workspace_dir"] = manifest.workspace
    return rows


def shell_places(manifest: Manifest, sid: str) -> dict[str, Any]:
    """Where the shell door's commands live: HOME and TMPDIR on its scratch, and the proxy (edge shell→net)."""
    layout = SessionPaths(sid)
    proxy = f"http://{PROXY_HOST}:{PROXY_PORT}" if ("shell", "net") in manifest.edges else None
    model = model_env() if ("shell", "model") in manifest.edges else None
    places = {"home": layout.home_dir("shell"), "tmp": layout.tmp_dir("shell"), "proxy": proxy, "model": model}
    if manifest.overlay_limits() is not None:  # where it reads the upper layer, and the fs door it applies it through
        places.update(overlay_upper=layout.overlay_upper_dir(), fs_socket=layout.socket_path("fs"))
    return places


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
    machine_key: int | None = None  # the sealed store's key, when a secret is sealed at rest
    models: Mapping[str, int] = field(default_factory=dict)  # client role → the model door's listener in its netns
    mount: int | None = None  # the fs door's FUSE device (app.workspace "mount"), after its listener
    egress: int | None = None  # the net door's egress leaves (memfd), when a host has a bound credential

    @property
    def listen_fds(self) -> dict[str, int]:
        """The listeners by the names the door's contract gives them."""
        return {"door": self.door, **{f"{PROXY_LISTENER_PREFIX}{client}": fd for client, fd in self.proxies.items()},
                **{f"{MODEL_LISTENER_PREFIX}{client}": fd for client, fd in self.models.items()}}

    @property
    def keep(self) -> tuple[int, ...]:
        """Every fd the door keeps open: 0–2, the status fd, the SVID memfd, its listeners and secrets."""
        key = () if self.machine_key is None else (self.machine_key,)
        mount = () if self.mount is None else (self.mount,)
        egress = () if self.egress is None else (self.egress,)
        return tuple(range(max((self.door, *self.proxies.values(), *self.secrets.values(), *key,
                                *self.models.values(), *mount, *egress)) + 1))


def door_fds(role: str, proxy_clients: Iterable[str], secrets: Iterable[str] = (),
             model_clients: Iterable[str] = (), *, sealed: bool = False, mount: bool = False,
             egress: bool = False) -> DoorFds:
    """The fd contract of door `role`, each after its listener: only the net door holds proxy listeners, one per
    client, in role order, then its egress leaves when hosts are bound (`egress`); only the keys door holds secret
    sources, one per secret, in name order, then the machine key when a secret is `sealed`; only the model door
    holds plain-HTTP listeners, one per client; only the fs door holds the FUSE device, when the app `mount`s the
    workspace."""
    clients = sorted(proxy_clients) if role == "net" else []
    names = sorted(secrets) if role == "keys" else []
    model = sorted(model_clients) if role == "model" else []
    key = 6 + len(names) if role == "keys" and sealed else None
    return DoorFds(svid=4, door=5, proxies={client: 6 + index for index, client in enumerate(clients)},
                   secrets={name: 6 + index for index, name in enumerate(names)}, machine_key=key,
                   models={client: 6 + index for index, client in enumerate(model)},
                   mount=6 if role == "fs" and mount else None,
                   egress=6 + len(clients) if role == "net" and egress else None)


def door_contract(
    manifest: Manifest, role: str, sid: str, bundle_pem: str, fds: DoorFds, not_after: int,
    kept_secrets: Mapping[str, Any] | None = None, mount_owner: tuple[int, int] | None = None,
    egress_ca_pem: bytes | None = None,
) -> DoorContract:
    """The one description door `role` gets: who it is, its edges, its rows and its listeners, for the fs and
    net doors the keys door's fingerprint `kept_secrets` (its wire form), and for the fs door serving the
    workspace mount the app's uid and gid (`mount_owner`), and for the shell door reaching the net door the
    egress CA's certificate (`egress_ca_pem`: its commands trust it as the app does). Holds no secret."""
    rows = door_rows(manifest, role)
    if role == "shell":
        rows.update(shell_places(manifest, sid))
        if egress_ca_pem is not None and ("shell", "net") in manifest.edges:
            rows[EGRESS_CA_ROW] = egress_ca_pem.decode()
    if fds.secrets:
        rows["secret_fds"] = dict(fds.secrets)
    if fds.machine_key is not None:
        rows["machine_key_fd"] = fds.machine_key
    if fds.mount is not None and mount_owner is not None:
        rows[MOUNT_FD_ROW] = fds.mount
        rows[MOUNT_OWNER_ROW] = list(mount_owner)
    if role == "net" and fds.egress is not None:
        rows["egress_fd"] = fds.egress  # the leaves it terminates bound hosts' TLS with
    # Where it asks for a key it sends upstream: the model door's provider key; the net door's bound credentials
    # and its upstream proxy's credential.
    asks_keys = role == "model" or (role == "net" and (fds.egress is not None
                                                       or "secret" in rows.get("upstream_proxy", {})))
    if asks_keys and (role, "keys") in manifest.edges:
        rows["keys_socket"] = SessionPaths(sid).socket_path("keys")
    return DoorContract(
        role=role,
        session_id=sid,
        trust_domain=manifest.session.trust_domain,
        edges=tuple(sorted(manifest.edges)),
        bundle_pem=bundle_pem,
        rows=rows,
        listen_fds=fds.listen_fds,
        not_after=not_after,
        kept_secrets=dict(kept_secrets) if kept_secrets is not None and role in FINGERPRINT_ROLES else None,
    )
