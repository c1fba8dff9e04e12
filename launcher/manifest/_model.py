"""The loaded manifest: frozen records over a checked document. Pure."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from pki.vocabulary import DEFAULT_EDGES, DOOR_ORDER, ROLES

# Process limits of a door the manifest does not size (memory MB, pids). The shell runs the app's
# commands (compilers, package installs), so it gets more unless doors.shell.process says otherwise.
DOOR_DEFAULT_LIMITS: tuple[int, int] = (256, 64)
SHELL_DEFAULT_LIMITS: tuple[int, int] = (1024, 128)
# doors.fs.max_concurrent_uploads when the manifest leaves it out: the schema's "default" says the same, and
# so does the fs door (doors/fs/_rules.py); tests/launcher/policy/test_plan.py holds the three together.
FS_DEFAULT_MAX_CONCURRENT_UPLOADS = 8
# The private tmpfs holding a component's HOME and TMPDIR (launcher/policy/scratch.py): its pages count against
# the memory cgroup, so by default it takes a quarter of the memory limit, with one inode per 4 KiB page.
SCRATCH_MEMORY_SHARE = 4
SCRATCH_INODES_PER_MB = 256
# The shell's overlay upper layer (doors.shell.workspace "overlay"): a tmpfs of its own, sized like the scratch.
OVERLAY_MEMORY_SHARE = 4
# The edge a shell with an overlay needs: its changes reach the workspace only through the fs door.
SHELL_APPLY_EDGE = ("shell", "fs")


DEFAULT_MAX_AUDIT_MB = 256  # what an app that only makes requests in a loop can add to the audit disk


@dataclass(frozen=True)
class Session:
    name: str
    trust_domain: str
    ttl_s: int
    max_audit_mb: int = DEFAULT_MAX_AUDIT_MB


@dataclass(frozen=True)
class App:
    argv: tuple[str, ...]
    files_read: tuple[str, ...]
    files_exec: tuple[str, ...]
    max_memory_mb: int
    max_pids: int
    scratch_mb: int
    scratch_inodes: int
    env: tuple[tuple[str, str], ...] = ()  # app.env, in the manifest's order
    home_seed: str | None = None  # app.home_seed: the directory copied into its HOME at start
    workspace: str = "api"  # "mount": the fs door's FUSE mount at the workspace path (launcher/kernel/fuse_mount.py)
    cwd: str = "private"  # "workspace": the app starts in the workspace path
    bind_tcp: tuple[int, ...] = ()  # ports it may bind in its own netns (and listen() is allowed)

    @property
    def mounts_workspace(self) -> bool:
        return self.workspace == "mount"


@dataclass(frozen=True, eq=False)
class Manifest:
    """A manifest that passed every check; `canonical` and `sha256` were computed at load time."""

    document: dict[str, Any] = field(repr=False)
    canonical: bytes = field(repr=False)
    sha256: str
    session: Session
    workspace: str
    app: App
    roles: tuple[str, ...]
    edges: frozenset[tuple[str, str]]

    def door_rows(self, role: str) -> dict[str, Any]:
        """A copy of the manifest's rows for door `role`; {} when it has none (or is not a door)."""
        return copy.deepcopy(self.document.get("doors", {}).get(role, {}))

    def process_limits(self, role: str) -> tuple[int, int]:
        """(max_memory_mb, max_pids) of a component: the manifest's for app and shell, else defaults."""
        if role == "app":
            return self.app.max_memory_mb, self.app.max_pids
        process = self.door_rows(role).get("process")
        if process is not None:
            return int(process["max_memory_mb"]), int(process["max_pids"])
        return SHELL_DEFAULT_LIMITS if role == "shell" else DOOR_DEFAULT_LIMITS

    def scratch_limits(self, role: str) -> tuple[int, int]:
        """(scratch_mb, scratch_inodes) of a component's private tmpfs: its process rows, else the defaults."""
        if role == "app":
            return self.app.scratch_mb, self.app.scratch_inodes
        process = self.door_rows(role).get("process") or {}
        return scratch_limits_of(process, self.process_limits(role)[0])

    @property
    def bound_hosts(self) -> tuple[str, ...]:
        """The hosts with a bound credential (doors.net.inject), sorted: what the egress CA is minted for."""
        if "net" not in self.roles:
            return ()
        inject = self.document.get("doors", {}).get("net", {}).get("inject", [])
        return tuple(sorted({str(row["host"]).rpartition(":")[0] for row in inject}))

    def overlay_limits(self) -> tuple[int, int] | None:
        """(overlay_mb, inodes) of the shell's overlay upper layer; None unless doors.shell.workspace is "overlay"."""
        rows = self.door_rows("shell")
        if rows.get("workspace") != "overlay":
            return None
        return overlay_limits_of(rows, self.process_limits("shell")[0])

    def edges_out(self, role: str) -> tuple[str, ...]:
        """The servers `role` may call, in role order."""
        return tuple(server for server in ROLES if (role, server) in self.edges)

    def edges_in(self, role: str) -> tuple[str, ...]:
        """The clients that may call `role`, in role order."""
        return tuple(client for client in ROLES if (client, role) in self.edges)


def started_roles(document: dict[str, Any]) -> tuple[str, ...]:
    """The components a document starts: the app, then each door present under "doors", in DOOR_ORDER."""
    doors = document.get("doors", {})
    return ("app", *(door for door in DOOR_ORDER if door in doors))


def effective_edges(document: dict[str, Any]) -> frozenset[tuple[str, str]]:
    """The edges as written, or DEFAULT_EDGES restricted to started roles when "edges" is absent (with shell→fs
    when the shell's workspace is an overlay: its changes reach the workspace only through that edge)."""
    if "edges" in document:
        return frozenset((client, server) for client, server in document["edges"])
    started = set(started_roles(document))
    overlay = document.get("doors", {}).get("shell", {}).get("workspace") == "overlay"
    defaults = (*DEFAULT_EDGES, *((SHELL_APPLY_EDGE,) if overlay else ()))
    return frozenset(edge for edge in defaults if edge[0] in started and edge[1] in started)


def overlay_limits_of(shell: dict[str, Any], max_memory_mb: int) -> tuple[int, int]:
    """(overlay_mb, inodes) from the shell's rows: as written, or a quarter of its memory limit."""
    overlay_mb = int(shell.get("overlay_mb", max(1, max_memory_mb // OVERLAY_MEMORY_SHARE)))
    return overlay_mb, overlay_mb * SCRATCH_INODES_PER_MB


def scratch_limits_of(process: dict[str, Any], max_memory_mb: int) -> tuple[int, int]:
    """(scratch_mb, scratch_inodes) from a "process" object: as written, or derived from the memory limit."""
    scratch_mb = int(process.get("scratch_mb", max(1, max_memory_mb // SCRATCH_MEMORY_SHARE)))
    return scratch_mb, int(process.get("scratch_inodes", scratch_mb * SCRATCH_INODES_PER_MB))


def build_manifest(document: dict[str, Any], canonical: bytes, sha256: str) -> Manifest:
    """Frozen records over a document that passed the schema and every check."""
    session, app = document["session"], document["app"]
    files = app.get("files", {})
    scratch_mb, scratch_inodes = scratch_limits_of(app["process"], app["process"]["max_memory_mb"])
    return Manifest(
        document=document,
        canonical=canonical,
        sha256=sha256,
        session=Session(session["name"], session["trust_domain"], session["ttl_s"],
                        session.get("max_audit_mb", DEFAULT_MAX_AUDIT_MB)),
        workspace=document["workspace"],
        app=App(
            argv=tuple(app["argv"]),
            files_read=tuple(files.get("read", ())),
            files_exec=tuple(files.get("exec", ())),
            max_memory_mb=app["process"]["max_memory_mb"],
            max_pids=app["process"]["max_pids"],
            scratch_mb=scratch_mb,
            scratch_inodes=scratch_inodes,
            env=tuple(app.get("env", {}).items()),
            home_seed=app.get("home_seed"),
            workspace=app.get("workspace", "api"),
            cwd=app.get("cwd", "private"),
            bind_tcp=tuple(app.get("bind_tcp", ())),
        ),
        roles=started_roles(document),
        edges=effective_edges(document),
    )
