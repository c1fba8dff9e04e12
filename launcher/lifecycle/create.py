"""Create a session's resources, each one journaled before it exists (DESIGN.md steps 3–6)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from launcher.kernel import cgroups, netns, users
from launcher.lifecycle import sweep_lock
from launcher.lifecycle.journal import Journal
from launcher.lifecycle.preflight import WorkspaceOwner
from launcher.manifest import Manifest
from launcher.policy.layout import (
    APP_BUNDLE,
    APP_EGRESS_BUNDLE,
    APP_SVID,
    LOOPBACK_ONLY,
    MODEL_HOST,
    MODEL_PORT,
    PROXY_HOST,
    PROXY_PORT,
    SessionLayout,
    door_client_groups,
)
from launcher.policy.overlay import overlay_of
from launcher.policy.scratch import scratch_of

if TYPE_CHECKING:
    from pki.ca import MintedSession


@dataclass
class Resources:
    """What the launcher holds for a running session: ids, fds and listeners, never a private key."""

    uids: dict[str, int] = field(default_factory=dict)
    gids: dict[str, int] = field(default_factory=dict)  # primary group of each role's user
    door_gids: dict[str, int] = field(default_factory=dict)  # group admitting a door's clients
    netns_fds: dict[str, int] = field(default_factory=dict)
    cgroups: dict[str, cgroups.CgroupHandle] = field(default_factory=dict)
    svid_memfds: dict[str, int] = field(default_factory=dict)
    egress_memfd: int | None = None  # the net door's egress leaves (keys and certificates), when hosts are bound
    listeners: dict[str, socket.socket] = field(default_factory=dict)
    proxy_listeners: dict[str, socket.socket] = field(default_factory=dict)
    model_listeners: dict[str, socket.socket] = field(default_factory=dict)  # client role → inside its netns
    minted: MintedSession | None = None

    def release_door_handles(self) -> None:
        """Once the doors hold their listeners and key memfds, the launcher lets go of its copies."""
        for fd in self.svid_memfds.values():
            os.close(fd)
        if self.egress_memfd is not None:
            os.close(self.egress_memfd)
            self.egress_memfd = None
        for sock in (*self.listeners.values(), *self.proxy_listeners.values(), *self.model_listeners.values()):
            sock.close()
        self.svid_memfds.clear()
        self.listeners.clear()
        self.proxy_listeners.clear()
        self.model_listeners.clear()

    def close(self) -> None:
        self.release_door_handles()
        for fd in self.netns_fds.values():
            os.close(fd)
        self.netns_fds.clear()


def ensure_root_dirs(layout: SessionLayout) -> None:
    """The shared parents every session lives under; never journaled, never removed."""
    for path, mode in ((layout.run_root, 0o711), (layout.sessions_root, 0o700)):
        os.makedirs(path, mode=mode, exist_ok=True)
        os.chmod(path, mode)


def remove_empty_roots(sessions_root: str, run_root: str) -> None:
    """After the last session, leave no /run/sharness behind (a session starting meanwhile re-creates it)."""
    held = sweep_lock.try_exclusive(sessions_root)
    if held is None:
        return  # gone already, or a session is creating or a sweep is running: theirs to leave
    try:
        sweep_lock.remove_if_empty(sessions_root, run_root)
    finally:
        os.close(held)


Dir = tuple[str, int, int, int]  # path, mode, uid, gid


def _mkdirs(journal: Journal, dirs: list[Dir]) -> None:
    """Every directory journaled (one fsync for all), then made in order, parents first."""
    journal.record_all([("dir", path) for path, _, _, _ in dirs])
    for path, mode, uid, gid in dirs:
        os.mkdir(path, mode)
        os.chown(path, uid, gid)
        os.chmod(path, mode)


class SessionBuilder:
    """Creates, in order, every resource of one session. Each step journals before it creates: all of its
    resources at once, with one fsync (each fsync is ~0.3 ms; docs/decisions/session-bench.md)."""

    def __init__(self, manifest: Manifest, layout: SessionLayout, journal: Journal,
                 fs_owner: WorkspaceOwner | None = None, avoid_ids: frozenset[int] = frozenset(),
                 while_minting: Callable[[], None] | None = None) -> None:
        self.manifest = manifest
        self.layout = layout
        self.journal = journal
        self.fs_owner = fs_owner
        self.avoid_ids = avoid_ids  # owners of the workspace and of app.files.* (lifecycle/path_owners.py)
        self.while_minting = while_minting  # the launcher's own work beside the CA child's (pki.ca.mint_session)
        self.resources = Resources()

    def build(self) -> Resources:
        """Every resource, under the creation lock: the journal-less sweep cannot take them half made."""
        with sweep_lock.creating(os.path.dirname(self.journal.directory)):
            self.make_runtime_dirs()
            self.make_accounts()
            self.make_private_dirs()
            self.make_netns()
            self.make_cgroups()
            self.make_pki()
            self.make_door_listeners()
            self.make_proxy_listeners()
            self.make_model_listeners()
        return self.resources

    def make_runtime_dirs(self) -> None:
        _mkdirs(self.journal, [(self.layout.runtime_dir, 0o711, 0, 0), (self.layout.doors_dir, 0o711, 0, 0)])

    def make_accounts(self) -> None:
        """Every user (with its own group) and every door's clients group, in one locked transaction."""
        roles = self.manifest.roles
        # The fs door runs as the workspace owner (docs/decisions/fs.md): it gets no session user.
        user_names = {role: self.layout.user(role) for role in roles if role != "fs"}
        clients = door_client_groups(self.manifest.edges, roles)
        group_members = {
            self.layout.clients_group(door): [user_names[role] for role in sorted(clients[door]) if role in user_names]
            for door in sorted(clients)
        }
        self.journal.record_all([*(("user", name) for name in user_names.values()),
                                 *(("group", name) for name in group_members)])
        # The workspace owner's ids are never a component's (the fs door runs as them, the app must not), nor
        # are the owners of the app's paths.
        avoid = {*self.avoid_ids, *((self.fs_owner.uid, self.fs_owner.gid) if self.fs_owner is not None else ())}
        ids = users.create_accounts(list(user_names.values()), group_members, avoid)
        for role, name in user_names.items():
            self.resources.uids[role] = ids[name]
            self.resources.gids[role] = ids[name]  # each user's own group has the same id
        if "fs" in roles:
            assert self.fs_owner is not None, "a session with the fs door needs the workspace owner"
            self.resources.uids["fs"], self.resources.gids["fs"] = self.fs_owner.uid, self.fs_owner.gid
        for door in clients:
            self.resources.door_gids[door] = ids[self.layout.clients_group(door)]

    def make_private_dirs(self) -> None:
        dirs: list[Dir] = []
        for role in self.manifest.roles:
            dirs.append((self.layout.private_dir(role), 0o700, self.resources.uids[role], self.resources.gids[role]))
            scratch = scratch_of(self.manifest, role, self.layout)
            # Mount points only: the component's tmpfs covers them in its own mount namespace (kernel/mountns.py),
            # and on the host they stay empty and root's, so nothing it writes there reaches the host's /run.
            dirs += [(path, 0o555, 0, 0) for path in (scratch.dirs if scratch is not None else ())]
            overlay = overlay_of(self.manifest, role, self.layout)
            if overlay is not None:  # where the shell door reads its overlay's upper layer: a mount point too
                dirs.append((overlay.upper, 0o555, 0, 0))
        _mkdirs(self.journal, dirs)

    def make_netns(self) -> None:
        names = {role: name for role in self.manifest.roles if (name := self.layout.netns(role)) is not None}
        self.journal.record_all([("netns", name) for name in names.values()])
        for role, name in names.items():
            netns.create_netns(name, loopback_up=role in LOOPBACK_ONLY)
            self.resources.netns_fds[role] = netns.netns_fd(name)

    def make_cgroups(self) -> None:
        sid = self.layout.sid
        self.journal.record_all([("cgroup", path) for role in self.manifest.roles
                                 for path in cgroups.cgroup_paths(sid, role)])
        for role in self.manifest.roles:
            memory_mb, max_pids = self.manifest.process_limits(role)
            self.resources.cgroups[role] = cgroups.create_cgroup(sid, role, memory_mb * 1024 * 1024, max_pids)
            if role == "shell":  # each of its commands gets a cgroup of its own, under the shell's
                cgroups.delegate(self.resources.cgroups[role], self.resources.uids[role], self.resources.gids[role])

    def make_pki(self) -> None:
        # pki.ca brings cryptography's x509 (~20-35 ms): imported here, on the way to the fork it needs anyway (the
        # doors' code imports it too), not with the launcher's modules; the CA child inherits it, imports nothing.
        from pki.ca import EgressDelivery, FileDelivery, MemfdDelivery, mint_session, new_svid_memfd

        deliveries: dict[str, MemfdDelivery | FileDelivery] = {}
        for role in self.manifest.roles:
            if role == "app":
                continue
            fd = new_svid_memfd(role)
            self.resources.svid_memfds[role] = fd
            deliveries[role] = MemfdDelivery(fd)
        app_dir = self.layout.private_dir("app")
        app_ids = self.resources.uids["app"], self.resources.gids["app"]
        self.journal.record("svid", f"{app_dir}/{APP_SVID}")  # removed first at teardown, before any tree
        deliveries["app"] = FileDelivery(f"{app_dir}/{APP_SVID}", *app_ids)
        egress_to = None
        if self.manifest.bound_hosts:  # the net door terminates their TLS: its leaves come from the CA child too
            self.resources.egress_memfd = new_svid_memfd("egress")
            egress_to = EgressDelivery(self.manifest.bound_hosts, self.resources.egress_memfd)
        session = self.manifest.session
        minted = mint_session(session.trust_domain, self.layout.sid, self.manifest.roles, session.ttl_s, deliveries,
                              egress_to, self.while_minting)
        self.resources.minted = minted
        self._give_app(f"{app_dir}/{APP_BUNDLE}", minted.bundle_pem)
        if minted.egress_ca_pem is not None:
            from pki.bundle import system_store

            self._give_app(f"{app_dir}/{APP_EGRESS_BUNDLE}", system_store() + minted.egress_ca_pem)

    def _give_app(self, path: str, content: bytes) -> None:
        """A public file (0444) the app owns in its private directory: a trust bundle."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
        try:
            os.write(fd, content)
            os.fchown(fd, self.resources.uids["app"], self.resources.gids["app"])
        finally:
            os.close(fd)

    def make_door_listeners(self) -> None:
        doors = [door for door in self.manifest.roles if door != "app"]
        self.journal.record_all([("file", self.layout.socket_path(door)) for door in doors])
        for door in doors:
            path = self.layout.socket_path(door)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(path)
            # Only the door's edge-listed clients are in its group: the kernel's first lock.
            os.chown(path, 0, self.resources.door_gids.get(door, 0))
            os.chmod(path, 0o660)
            listener.listen(128)
            self.resources.listeners[door] = listener

    def make_proxy_listeners(self) -> None:
        if "net" not in self.manifest.roles:
            return
        for role in ("app", "shell"):
            name = self.layout.netns(role)
            if role in self.manifest.roles and (role, "net") in self.manifest.edges and name:
                listener = netns.tcp_listener_in_netns(name, PROXY_HOST, PROXY_PORT)
                self.resources.proxy_listeners[role] = listener

    def make_model_listeners(self) -> None:
        """The model door's plain-HTTP listener inside each client's netns: only that namespace can connect."""
        if "model" not in self.manifest.roles:
            return
        for role in ("app", "shell"):
            name = self.layout.netns(role)
            if role in self.manifest.roles and (role, "model") in self.manifest.edges and name:
                listener = netns.tcp_listener_in_netns(name, MODEL_HOST, MODEL_PORT)
                self.resources.model_listeners[role] = listener
