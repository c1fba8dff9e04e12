"""Screen filter and pty relay figures: the filter's MiB/s per kind of output, the relay's throughput, and how
many door status messages the launcher's loop handles while the relay is busy with the worst output.

The filter alone (launcher/policy/termfilter.py) is fed in 64 KiB chunks. The relay (launcher/lifecycle/
ptyrelay.py) runs between a real pty standing for the person's terminal (a child reads and discards it) and
an app child writing to the relay's slave. The status figure runs the launcher's own Supervisor loop with
that relay added and a child sending audit messages on a status socket as fast as the loop takes them.

    python -m bench.term_bench [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

from launcher.lifecycle.ptyrelay import PtyRelay
from launcher.lifecycle.spawn import Spawned
from launcher.lifecycle.supervise import Supervisor
from launcher.policy.termfilter import TermFilter

MIB = 1024 * 1024
CHUNK = 65536
RATIOS = (("term_status_per_s_worst_output", "term_status_per_s_idle"),)

# What an app may print: ordinary output, then input built to take the filter's slow path at every byte or two.
WORKLOADS: dict[str, bytes] = {
    "ascii": b"the quick brown fox jumps over the lazy dog 0123456789\n",
    "utf8": "Grüße, мир, 世界, γειά σου, שלום 🙂\n".encode(),
    "coloured": b"\x1b[01;34mdir\x1b[0m  \x1b[01;32mexe\x1b[0m  file.txt\n",
    "modes": b"\x1b[?25l\x1b[?1049h\x1b[?2004h\x1b[?25h\x1b[4;20H",
    "osc52": b"\x1b]52;c;" + b"QUJD" * 16384 + b"\x07",
    "c1_encoded": "\u0085\u0084\u0096\u0080".encode() * 4,
    "c1_raw": b"\x85\x84\x96\x80" * 4,
    "ill_formed": b"a\xff" * 8,
    "ris": b"\x1bc" * 8,
    "osc_title": b"\x1b]0;t\x07text",
    "window_ops": b"\x1b[21ttext",
    "long_csi": b"\x1b[" + b"1" * 100 + b"m",
}


def _payload(pattern: bytes, size: int) -> bytes:
    return (pattern * (size // len(pattern) + 1))[:size]


def filter_mib_s(data: bytes, chunk: int = CHUNK) -> float:
    """MiB of input per second through one TermFilter, fed `chunk` bytes at a time."""
    screen = TermFilter()
    start = time.perf_counter()
    for offset in range(0, len(data), chunk):
        screen.feed(data[offset:offset + chunk])
    screen.end()
    return len(data) / MIB / (time.perf_counter() - start)


def _fork(action: Callable[[], None]) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            signal.set_wakeup_fd(-1)
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGWINCH):
                signal.signal(signum, signal.SIG_DFL)
            action()
        finally:
            os._exit(0)
    return pid


def _discard(master: int, slave: int) -> None:
    os.close(slave)  # else the pty never hangs up: this child would hold it open
    with contextlib.suppress(OSError):
        while os.read(master, CHUNK):
            pass


@contextlib.contextmanager
def _person_and_relay() -> Iterator[tuple[PtyRelay, int]]:
    """A relay whose person's terminal is a fresh pty read and thrown away by a child; (relay, its pid)."""
    master, slave = os.openpty()
    reader = _fork(lambda: _discard(master, slave))
    os.close(master)
    relay = PtyRelay.open((slave, slave, slave))
    assert relay is not None
    try:
        yield relay, reader
    finally:
        relay.close()
        os.close(slave)  # the reader then reads EIO and ends
        os.waitpid(reader, 0)


def _app_writing(relay: PtyRelay, data: bytes, repeat: bool) -> int:
    """A child writing `data` (forever when `repeat`) to the relay's slave, as an app on its terminal would."""
    slave = relay.app_stdio()[1]

    def write() -> None:
        os.setsid()
        while True:
            view = memoryview(data)
            while view:
                view = view[os.write(slave, view):]
            if not repeat:
                return

    pid = _fork(write)
    relay.app_started()
    return pid


def relay_mib_s(data: bytes) -> float:
    """MiB of the app's output per second through the relay, until the app's side hangs up."""
    with _person_and_relay() as (relay, _):
        start = time.perf_counter()
        app = _app_writing(relay, data, repeat=False)
        relay.drain(idle_s=10.0, max_s=3600.0)  # until the app's side hangs up, its output passed on
        seconds = time.perf_counter() - start
        os.waitpid(app, 0)
    return len(data) / MIB / seconds


def _door_sending(seconds: float) -> Spawned:
    """A child sending audit status messages as fast as the launcher takes them, for `seconds`."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    message = json.dumps({"type": "audit", "event": {"op": "stat", "path": "a" * 64}}).encode()

    def send() -> None:
        ours.close()
        theirs.sendall(json.dumps({"type": "ready"}).encode())
        deadline = time.monotonic() + seconds
        with contextlib.suppress(OSError):
            while time.monotonic() < deadline:
                theirs.send(message)

    pid = _fork(send)
    theirs.close()
    return Spawned(role="fs", pid=pid, pidfd=os.pidfd_open(pid), status=ours)


def status_per_s(seconds: float, output: bytes | None) -> float:
    """Door status messages the Supervisor handles per second, with the relay fed `output` (None: idle)."""
    events: list[str] = []
    supervisor = Supervisor(lambda event, fields: events.append(event))
    with _person_and_relay() as (relay, _):
        app = _app_writing(relay, output or b"", repeat=output is not None)
        supervisor.add_io(relay)
        door = _door_sending(seconds + 5)
        supervisor.watch(door)
        try:
            assert supervisor.wait_ready(("fs",), 10) is None
            before = events.count("door.event")
            supervisor.run_until_end("app", time.monotonic() + seconds)
            handled = events.count("door.event") - before
        finally:
            supervisor.stop("fs", 1)
            os.kill(app, signal.SIGKILL)
            os.waitpid(app, 0)
            supervisor.close()
    return handled / seconds


def run(quick: bool) -> dict[str, Any]:
    size = 2 * MIB if quick else 8 * MIB
    figures: dict[str, Any] = {}
    for name, pattern in WORKLOADS.items():
        data = _payload(pattern, size)
        figures[f"term_filter_mib_s_{name}"] = round(max(filter_mib_s(data) for _ in range(3)), 1)  # best of 3
    relay_size = 4 * MIB if quick else 16 * MIB
    for name in ("ascii", "coloured", "c1_encoded"):
        figures[f"term_relay_mib_s_{name}"] = round(relay_mib_s(_payload(WORKLOADS[name], relay_size)), 1)
    seconds = 1.0 if quick else 3.0
    worst = _payload(WORKLOADS["c1_encoded"], CHUNK)
    figures["term_status_per_s_idle"] = round(status_per_s(seconds, None))
    figures["term_status_per_s_worst_output"] = round(status_per_s(seconds, worst))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.term_bench", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    figures = run(args.quick)
    width = max(map(len, figures))
    print("\n".join(f"{key:<{width}}  {value}" for key, value in figures.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
