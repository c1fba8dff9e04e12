"""Each confined component has its own IPC namespace: the host's SysV objects and POSIX queues are neither
listed nor reachable, and what the component makes dies with it (real children, root)."""

from __future__ import annotations

import os
import secrets
import time

import pytest
from kernel_child import as_user, confined, make_spec, run_child, scratch_user

from launcher.kernel import cgroups
from tests.attacks import sysv_ipc
from tests.attacks.sysv_ipc import IPC_CREAT, Objects

pytestmark = pytest.mark.root
SEGMENT = 32 << 20


def _reach(host: Objects) -> dict[str, object]:
    """Every way to the host's objects, what /proc/sysvipc lists, and which namespace the caller is in."""
    return {**sysv_ipc.reach(host), "listed": sum(len(sysv_ipc.listed(kind)) for kind in ("shm", "msg", "sem")),
            "ns": os.readlink("/proc/self/ns/ipc")}


def test_the_hosts_sysv_objects_and_queues_are_out_of_reach() -> None:
    """As the same uid without the namespace (the control) every one is reached; confined, each lookup by key
    or name is ENOENT and each use of a known id EINVAL, and nothing is listed."""
    with scratch_user() as user, sysv_ipc.world_open_objects() as host:
        control = run_child(as_user(user.uid, user.gid), lambda: _reach(host)).report["value"]
        assert {k: v for k, v in control.items() if k not in ("listed", "ns")} == dict.fromkeys(
            ("shm_key", "shm_attach_id", "shm_stat_id", "msg_key", "msg_stat_id", "sem_key", "sem_stat_id",
             "mq_name"), "reached")
        seen = confined(make_spec(user), lambda: _reach(host)).report["value"]
        assert seen.pop("ns") != os.readlink("/proc/self/ns/ipc")
        assert seen == {"shm_key": "ENOENT", "shm_attach_id": "EINVAL", "shm_stat_id": "EINVAL",
                        "msg_key": "ENOENT", "msg_stat_id": "EINVAL", "sem_key": "ENOENT", "sem_stat_id": "EINVAL",
                        "mq_name": "ENOENT", "listed": 0}


def _shmem_bytes(memory_cgroup: str) -> int:
    with open(os.path.join(memory_cgroup, "memory.stat")) as f:
        stat = dict(line.split() for line in f.read().splitlines())
    return int(stat["shmem"])


def _make_and_leave(key: int, queue: str, memory_cgroup: str) -> dict[str, object]:
    """What an app leaves behind on purpose: a 32 MiB segment never removed, a queue, a semaphore set."""
    shmid = sysv_ipc.shm_get(key, SEGMENT, IPC_CREAT | 0o600)
    sysv_ipc.shm_fill(shmid, SEGMENT)
    sysv_ipc.msg_get(key, IPC_CREAT | 0o600)
    sysv_ipc.sem_get(key, 1, IPC_CREAT | 0o600)
    sysv_ipc.mq_close(sysv_ipc.mq_open(queue, os.O_CREAT | os.O_RDWR))
    return {"listed": [int(row["key"]) for row in sysv_ipc.listed("shm")], "shmem": _shmem_bytes(memory_cgroup)}


def _host_keys(key: int) -> list[str]:
    return [kind for kind in ("shm", "msg", "sem") if any(int(r["key"]) == key for r in sysv_ipc.listed(kind))]


def test_what_a_component_makes_in_its_namespace_dies_with_it() -> None:
    """The segment is charged to the child's memory cgroup while it lives; once its last process is gone the
    namespace is freed and the charge with it (the kernel frees a dead namespace's objects asynchronously,
    so the test waits for it). Without the namespace it stays in the host's, listed and charged."""
    key, queue = sysv_ipc.scratch_key(), f"/sh-test-{secrets.token_hex(4)}"
    sid = f"t{secrets.token_hex(4)}"[:8]
    paths = cgroups.cgroup_paths(sid, "app")
    try:
        with scratch_user() as user:
            handle = cgroups.create_cgroup(sid, "app", 256 << 20, 16)
            memory = next(p for p in handle.paths if "/memory/" in p)
            spec = make_spec(user, cgroup=handle)
            made = confined(spec, lambda: _make_and_leave(key, queue, memory)).report["value"]
            assert made["listed"] == [key] and made["shmem"] >= SEGMENT  # its own, resident and charged
            assert _host_keys(key) == []
            assert sysv_ipc.errno_of(lambda: sysv_ipc.mq_close(sysv_ipc.mq_open(queue))) == "ENOENT"
            deadline = time.monotonic() + 30
            while (charged := _shmem_bytes(memory)) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert charged == 0, f"{charged} bytes of shmem still charged: the segment outlived its namespace"
    finally:
        sysv_ipc.remove_by_key(key, queue)
        for path in paths:
            cgroups.delete_cgroup(path)
