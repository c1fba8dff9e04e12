"""The ConfinementSpec of one component in one session: the pure plan (launcher/policy/confinement.py) joined
with what the session created for it (ids, netns, cgroups) and the paths its preflight pinned."""

from __future__ import annotations

import os
import resource
from dataclasses import replace

from launcher.kernel.confine import ConfinementSpec
from launcher.kernel.landlock import LandlockRules
from launcher.kernel.mountns import Bind, FuseAttach, ScratchMount
from launcher.kernel.overlay import OverlayMount
from launcher.kernel.seccomp import FS_DOOR_EXTRA
from launcher.lifecycle.create import Resources
from launcher.lifecycle.preflight_paths import Pins
from launcher.policy.confine_plan import SYSTEM_READ, Allowance
from launcher.policy.confinement import Confinement
from launcher.policy.layout import DEVPTS
from launcher.policy.overlay import Overlay
from launcher.policy.scratch import Scratch


def landlock_rules(allowance: Allowance) -> LandlockRules:
    """The Landlock rules of an allowance (system files some distributions lack granted where present)."""
    return LandlockRules(
        read=allowance.read,
        write=allowance.write,
        exec=allowance.exec,
        tcp_bind=allowance.tcp_bind,
        tcp_connect=allowance.tcp_connect,
        scope_signals=True,
        scope_abstract_unix=True,
        if_present=SYSTEM_READ,
    )


def private_root_binds(confinement: Confinement, pins: Pins, mounted: str | None = None) -> tuple[Bind, ...]:
    """Its private root's paths: writable where Landlock grants writing, pinned where the manifest names them;
    never `mounted` (the workspace the fs door's FUSE mount shows: the host's directory is not bound there)."""
    writable = set(confinement.allowance.write)
    if confinement.overlay is not None:  # the workspace's bind is the overlay's lower layer: read-only
        writable.discard(confinement.overlay.workspace)
    # The scratch dirs are mount points inside the private dir's bind: their tmpfs covers them, nothing of the
    # host's is bound there; the same for the workspace's FUSE mount.
    covered = set(confinement.scratch.dirs) if confinement.scratch is not None else set()
    if mounted is not None:
        covered.add(mounted)
    return tuple(Bind(path, path in writable, pins.get(path)) for path in dict.fromkeys(confinement.mount_keep)
                 if path not in covered)


def spec_of(
    confinement: Confinement, resources: Resources, landlock_abi: int, env: dict[str, str], keep_fds: tuple[int, ...],
    pins: Pins, workspace_mount: FuseAttach | None = None,
) -> ConfinementSpec:
    """Everything the kernel steps of launcher/kernel/confine.py need to confine `confinement.role` this session."""
    role, allowance = confinement.role, confinement.allowance
    # The shell door makes its commands' cgroups under its own (delegated: launcher/kernel/cgroups.py).
    delegated = resources.cgroups[role].paths if role == "shell" and role in resources.cgroups else ()
    allowance = replace(allowance, write=(*allowance.write, *delegated))
    return ConfinementSpec(
        uid=resources.uids[role],
        gid=resources.gids[role],
        groups=tuple(resources.door_gids[door] for door in confinement.door_groups),
        netns_fd=resources.netns_fds.get(role),
        cgroup=resources.cgroups.get(role),
        rlimits={resource.RLIMIT_CORE: (0, 0), resource.RLIMIT_NOFILE: (confinement.nofile, confinement.nofile)},
        landlock=landlock_rules(allowance),
        landlock_abi=landlock_abi,
        seccomp_deny_inet=allowance.deny_inet,
        seccomp_allow_udp=allowance.allow_udp,
        keep_fds=keep_fds,
        env=env,
        cwd=confinement.cwd,
        parent_pid=os.getpid(),
        seccomp_extra=FS_DOOR_EXTRA if confinement.owner_fenced else (),
        mount_keep=(*private_root_binds(confinement, pins, workspace_mount.path if workspace_mount else None),
                    *(Bind(path, True) for path in delegated)),
        scratch=scratch_mount(confinement.scratch, resources.uids[role], resources.gids[role]),
        devpts=DEVPTS in allowance.write,  # its own devpts (the shell's ttys), mounted in its private root
        workspace_mount=workspace_mount,
        overlay=overlay_mount(confinement.overlay, resources, role),
    )


def overlay_mount(overlay: Overlay | None, resources: Resources, role: str) -> OverlayMount | None:
    """The overlay to mount for the shell: its layers the shell user's, the workspace owner's files shown as
    its own (the owner is the fs door's user, launcher/lifecycle/create.py); None without one."""
    if overlay is None:
        return None
    return OverlayMount(overlay.workspace, overlay.upper, overlay.size_bytes, overlay.inodes, resources.uids[role],
                        resources.gids[role], resources.uids["fs"], resources.gids["fs"])


def scratch_mount(scratch: Scratch | None, uid: int, gid: int) -> ScratchMount | None:
    """The scratch tmpfs to mount for a component, owned by its ids; None when it has none."""
    if scratch is None:
        return None
    return ScratchMount(scratch.dirs, scratch.size_bytes, scratch.inodes, uid, gid)
