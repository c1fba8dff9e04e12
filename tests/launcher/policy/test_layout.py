"""Every name and path of a session, derived from its id; hostile ids refused before any path exists."""

from __future__ import annotations

import itertools

import pytest

from launcher.policy.layout import (
    HOST_NETWORK,
    LOOPBACK_ONLY,
    PLAN_PATHS,
    SID_PLACEHOLDER,
    SessionLayout,
    SessionPaths,
    door_client_groups,
    groups_of,
    valid_sid,
)
from pki.vocabulary import DEFAULT_EDGES, DOOR_ORDER, ROLES

SID = "0123abcd"
LAYOUT = SessionLayout(SID)
HOSTILE_SIDS = (
    "", "0123abc", "0123abcde", "0123ABCD", "0123abcg", "0123abc-", "0123abc/", "../../..", "/etc/x00",
    "0123abcd\n", "\n0123abcd", " 0123abcd", "0123abcd ", "0123\x00abc", "0123abcd/../../etc",
    "０１２３ａｂｃｄ",  # fullwidth: \d and str.isalnum would take these
    "٠١٢٣٤٥٦٧",  # Arabic-Indic digits
    "<sid>x", "*", "sh-0123",
)


@pytest.mark.parametrize(("method", "arg", "want"), [
    ("state_dir", None, "/run/sharness/sessions/0123abcd"),
    ("runtime_dir", None, "/run/sharness/0123abcd"),
    ("doors_dir", None, "/run/sharness/0123abcd/doors"),
    ("audit_dir", None, "/var/lib/sharness/sessions/0123abcd"),
    ("user", "app", "sh-0123abcd-app"),
    ("user", "shell", "sh-0123abcd-shell"),
    ("clients_group", "fs", "sh-0123abcd-to-fs"),
    ("clients_group", "model", "sh-0123abcd-to-model"),
    ("private_dir", "app", "/run/sharness/0123abcd/app"),
    ("private_dir", "keys", "/run/sharness/0123abcd/keys"),
    ("socket_path", "fs", "/run/sharness/0123abcd/doors/fs.sock"),
    ("socket_path", "net", "/run/sharness/0123abcd/doors/net.sock"),
    ("netns", "app", "sh-0123abcd-app"),
    ("netns", "shell", "sh-0123abcd-shell"),
    ("netns", "fs", "sh-0123abcd-fs"),
    ("netns", "keys", "sh-0123abcd-keys"),
    ("netns", "net", None),
    ("netns", "model", None),
])
def test_every_name_and_path(method: str, arg: str | None, want: str | None) -> None:
    value = getattr(LAYOUT, method)
    assert (value if arg is None else value(arg)) == want


def test_the_roots_can_be_moved_and_everything_follows() -> None:
    moved = SessionLayout(SID, run_root="/tmp/r", sessions_root="/tmp/r/s", audit_root="/tmp/a")
    assert (moved.state_dir, moved.runtime_dir, moved.audit_dir) == ("/tmp/r/s/0123abcd", "/tmp/r/0123abcd",
                                                                     "/tmp/a/0123abcd")
    assert moved.socket_path("fs") == "/tmp/r/0123abcd/doors/fs.sock"
    assert moved.private_dir("app") == "/tmp/r/0123abcd/app"


@pytest.mark.parametrize("role", ROLES)
def test_names_fit_the_kernel_and_shadow_limits(role: str) -> None:
    assert len(LAYOUT.user(role)) <= 31  # useradd's limit is 32 with the NUL
    assert len(LAYOUT.clients_group(role)) <= 31
    netns = LAYOUT.netns(role)
    assert netns is None or (len(netns) < 255 and "/" not in netns)


def test_every_path_lies_under_its_root_and_names_its_session() -> None:
    paths = [LAYOUT.doors_dir, *(LAYOUT.private_dir(role) for role in ROLES),
             *(LAYOUT.socket_path(door) for door in DOOR_ORDER)]
    assert all(path.startswith(f"{LAYOUT.runtime_dir}/") for path in paths)
    assert LAYOUT.state_dir.startswith("/run/sharness/sessions/") and LAYOUT.audit_dir.endswith(f"/{SID}")
    assert len(set(paths)) == len(paths)


def test_two_sessions_share_no_path() -> None:
    other = SessionLayout("0123abce")
    ours = {LAYOUT.runtime_dir, LAYOUT.state_dir, LAYOUT.audit_dir, *(LAYOUT.user(role) for role in ROLES)}
    theirs = {other.runtime_dir, other.state_dir, other.audit_dir, *(other.user(role) for role in ROLES)}
    assert not ours & theirs
    assert not other.runtime_dir.startswith(LAYOUT.runtime_dir)


@pytest.mark.parametrize("sid", HOSTILE_SIDS)
def test_hostile_session_ids_are_refused(sid: str) -> None:
    assert not valid_sid(sid)
    with pytest.raises(ValueError, match="8 lowercase hex characters"):
        SessionLayout(sid)
    with pytest.raises(ValueError, match="8 lowercase hex characters"):
        SessionPaths(sid)


@pytest.mark.parametrize("sid", [None, 12345678, b"0123abcd"])
def test_a_session_id_is_a_string(sid: object) -> None:
    assert not valid_sid(sid)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        SessionLayout(sid)  # type: ignore[arg-type]


@pytest.mark.parametrize("sid", ["00000000", "ffffffff", "0123abcd", "deadbeef"])
def test_good_session_ids(sid: str) -> None:
    assert valid_sid(sid) and SessionLayout(sid).sid == sid


def test_the_placeholder_is_only_for_the_plan() -> None:
    assert not valid_sid(SID_PLACEHOLDER)
    with pytest.raises(ValueError):
        SessionLayout(SID_PLACEHOLDER)
    assert PLAN_PATHS.private_dir("app") == "/run/sharness/<sid>/app"
    assert PLAN_PATHS.socket_path("fs") == "/run/sharness/<sid>/doors/fs.sock"
    assert not isinstance(PLAN_PATHS, SessionLayout)  # nothing that creates resources takes it


def test_every_role_has_one_network_kind() -> None:
    assert not LOOPBACK_ONLY & HOST_NETWORK
    assert set(LOOPBACK_ONLY) == {"app", "shell"}
    assert set(HOST_NETWORK) == {"net", "model"}
    assert set(ROLES) - LOOPBACK_ONLY - HOST_NETWORK == {"fs", "keys"}


EDGE_CASES = [
    # (edges, started roles, the client group of each started door)
    (DEFAULT_EDGES, ROLES, {"fs": {"app"}, "net": {"app", "shell"}, "keys": {"net", "model"}, "shell": {"app"},
                            "model": {"app"}}),
    (DEFAULT_EDGES, ("app", "fs"), {"fs": {"app"}}),
    (DEFAULT_EDGES, ("app", "net", "shell"), {"net": {"app", "shell"}, "shell": {"app"}}),
    (frozenset(), ("app", "fs", "net"), {"fs": set(), "net": set()}),
    (frozenset({("app", "fs"), ("shell", "fs")}), ("app", "fs"), {"fs": {"app"}}),  # shell not started
    (frozenset({("app", "model"), ("model", "keys")}), ("app", "keys", "model"), {"keys": {"model"},
                                                                                  "model": {"app"}}),
]


@pytest.mark.parametrize(("edges", "roles", "want"), EDGE_CASES)
def test_door_client_groups_follow_the_edges_of_started_roles(
    edges: frozenset[tuple[str, str]], roles: tuple[str, ...], want: dict[str, set[str]],
) -> None:
    groups = door_client_groups(frozenset(edges), roles)
    assert {door: set(clients) for door, clients in groups.items()} == want
    assert "app" not in groups  # the app serves nothing


@pytest.mark.parametrize(("edges", "roles", "want"), EDGE_CASES)
def test_a_role_joins_exactly_the_groups_of_the_doors_it_calls(
    edges: frozenset[tuple[str, str]], roles: tuple[str, ...], want: dict[str, set[str]],
) -> None:
    groups = door_client_groups(frozenset(edges), roles)
    for role in roles:
        joined = groups_of(role, groups)
        assert set(joined) == {door for door in roles if (role, door) in edges}
        assert list(joined) == sorted(joined, key=DOOR_ORDER.index)


def test_groups_of_a_role_outside_every_group() -> None:
    assert groups_of("app", {}) == ()
    for role, door in itertools.product(ROLES, DOOR_ORDER):
        assert groups_of(role, {door: frozenset()}) == ()
