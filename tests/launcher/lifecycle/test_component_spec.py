"""The shell's overlay in its ConfinementSpec: the workspace's bind read-only (the lower layer), the overlay's
layers the shell user's, the workspace owner's ids shown as the shell's (launcher/lifecycle/component_spec.py)."""

from __future__ import annotations

from manifests.samples import load, sample

from launcher.lifecycle.component_spec import overlay_mount, private_root_binds
from launcher.lifecycle.create import Resources
from launcher.policy.confine_plan import python_paths
from launcher.policy.confinement import confinement_of
from launcher.policy.layout import SessionLayout

LAYOUT = SessionLayout("0123abcd")
WORKSPACE = "/srv/sh-test/ws"


def test_in_overlay_mode_the_workspace_bind_stays_read_only_and_the_overlay_is_mounted_over_it() -> None:
    manifest = load(sample(doors__shell__workspace="overlay", doors__fs__hidden=[]))
    confinement = confinement_of(manifest, "shell", LAYOUT, python_paths(), "/etc/resolv.conf")
    assert WORKSPACE in confinement.allowance.write and WORKSPACE not in confinement.allowance.exec
    binds = {bind.path: bind for bind in private_root_binds(confinement, {})}
    assert binds[WORKSPACE].writable is False
    resources = Resources()
    resources.uids.update(shell=3001, fs=1000)
    resources.gids.update(shell=3001, fs=1001)
    mount = overlay_mount(confinement.overlay, resources, "shell")
    assert mount is not None
    assert (mount.workspace, mount.upper) == (WORKSPACE, "/run/sharness/0123abcd/shell/upper")
    assert (mount.uid, mount.gid, mount.owner_uid, mount.owner_gid) == (3001, 3001, 1000, 1001)
    assert mount.size_bytes == 256 * 1024 * 1024 and mount.inodes == 256 * 256


def test_without_an_overlay_there_is_none_to_mount() -> None:
    manifest = load(sample(doors__shell__workspace="read", doors__fs__hidden=[]))
    confinement = confinement_of(manifest, "shell", LAYOUT, python_paths(), "/etc/resolv.conf")
    assert confinement.overlay is None and overlay_mount(None, Resources(), "shell") is None
    assert WORKSPACE not in confinement.allowance.write
