"""One component's confinement before the session's ids exist: groups, limits, cwd, the fs door's extra fence,
and what stays visible in its private root."""

from __future__ import annotations

import pytest
from manifest_shapes import CASES, PYTHON, SHAPES

from launcher.policy.confinement import APP_NOFILE, DOOR_NOFILE, Confinement, confinement_of
from launcher.policy.layout import SessionLayout
from pki.vocabulary import DOOR_ORDER, ROLES

LAYOUT = SessionLayout("0123abcd")
RESOLV = "/run/systemd/resolve/stub-resolv.conf"


def _confinement(shape: str, role: str) -> Confinement:
    return confinement_of(SHAPES[shape], role, LAYOUT, PYTHON, RESOLV)


@pytest.mark.parametrize(("shape", "role"), CASES)
def test_a_role_joins_the_client_group_of_each_door_it_calls_and_no_other(shape: str, role: str) -> None:
    manifest = SHAPES[shape]
    called = [door for door in DOOR_ORDER if (role, door) in manifest.edges and door in manifest.roles]
    assert list(_confinement(shape, role).door_groups) == called


@pytest.mark.parametrize(("shape", "role"), CASES)
def test_limits_cwd_and_the_fs_doors_fence(shape: str, role: str) -> None:
    confinement = _confinement(shape, role)
    assert confinement.role == role
    assert confinement.nofile == (APP_NOFILE if role == "app" else DOOR_NOFILE)
    assert confinement.cwd == ("/" if role == "fs" else f"/run/sharness/0123abcd/{role}")
    assert confinement.owner_fenced == (role == "fs")


@pytest.mark.parametrize(("shape", "role"), CASES)
def test_the_private_root_keeps_its_grants_its_edges_sockets_and_nothing_else(shape: str, role: str) -> None:
    manifest = SHAPES[shape]
    confinement = _confinement(shape, role)
    allowance = confinement.allowance
    keep = set(confinement.mount_keep)
    sockets = {LAYOUT.socket_path(server) for client, server in manifest.edges if client == role}
    resolver = {RESOLV} if role in ("net", "model") else set()  # the egress doors' resolver reads it
    grants = {*allowance.read, *allowance.write, *allowance.exec} - {"/dev/pts"}  # its own devpts: mounted, not bound
    assert keep == {*grants, LAYOUT.private_dir(role), *sockets, *resolver}
    assert "/dev/pts" not in keep  # the host's ptys are never in a private root
    assert not keep & {LAYOUT.private_dir(other) for other in ROLES if other != role}


def test_the_app_with_no_edges_sees_no_door_socket() -> None:
    keep = _confinement("app only", "app").mount_keep
    assert not [path for path in keep if path.endswith(".sock")]
