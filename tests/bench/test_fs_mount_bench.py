"""The mount bench's reading of the fs door's CPU over a phase: the samples just outside the phase bound it, and a
phase the samples do not bracket gives no figure rather than a wrong one."""

from __future__ import annotations

import pytest

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
