"""One component's confinement as the manifest and the session's layout decide it. Pure: no I/O.

launcher/lifecycle/session.py adds what only exists once the session is created (uids, gids, namespace fds,
cgroups) and hands the result to the kernel as a ConfinementSpec.
"""

from __future__ import annotations

from dataclasses import dataclass

from launcher.manifest import Manifest
from launcher.policy.confine_plan import Allowance, allowance_of
from launcher.policy.layout import DEVPTS, SessionPaths, door_client_groups, groups_of
from launcher.policy.overlay import Overlay, overlay_of
from launcher.policy.scratch import Scratch, scratch_of

DOOR_NOFILE = 4096
APP_NOFILE = 1024


@dataclass(frozen=True)
class Confinement:
    """Everything about one component's confinement that does not need the session's resources."""

    role: str
    allowance: Allowance
    door_groups: tuple[str, ...]  # the doors whose client groups it joins, in door order
    nofile: int
    cwd: str
    # The fs door runs as the workspace owner: seccomp also takes socket() and path metadata calls from it.
    owner_fenced: bool
    mount_keep: tuple[str, ...]
    scratch: Scratch | None  # HOME and TMPDIR on a tmpfs of its own, mounted in its private root
    overlay: Overlay | None = None  # the shell's overlay of the workspace, mounted in its private root


def app_start_dir(manifest: Manifest, layout: SessionPaths) -> str:
    """Where the app starts (app.cwd): the workspace when it asks for it, else its private dir."""
    return manifest.workspace if manifest.app.cwd == "workspace" else layout.private_dir("app")


def confinement_of(
    manifest: Manifest, role: str, layout: SessionPaths, python: tuple[str, ...], resolv_conf: str,
) -> Confinement:
    """The confinement of `role`; `resolv_conf` is where /etc/resolv.conf resolves to on this host."""
    allowance = allowance_of(manifest, role, layout, python)
    fs_door = role == "fs"
    return Confinement(
        role=role,
        allowance=allowance,
        door_groups=groups_of(role, door_client_groups(manifest.edges, manifest.roles)),
        nofile=APP_NOFILE if role == "app" else DOOR_NOFILE,
        cwd="/" if fs_door else app_start_dir(manifest, layout) if role == "app" else layout.private_dir(role),
        owner_fenced=fs_door,
        mount_keep=mount_keep(role, allowance, layout, manifest.edges, resolv_conf),
        scratch=scratch_of(manifest, role, layout),
        overlay=overlay_of(manifest, role, layout),
    )


def mount_keep(
    role: str, allowance: Allowance, layout: SessionPaths, edges: frozenset[tuple[str, str]], resolv_conf: str,
) -> tuple[str, ...]:
    """What stays visible in the component's private root: its own paths and its edges' sockets."""
    sockets = tuple(layout.socket_path(server) for client, server in sorted(edges) if client == role)
    # DEVPTS is a devpts instance the component gets of its own (launcher/kernel/mountns.py): never the host's.
    keep = tuple(path for path in (*allowance.read, *allowance.write, *allowance.exec, *sockets,
                                   layout.private_dir(role)) if path != DEVPTS)
    if allowance.allow_udp:  # an egress door's resolver reads resolv.conf, which may point into /run
        keep = (*keep, resolv_conf)
    return keep
