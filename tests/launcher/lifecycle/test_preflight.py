"""Preflight: the workspace owner, and world-writable sockets the app could reach (Landlock ABI < 9)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from launcher.lifecycle.preflight import PreflightError, reachable_sockets, refuse_reachable_sockets, workspace_owner


def _socket(path: Path, mode: int) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    path.chmod(mode)
    return sock


def test_world_writable_sockets_are_found_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "deep" / "er").mkdir(parents=True)
    open_sock = _socket(tmp_path / "deep" / "er" / "db.sock", 0o777)
    closed_sock = _socket(tmp_path / "private.sock", 0o660)
    (tmp_path / "link.sock").symlink_to(tmp_path / "deep" / "er" / "db.sock")
    (tmp_path / "file").write_text("x")
    try:
        scan = reachable_sockets((str(tmp_path),))
        assert scan.reachable == (str(tmp_path / "deep" / "er" / "db.sock"),) and scan.complete
        assert reachable_sockets((str(tmp_path / "deep" / "er" / "db.sock"),)).reachable  # a path that is one
        assert reachable_sockets((str(tmp_path / "missing"),)).reachable == ()
    finally:
        open_sock.close()
        closed_sock.close()


def test_the_walk_says_when_it_stopped_early(tmp_path: Path) -> None:
    for index in range(20):
        (tmp_path / f"f{index}").write_text("")
    assert reachable_sockets((str(tmp_path),), limit=5).complete is False
    assert reachable_sockets((str(tmp_path),), limit=50).complete is True


def test_refusal_names_the_socket_and_abi_9_needs_no_scan(tmp_path: Path) -> None:
    sock = _socket(tmp_path / "pg.sock", 0o777)
    try:
        with pytest.raises(PreflightError) as refused:
            refuse_reachable_sockets((str(tmp_path),), landlock_abi=7)
        assert str(tmp_path / "pg.sock") in refused.value.message and refused.value.row == "app.files.read"
        assert refuse_reachable_sockets((str(tmp_path),), landlock_abi=9) is None
    finally:
        sock.close()


@pytest.mark.root
def test_a_root_owned_workspace_is_refused_and_another_owner_is_returned(tmp_path: Path) -> None:
    with pytest.raises(PreflightError, match="owned by root"):
        workspace_owner(str(tmp_path))
    os.chown(tmp_path, 65534, 65534)
    assert (workspace_owner(str(tmp_path)).uid, workspace_owner(str(tmp_path)).gid) == (65534, 65534)
    (tmp_path / "ws").symlink_to(tmp_path)
    with pytest.raises(PreflightError, match="not a directory"):
        workspace_owner(str(tmp_path / "ws"))
