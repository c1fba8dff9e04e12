"""Serve the workspace mount: the FUSE device fd the launcher handed over, through pyfuse3, in the door's own
trio loop beside its HTTP API, with the same workspace, rows, quotas and audit (one Dispatcher for both)."""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pyfuse3
import trio

from doors.fs._api import FsApi
from doors.fs._fuse_core import MountCore
from doors.fs._fuse_fileops import MountOps
from pki.vocabulary import MOUNT_FD_ROW, MOUNT_OWNER_ROW

# Worker tasks pyfuse3 may start: one reads and answers requests; the others wait, parked, to take over while a
# handler awaits something that needs requests answered meanwhile (FuseReader.lend).
MAX_TASKS = 16
# The pyfuse3 whose session loop looks `_wait_fuse_readable` up as a module global on every request (its
# src/pyfuse3/internal.pxi): the door's FuseReader replaces it there. Any other version keeps pyfuse3's own.
READER_HOOK_VERSION = "3.5.0"
_HOOKED = "_wait_fuse_readable"
# Requests read in a row without a trio checkpoint when each was there or came soon (FuseReader.wait): the other
# tasks of the door (its HTTP API, the audit pump, the signal watch) wait at most this many requests (and windows)
# for their turn.
FAST_READS = 8
# How long the worker that answered a request watches the device for the next before it sleeps in trio's epoll. An
# app writing 4 KiB pieces sends its next request some tens of µs after its answer; a door that slept meanwhile is
# woken by a cross-CPU interrupt, and on a KVM guest whose idle vCPUs halt at once that wake-up is most of a
# request's cost (docs/decisions/fs-mount.md, "mountspin"). At most this much CPU each time the app stops; none
# on a door with one CPU, where the app could only send it by preempting the spin.
SPIN_NS = 100_000


class FuseReader:
    """Who waits on the FUSE device next, in place of pyfuse3's read lock.

    pyfuse3 3.5.0 lets one worker at a time wait for a request under a trio.Lock and hands the lock to a second
    worker on every request: two scheduler passes and a lock handoff a request, about a quarter of the door's CPU
    for a 4 KiB write (docs/decisions/fs-mount.md, "mountquick"). Here the worker that answered a request waits for
    the next one itself; the others stay parked until a handler is about to await (lend), so that a request the
    awaited work depends on (a READ holding a page the kernel's invalidation waits for) is still answered."""

    def __init__(self, device_fd: int, spin_ns: int = SPIN_NS) -> None:
        self.device_fd = device_fd
        self.waiting = False  # a worker waits on the device now (trio allows one waiter an fd)
        self.closed = False
        self._parked = trio.lowlevel.ParkingLot()
        self._poll = select.poll()
        if device_fd >= 0:
            self._poll.register(device_fd, select.POLLIN)
        self._fast_left = FAST_READS
        self._spin_ns = spin_ns
        self._clock = time.perf_counter_ns

    async def wait(self) -> bool:
        """pyfuse3's `_wait_fuse_readable`: True once a request can be read, False when the loop must end.

        A request already there or there within the spin window (the app's next one often comes while the door
        finishes answering the last, or just after) is read at once: no trio epoll registration and scheduler pass
        (a tenth of the door's CPU for a small file), and the door's CPU does not go idle between the two. Every
        FAST_READS such reads, the worker goes through trio all the same (the device already readable: no sleep),
        so the door's other tasks run."""
        if not self.waiting and not self.closed and self._soon() and self._fast_left > 0:
            self._fast_left -= 1
            return True
        self._fast_left = FAST_READS
        while self.waiting and not self.closed:
            await self._parked.park()
        if self.closed:
            return False
        self.waiting = True
        try:
            await trio.lowlevel.wait_readable(self.device_fd)
        except trio.ClosedResourceError:  # pyfuse3.terminate(): the device is about to be closed
            self.closed = True
            self._parked.unpark_all()
            return False
        finally:
            self.waiting = False
        return True

    def _soon(self) -> bool:
        """A request is on the device now or comes within the spin window (polled, without sleeping)."""
        poll, clock = self._poll.poll, self._clock
        deadline = clock() + self._spin_ns
        while True:
            if poll(0):
                return True
            if clock() >= deadline:
                return False

    def lend(self) -> None:
        """The calling handler is about to await: wake a parked worker to read requests meanwhile."""
        self._parked.unpark()


def spin_window(cpus: int) -> int:
    """The spin window, in ns, for a door allowed to run on `cpus` CPUs."""
    return SPIN_NS if cpus > 1 else 0


@contextlib.contextmanager
def reader_hook(reader: FuseReader) -> Iterator[bool]:
    """Put `reader` in pyfuse3's session loop while serving (True), where its version is the one known to look
    it up on every request; False (pyfuse3's own read lock kept) for any other version."""
    if pyfuse3.__version__ != READER_HOOK_VERSION:
        yield False
        return
    original = getattr(pyfuse3, _HOOKED)
    setattr(pyfuse3, _HOOKED, reader.wait)
    try:
        yield True
    finally:
        setattr(pyfuse3, _HOOKED, original)


def mount_device(rows: Mapping[str, Any]) -> int | None:
    """The FUSE device fd the contract names, or None when the app does not mount the workspace."""
    fd = rows.get(MOUNT_FD_ROW)
    if not isinstance(fd, int) or isinstance(fd, bool):
        return None
    os.fstat(fd)  # fail at start, naming the fd, rather than on the first request
    return fd


def mount_ops(api: FsApi, rows: Mapping[str, Any]) -> MountOps:
    """The mount's handlers over the HTTP API's own workspace and dispatch."""
    owner = rows.get(MOUNT_OWNER_ROW)
    if not (isinstance(owner, list) and len(owner) == 2 and all(isinstance(i, int) for i in owner)):
        raise ValueError(f"the fs door needs rows.{MOUNT_OWNER_ROW} = [uid, gid] to serve the mount")
    return MountOps(MountCore(api.workspace, api.dispatch, (owner[0], owner[1])))


async def serve_mount(ops: MountOps, device_fd: int) -> None:
    """Answer the mount's requests until cancelled (the door stopping) or the connection ends."""
    reader = FuseReader(device_fd, spin_window(len(os.sched_getaffinity(0))))
    pyfuse3.init(ops, f"/dev/fd/{device_fd}", set())
    try:
        with reader_hook(reader) as hooked:
            if hooked:
                ops.core.lend_reader = reader.lend
            await pyfuse3.main(min_tasks=1, max_tasks=MAX_TASKS)
    finally:
        pyfuse3.close(unmount=False)
