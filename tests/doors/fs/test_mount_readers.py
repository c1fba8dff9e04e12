"""Who reads the mount's requests (doors/fs/_fuse_serve.FuseReader, in place of pyfuse3's read lock): one worker
waits on the device at a time and answers what comes; the others stay parked until a handler about to await lends
them the device. The last test is the case that needs it: a refused commit whose invalidation waits for a page a
READ in flight holds."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pyfuse3
import pytest
import trio
import trio.testing

from doors.fs._fuse_serve import FAST_READS, READER_HOOK_VERSION, SPIN_NS, FuseReader, reader_hook, spin_window
from tests.doors.fs._mount import deadlock_guard, mounted, needs_mount

KEY = b"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n"


async def _waiter(reader: FuseReader, results: list[bool]) -> None:
    results.append(await reader.wait())


async def test_one_worker_waits_and_the_next_stays_parked_until_lent() -> None:
    read_end, write_end = os.pipe()
    try:
        reader = FuseReader(read_end)
        first: list[bool] = []
        second: list[bool] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_waiter, reader, first)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(_waiter, reader, second)
            await trio.testing.wait_all_tasks_blocked()
            assert reader.waiting and not first and not second  # the second parked: one waiter an fd
            os.write(write_end, b"x")
            await trio.testing.wait_all_tasks_blocked()
            assert first == [True] and not second and not reader.waiting  # answered; nobody woken for nothing
            os.read(read_end, 1)
            reader.lend()
            await trio.testing.wait_all_tasks_blocked()
            assert reader.waiting and not second  # the lent worker waits on the device now
            os.write(write_end, b"x")
        assert second == [True]
    finally:
        os.close(read_end)
        os.close(write_end)


async def test_a_request_already_there_is_read_without_a_checkpoint_a_few_times_in_a_row() -> None:
    read_end, write_end = os.pipe()
    try:
        reader = FuseReader(read_end)
        os.write(write_end, b"x")  # a request waits on the device
        for _ in range(2):
            for _ in range(FAST_READS):
                with trio.CancelScope() as scope:
                    scope.cancel()
                    assert await reader.wait()  # read at once: not even a pending cancel is seen (no checkpoint)
                assert not scope.cancelled_caught
            with trio.CancelScope() as scope:
                scope.cancel()
                await reader.wait()  # the next goes through trio: a checkpoint, where the door's other tasks run
            assert scope.cancelled_caught and not reader.waiting
        os.read(read_end, 1)
        with trio.move_on_after(0.05) as idle:
            await reader.wait()  # nothing there: it waits
        assert idle.cancelled_caught
    finally:
        os.close(read_end)
        os.close(write_end)


class _Device:
    """The device as FuseReader polls it, with its own clock: each poll is STEP_NS later; a request shows up at
    the poll numbered `ready_at` (None: never)."""

    STEP_NS = 10_000

    def __init__(self, ready_at: int | None) -> None:
        self.ready_at, self.polls, self.now = ready_at, 0, 0

    def poll(self, timeout: int) -> list[tuple[int, int]]:
        assert timeout == 0, "the spin polls; it never sleeps in the kernel"
        self.polls += 1
        self.now += self.STEP_NS
        assert self.polls < 1000, "the spin window has no end"
        return [(0, 1)] if self.ready_at is not None and self.polls >= self.ready_at else []

    def clock(self) -> int:
        return self.now


def _watched(device: _Device, device_fd: int = -1, spin_ns: int = SPIN_NS) -> FuseReader:
    reader = FuseReader(device_fd, spin_ns)
    reader._poll, reader._clock = device, device.clock  # type: ignore[assignment]
    return reader


async def test_a_request_that_comes_within_the_spin_window_is_read_without_sleeping_or_a_checkpoint() -> None:
    device = _Device(ready_at=SPIN_NS // _Device.STEP_NS // 2)  # halfway through the window
    reader = _watched(device)
    with trio.CancelScope() as scope:
        scope.cancel()
        assert await reader.wait()  # a pending cancel unseen: no trio wait, the CPU never left the device
    assert not scope.cancelled_caught and device.polls == device.ready_at


async def test_the_spin_window_ends_and_the_worker_waits_through_trio() -> None:
    device = _Device(ready_at=None)
    read_end, write_end = os.pipe()  # nothing written: trio's wait on it sleeps
    try:
        reader = _watched(device, read_end)
        with trio.CancelScope() as scope:
            scope.cancel()
            await reader.wait()
        assert scope.cancelled_caught and not reader.waiting  # waited through trio, after the window
        assert device.now >= SPIN_NS and device.polls <= SPIN_NS // _Device.STEP_NS + 1
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_door_on_one_cpu_does_not_spin() -> None:
    assert spin_window(1) == 0  # the app could send its request only by preempting the spin
    assert spin_window(2) == spin_window(64) == SPIN_NS > 0


async def test_without_a_window_a_request_not_there_is_waited_for_through_trio() -> None:
    device = _Device(ready_at=2)  # it would come at the next poll
    read_end, write_end = os.pipe()
    try:
        reader = _watched(device, read_end, spin_ns=0)
        with trio.CancelScope() as scope:
            scope.cancel()
            await reader.wait()
        assert scope.cancelled_caught and device.polls == 1
    finally:
        os.close(read_end)
        os.close(write_end)


async def test_a_closing_device_ends_the_waiting_worker_and_the_parked_ones() -> None:
    read_end, write_end = os.pipe()
    try:
        reader = FuseReader(read_end)
        results: list[bool] = []
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(_waiter, reader, results)
            await trio.testing.wait_all_tasks_blocked()
            trio.lowlevel.notify_closing(read_end)
        assert results == [False, False, False]
        assert await reader.wait() is False
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_hook_replaces_pyfuse3s_wait_only_while_serving() -> None:
    original = pyfuse3._wait_fuse_readable  # type: ignore[attr-defined]
    reader = FuseReader(-1)
    with reader_hook(reader) as hooked:
        assert hooked == (pyfuse3.__version__ == READER_HOOK_VERSION)
        if hooked:
            assert pyfuse3._wait_fuse_readable == reader.wait  # type: ignore[attr-defined]
    assert pyfuse3._wait_fuse_readable is original  # type: ignore[attr-defined]


def test_pyfuse3_is_the_version_the_hook_was_read_against() -> None:
    # A new pyfuse3 keeps its own read lock (correct, slower) until its session loop is read again.
    assert pyfuse3.__version__ == READER_HOOK_VERSION


def _refused_closes_beside_a_reader(point: str) -> list[int]:
    """Close a file holding a key (refused: its pages invalidated) 20 times while another thread keeps reading the
    same file through its own handle (READs in flight, holding the pages the invalidation waits for)."""
    stop = threading.Event()

    def keep_reading() -> None:
        while not stop.is_set():
            fd = os.open(f"{point}/big.bin", os.O_RDONLY)  # each open drops the cached pages: READs again
            try:
                while os.read(fd, 1 << 17):
                    pass
            finally:
                os.close(fd)

    reading = threading.Thread(target=keep_reading)
    reading.start()
    refused: list[int] = []
    try:
        for _ in range(20):
            fd = os.open(f"{point}/big.bin", os.O_RDWR)
            os.pwrite(fd, KEY, 0)
            try:
                os.close(fd)
                refused.append(0)
            except OSError as exc:
                refused.append(exc.errno or -1)
    finally:
        stop.set()
        reading.join()
    return refused


@pytest.mark.root
@needs_mount
def test_a_refused_commit_beside_reads_in_flight_does_not_hang_the_door() -> None:
    def setup(root: str) -> None:
        Path(f"{root}/big.bin").write_bytes(b"a" * (8 << 20))

    with mounted({"refuse_secrets": True}, setup) as mount:
        with deadlock_guard(mount.mount_fd) as fired:
            try:
                refused = mount.run(_refused_closes_beside_a_reader)
            except Exception:
                refused = []
        assert not fired, "the door deadlocked: its connection had to be aborted"
        assert refused == [errno.EACCES] * 20
        assert Path(f"{mount.workspace}/big.bin").read_bytes() == b"a" * (8 << 20)
