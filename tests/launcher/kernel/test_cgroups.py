"""cgroups: the pure layout decision, then real limits the kernel enforces on a confined child."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import signal
import time
from collections.abc import Iterator

import pytest
from kernel_child import confined, confined_raw, make_spec, scratch_user

from launcher.kernel import cgroups
from launcher.kernel.cgroups import CgroupError, CgroupHandle, ControllerPlace, parse_mountinfo, place_controllers
from launcher.kernel.confine import close_fds_except

HYBRID = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
UNIFIED = "30 23 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"

# --- pure ---------------------------------------------------------------------------------------


def test_hybrid_layout_uses_v1_when_the_unified_hierarchy_lacks_the_controllers() -> None:
    places = place_controllers(parse_mountinfo(HYBRID), frozenset())
    assert places == {"memory": ControllerPlace("v1", "/sys/fs/cgroup/memory"),
                      "pids": ControllerPlace("v1", "/sys/fs/cgroup/pids")}
    assert cgroups.cgroup_dirs(places, "ab12cd34", "app") == (
        "/sys/fs/cgroup/memory/sharness/ab12cd34/app", "/sys/fs/cgroup/pids/sharness/ab12cd34/app")


def test_v2_wins_per_controller_when_it_offers_it() -> None:
    hybrid = place_controllers(parse_mountinfo(HYBRID), frozenset({"pids"}))
    assert hybrid["pids"] == ControllerPlace("v2", "/sys/fs/cgroup/unified") and hybrid["memory"].version == "v1"
    unified = place_controllers(parse_mountinfo(UNIFIED), frozenset({"memory", "pids", "cpu"}))
    assert cgroups.cgroup_dirs(unified, "ab12cd34", "fs") == ("/sys/fs/cgroup/sharness/ab12cd34/fs",)
    assert place_controllers(parse_mountinfo(UNIFIED), frozenset()) == {}


@pytest.mark.parametrize("bad", ["../x", "a/b", "", "UP"])
def test_names_that_could_escape_the_tree_are_refused(bad: str) -> None:
    with pytest.raises(CgroupError, match="refusing"):
        cgroups.cgroup_dirs(place_controllers(parse_mountinfo(UNIFIED), frozenset({"memory"})), bad, "app")


def test_delete_refuses_anything_but_a_session_cgroup() -> None:
    for path in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup/memory/process_api/x", "relative/sharness/a/b"):
        with pytest.raises(CgroupError, match="refusing"):
            cgroups.delete_cgroup(path)


# --- kernel -------------------------------------------------------------------------------------


@contextlib.contextmanager
def session_cgroup(role: str, memory: int, pids: int) -> Iterator[CgroupHandle]:
    sid = f"t{secrets.token_hex(4)}"[:8]
    paths = cgroups.cgroup_paths(sid, role)
    try:
        yield cgroups.create_cgroup(sid, role, memory, pids)
    finally:
        for path in paths:
            cgroups.delete_cgroup(path)
        for path in paths:
            assert not os.path.exists(os.path.dirname(path)), f"{path}'s session dir left behind"


def _read(path: str, name: str) -> str:
    with open(os.path.join(path, name)) as f:
        return f.read()


@pytest.mark.root
def test_limits_are_written_and_the_child_joins() -> None:
    with scratch_user() as user, session_cgroup("app", 64 << 20, 32) as handle:
        result = confined(make_spec(user, cgroup=handle), lambda: _read("/proc/self", "cgroup"))
        for path in handle.paths:
            assert path.split("/sys/fs/cgroup/", 1)[1].split("/", 1)[1] in result.report["value"]
            if os.path.exists(os.path.join(path, "memory.limit_in_bytes")):
                assert int(_read(path, "memory.limit_in_bytes")) == 64 << 20
                assert int(_read(path, "memory.memsw.limit_in_bytes")) == 64 << 20
            if os.path.exists(os.path.join(path, "pids.max")):
                assert _read(path, "pids.max").strip() == "32"


@pytest.mark.root
def test_allocating_past_the_memory_limit_is_oom_killed() -> None:
    def allocate() -> int:
        blob = b"\x01" * (256 << 20)  # written, so every page is charged
        return len(blob)

    with scratch_user() as user, session_cgroup("app", 32 << 20, 32) as handle:
        result = confined(make_spec(user, cgroup=handle), allocate)
        assert result.killed_by == signal.SIGKILL and result.report == {}
        memory = next(p for p in handle.paths if "memory" in p)
        if os.path.exists(os.path.join(memory, "memory.failcnt")):  # v1
            # On 6.18 v1 memory.failcnt stays 0 here; the usage peak and the OOM-kill counter show it.
            assert int(_read(memory, "memory.max_usage_in_bytes")) == 32 << 20
            oom = dict(line.split() for line in _read(memory, "memory.oom_control").splitlines())
            assert int(oom["oom_kill"]) >= 1
        else:  # v2
            events = dict(line.split() for line in _read(memory, "memory.events").splitlines())
            assert int(events["oom_kill"]) >= 1


@pytest.mark.root
def test_forking_past_max_pids_gets_eagain_and_delete_kills_what_is_left() -> None:
    def fork_until_refused() -> int:
        while True:
            if os.fork() == 0:  # pragma: no cover - grandchildren wait to be killed
                close_fds_except(())  # not holding the report pipe open
                time.sleep(60)
                os._exit(0)

    with scratch_user() as user, session_cgroup("shell", 64 << 20, 5) as handle:
        result = confined(make_spec(user, cgroup=handle), fork_until_refused)
        assert result.errno == errno.EAGAIN
        pids_path = next(p for p in handle.paths if "pids" in p)
        assert len(_read(pids_path, "cgroup.procs").split()) == 4  # the child exited; its 4 children wait
        if os.path.exists(os.path.join(pids_path, "pids.events")):
            assert int(_read(pids_path, "pids.events").split()[1]) >= 1
    # session_cgroup's delete_cgroup killed the four and removed the directories (checked there).


@pytest.mark.root
def test_delete_is_idempotent() -> None:
    with session_cgroup("keys", 16 << 20, 4) as handle:
        for path in handle.paths:
            cgroups.delete_cgroup(path)
            cgroups.delete_cgroup(path)
            assert not os.path.exists(path)


def _sleeper() -> int:
    """A forked child that waits to be killed (the caller reaps it)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            close_fds_except(())
            signal.pause()
        finally:
            os._exit(0)
    return pid


def _alive(pid: int) -> bool:
    return os.waitpid(pid, os.WNOHANG) == (0, 0)


def _stranger_with_pid(pid: int, attempts: int = 2000) -> int | None:
    """Fork a sleeper that gets exactly `pid` (root: ns_last_pid), retrying when another process takes it."""
    for _ in range(attempts):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        child = _sleeper()
        if child == pid:
            return child
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    return None


@pytest.mark.root
def test_a_pid_that_left_the_cgroup_and_was_reused_is_not_signalled() -> None:
    """The pid is read from cgroup.procs, its process dies, a process outside the cgroup gets the same pid
    (for real, through ns_last_pid), then the kill runs: the stranger lives. A plain kill(pid) kills it."""
    with session_cgroup("app", 64 << 20, 8) as handle:
        pids_path = next(p for p in handle.paths if "pids" in p)
        victim = _sleeper()
        handle.join(victim)
        read_before = [int(p) for p in _read(pids_path, "cgroup.procs").split()]
        assert read_before == [victim]
        os.kill(victim, signal.SIGKILL)
        os.waitpid(victim, 0)
        stranger = _stranger_with_pid(victim)
        assert stranger is not None, f"pid {victim} was never handed out again"
        try:
            assert cgroups.kill_members(pids_path, read_before) == 0
            assert _alive(stranger)
            member = _sleeper()
            handle.join(member)
            assert cgroups.kill_members(pids_path, [stranger, member]) == 1  # the member only
            assert os.waitpid(member, 0)[1] == signal.SIGKILL and _alive(stranger)
        finally:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(stranger, signal.SIGKILL)
                os.waitpid(stranger, 0)


def _make_child_cgroups_and_fill_them(paths: tuple[str, ...]) -> dict[str, object]:
    """As the component: a child cgroup in each hierarchy, a sleeper joined to it, and an attempt on the
    component's own limit file (which delegation leaves root's)."""
    made = []
    for path in paths:
        child = os.path.join(path, "cmd-1")
        os.mkdir(child)
        made.append(child)
    joined_r, joined_w = os.pipe()
    if os.fork() == 0:  # pragma: no cover - the sleeper waits to be killed by delete_cgroup
        close_fds_except((joined_w,))
        for child in made:
            with open(os.path.join(child, "cgroup.procs"), "w") as procs:
                procs.write("0")
        os.write(joined_w, b"j")
        os.close(joined_w)
        time.sleep(600)
        os._exit(0)
    os.close(joined_w)
    assert os.read(joined_r, 1) == b"j"  # in its cgroups before the probe reports
    os.close(joined_r)
    try:
        with open(os.path.join(next(p for p in paths if "pids" in p), "pids.max"), "w") as limit:
            limit.write("max")
        own_limit = "written"
    except OSError as exc:
        own_limit = errno.errorcode[exc.errno or 0]
    return {"made": made, "own_limit": own_limit}


@pytest.mark.root
def test_a_delegated_cgroup_takes_children_but_not_its_own_limits_and_delete_removes_the_tree() -> None:
    with scratch_user() as user, session_cgroup("shell", 64 << 20, 16) as handle:
        control = confined_raw(make_spec(user), lambda: _make_child_cgroups_and_fill_them(handle.paths))
        assert control.report.get("errno") == errno.EACCES  # not delegated: the user cannot mkdir there
        cgroups.delegate(handle, user.uid, user.gid)
        result = confined(make_spec(user), lambda: _make_child_cgroups_and_fill_them(handle.paths))
        value = result.report["value"]
        assert value["own_limit"] == "EACCES" and len(value["made"]) == len(handle.paths)
        pids_child = next(p for p in value["made"] if "pids" in p)
        assert len(_read(pids_child, "cgroup.procs").split()) == 1  # the sleeper, out of its parent's group
    # session_cgroup's delete_cgroup killed the sleeper, removed cmd-1 in each hierarchy, then the rest.
