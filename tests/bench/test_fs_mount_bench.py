"""The mount bench's reading of the fs door's CPU over a phase: the samples just outside the phase bound it, and a
phase the samples do not bracket gives no figure rather than a wrong one; --one-cpu finds the app and pins it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from bench import fs_mount_bench
from bench.fs_mount_bench import DoorCpu


def _door(samples: list[tuple[float, int]]) -> DoorCpu:
    door = DoorCpu.__new__(DoorCpu)  # no sampler thread: the samples are given
    door.samples = samples
    return door


@pytest.mark.parametrize(("samples", "span", "expected"), [
    ([(0.0, 0), (1.0, 1_000_000), (2.0, 3_000_000), (3.0, 4_000_000)], [0.5, 2.5, 100], 40.0),
    ([(0.0, 0), (1.0, 2_000_000), (2.0, 2_000_000)], [0.5, 1.5, 1000], 2.0),
    ([(1.0, 0), (2.0, 1_000_000)], [0.5, 1.5, 10], None),  # nothing before the phase began
    ([(0.0, 0), (1.0, 1_000_000)], [0.5, 1.5, 10], None),  # nothing after it ended
    ([(0.0, 0), (3.0, 1_000_000)], [1.0, 2.0, 10], None),  # no sample inside: the door was not found in time
])
def test_door_cpu_per_operation(samples: list[tuple[float, int]], span: list[float], expected: float | None) -> None:
    assert _door(samples).us_per_op(span) == expected


def test_the_app_is_found_by_its_workload_and_pinned_with_every_thread() -> None:
    # A child whose argv names the workload, as the session's app does, with a second thread.
    code = ("import threading, time; threading.Thread(target=time.sleep, args=(30,), daemon=True).start(); "
            "time.sleep(30)")
    child = subprocess.Popen([sys.executable, "-c", code, fs_mount_bench.WORKLOAD])
    try:
        found = None
        for _ in range(200):  # until its threads exist
            found = fs_mount_bench._workload_under(os.getpid())
            if found is not None and len(os.listdir(f"/proc/{found}/task")) == 2:
                break
            time.sleep(0.01)
        assert found == child.pid
        cpu = min(os.sched_getaffinity(0))
        fs_mount_bench.pin_tasks((child.pid,), cpu)
        assert {os.sched_getaffinity(int(task)) == {cpu} for task in os.listdir(f"/proc/{child.pid}/task")} == {True}
        assert fs_mount_bench._workload_under(child.pid) is None  # only processes beneath the ancestor count
    finally:
        child.kill()
        child.wait()
