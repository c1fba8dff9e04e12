"""One round of a relay's fds on a poll of its own: the pty relay's and the pipe relay's drain (and tests)."""

from __future__ import annotations

import select
import selectors
from typing import Protocol

READ, WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE


class _Watched(Protocol):
    def fds_to_watch(self) -> dict[int, int]: ...
    def on_ready(self, fd: int, events: int) -> None: ...


def poll_once(source: _Watched, timeout_s: float) -> bool:
    """One round of `source`'s fds on a poll of its own; a hang-up or error wakes both directions (the read or
    write then says why). False when nothing was ready."""
    wanted = source.fds_to_watch()
    if not wanted:
        return False
    poller = select.poll()
    for fd, events in wanted.items():
        poller.register(fd, (select.POLLIN if events & READ else 0) | (select.POLLOUT if events & WRITE else 0))
    ready = poller.poll(max(0, int(timeout_s * 1000)))
    for fd, revents in ready:
        if revents & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
            revents |= select.POLLIN | select.POLLOUT
        events = (READ if revents & select.POLLIN else 0) | (WRITE if revents & select.POLLOUT else 0)
        source.on_ready(fd, events & wanted[fd])
    return bool(ready)
