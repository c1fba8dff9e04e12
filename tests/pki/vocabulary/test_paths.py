"""pki/vocabulary/paths.py and roles.py: the roots and roles every part agrees on."""

from __future__ import annotations

import os

from pki.vocabulary import (
    AUDIT_ROOT,
    DEFAULT_EDGES,
    DOOR_ORDER,
    HELLO_ROOT,
    NETNS_ROOT,
    REMOVABLE_ROOTS,
    ROLES,
    RUN_ROOT,
    SESSIONS_ROOT,
    STATE_ROOT,
)


def test_roots_are_absolute_normal_and_named_sharness() -> None:
    for path in (RUN_ROOT, SESSIONS_ROOT, STATE_ROOT, AUDIT_ROOT, HELLO_ROOT, NETNS_ROOT):
        assert os.path.isabs(path) and os.path.normpath(path) == path
    assert all("sharness" in path for path in (RUN_ROOT, STATE_ROOT))


def test_what_sessions_leave_lies_under_the_removable_roots() -> None:
    assert os.path.dirname(SESSIONS_ROOT) == RUN_ROOT
    assert os.path.dirname(AUDIT_ROOT) == os.path.dirname(HELLO_ROOT) == STATE_ROOT
    assert REMOVABLE_ROOTS == (RUN_ROOT, STATE_ROOT)


def test_the_app_comes_first_then_the_doors_in_start_order() -> None:
    assert ("app", *DOOR_ORDER) == ROLES and len(set(ROLES)) == len(ROLES)


def test_default_edges_join_known_roles_and_no_role_calls_itself() -> None:
    assert all(client in ROLES and server in DOOR_ORDER and client != server for client, server in DEFAULT_EDGES)
