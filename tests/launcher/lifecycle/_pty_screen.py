"""The person's screen in the pty relay tests: what reaches their terminal, read from its master."""

from __future__ import annotations

import contextlib
import os
import selectors
import time

WAIT_S = 60.0  # a guard against hanging, never a measure: every wait ends on what it waits for


class Screen:
    """What reaches the person's terminal, read from its master while the relay runs."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.text = b""
        os.set_blocking(master, False)

    def pump(self) -> None:
        with contextlib.suppress(BlockingIOError):
            self.text += os.read(self.master, 65536)

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)


def screen_until(screen: Screen, want: bytes) -> None:
    """Read the person's terminal until `want` shows (a pty passes written bytes on asynchronously)."""
    deadline = time.monotonic() + WAIT_S
    with selectors.DefaultSelector() as selector:
        selector.register(screen.master, selectors.EVENT_READ)
        while want not in screen.text:
            assert time.monotonic() < deadline, f"no {want!r}: {screen.text!r}"
            selector.select(1)
            screen.pump()
