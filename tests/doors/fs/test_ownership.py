"""The kernel facts behind the ownership decision (docs/decisions/fs.md), watched on this kernel.

Numeric uids without accounts are used, so nothing is left in /etc/passwd.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trio

OWNER = 61301  # the workspace's owner (the fs door runs as this uid under design (a))
APP = 61302  # the app's uid
OTHER = 61303  # a door uid under design (b)


def _in_child(action: Callable[[], Any]) -> Any:
    """Run `action` in a forked child; return what it returned (JSON) or raise what it raised."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            result: Any = {"ok": action()}
        except BaseException as exc:  # report it to the parent, never run the parent's code
            result = {"error": f"{type(exc).__name__}: {exc}", "errno": getattr(exc, "errno", None)}
        os.write(write_fd, json.dumps(result).encode())
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as reader:
        answer = json.loads(reader.read() or b'{"error": "child died"}')
    os.waitpid(pid, 0)
    return answer


def _become(uid: int) -> None:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


@pytest.fixture
def outside() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="sharness-fs-own-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.root
def test_landlock_does_not_fence_chown_or_chmod(workspace: str, outside: str) -> None:
    """Why not CAP_CHOWN/CAP_FOWNER: Landlock (ABI <= 7) does not restrict metadata changes."""
    from launcher.kernel.landlock import LandlockRules, apply_landlock

    victim = os.path.join(outside, "victim")
    open(victim, "w").close()

    def confined() -> list[str]:
        apply_landlock(LandlockRules(read=("/usr", "/proc"), write=(workspace,)), 7)
        outcomes = []
        try:
            open(os.path.join(outside, "new"), "w").close()
            outcomes.append("write allowed")
        except PermissionError:
            outcomes.append("write refused")
        os.chown(victim, OTHER, OTHER)  # would raise if Landlock held it
        os.chmod(victim, 0o4755)
        outcomes.append("chown and chmod allowed")
        return outcomes

    answer = _in_child(confined)
    assert answer == {"ok": ["write refused", "chown and chmod allowed"]}, answer
    st = os.stat(victim)
    assert st.st_uid == OTHER and st.st_mode & stat.S_ISUID


@pytest.mark.root
def test_chown_and_fowner_without_dac_override_cannot_write_the_owners_workspace(workspace: str) -> None:
    """Design (b) would also need CAP_DAC_OVERRIDE: CAP_CHOWN + CAP_FOWNER alone are refused by DAC."""
    os.chown(workspace, OWNER, OWNER)
    os.chmod(workspace, 0o755)
    probe = f"open({os.path.join(workspace, 'x')!r}, 'w')"
    caps = "+chown,+fowner"
    result = subprocess.run(["setpriv", f"--reuid={OTHER}", f"--regid={OTHER}", "--clear-groups",
                             f"--inh-caps={caps}", f"--ambient-caps={caps}", "/usr/bin/python3", "-c", probe],
                            capture_output=True, text=True, check=False)
    assert result.returncode != 0 and "PermissionError" in result.stderr
    assert os.listdir(workspace) == []


@pytest.mark.root
def test_door_as_the_owner_writes_owned_files_while_the_app_uid_is_refused(door_factory: Any,
                                                                          workspace: str) -> None:
    """Design (a): the door's writes land owned by the owner, 0644, no set-id bit; the app uid gets EACCES."""
    os.chown(workspace, OWNER, OWNER)
    os.chmod(workspace, 0o755)
    door = door_factory({"exec": ["bin"]})

    def app_writes_directly() -> str:
        _become(APP)
        open(os.path.join(workspace, "direct"), "w").close()
        return "written"

    def door_writes() -> list[int]:
        _become(OWNER)
        statuses = [trio.run(door.request, "PUT", "/v0/fs/files/through-door", b"hello").status]
        statuses.append(trio.run(door.request, "POST", "/v0/fs/mkdir/bin").status)
        statuses.append(trio.run(door.request, "PUT", "/v0/fs/files/bin/tool?exec=1", b"#!/bin/sh\n").status)
        return statuses

    refused = _in_child(app_writes_directly)
    assert refused.get("errno") == errno.EACCES, refused
    assert _in_child(door_writes) == {"ok": [201, 201, 201]}
    for name, mode in (("through-door", 0o644), ("bin", 0o755), ("bin/tool", 0o755)):
        st = os.stat(os.path.join(workspace, name))
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (OWNER, OWNER, mode), name
    assert sorted(os.listdir(workspace)) == ["bin", "through-door"]
