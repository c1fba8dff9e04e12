"""The door's status fd: one JSON object per SOCK_SEQPACKET message to the launcher, never blocking forever.

ready / audit / lost / forbid / fatal, in the codec of pki.vocabulary.status (each at most MAX_STATUS_BYTES;
an audit event too large is replaced by a marker that says so). An audit event waits for the launcher to
make room (the door's bounded queue is the backpressure); a message that could not go out, and each event
the door counted as lost, is counted, and the count rides on the next message that goes through as
`dropped_before` (the launcher writes it as `audit.lost`).
"""

from __future__ import annotations

import math
import socket
from dataclasses import dataclass
from typing import Any

import trio

from pki.vocabulary import encode_status, fatal_message, forbid_message, lost_message, ready_message


@dataclass(frozen=True)
class StatusStatistics:
    sent: int
    dropped: int
    launcher_gone: bool


class StatusSender:
    """Sends status messages on an inherited SOCK_SEQPACKET fd (the door owns and closes it)."""

    def __init__(self, fd: int, *, send_timeout_s: float | None = None) -> None:
        self._sock = socket.socket(fileno=fd)
        self._sock.setblocking(False)
        self.send_timeout_s = send_timeout_s
        self._sent = 0
        self._dropped = 0
        self._gone = False

    def _payload(self, message: dict[str, Any]) -> bytes:
        if self._dropped:
            message = {**message, "dropped_before": self._dropped}
        return encode_status(message)

    def _try_send(self, data: bytes) -> bool | None:
        """True sent, None would block, False the launcher is gone."""
        if self._gone:
            return False
        try:
            self._sock.send(data, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return None
        except OSError:
            self._gone = True
            return False
        self._sent += 1
        self._dropped = 0
        return True

    def note_lost(self, count: int) -> None:
        """Count `count` events that never reached this sender: the next message tells the launcher."""
        self._dropped += count

    @property
    def owes_count(self) -> bool:
        """Whether a count of lost messages waits for the next message to carry it."""
        return self._dropped > 0

    def send_now(self, message: dict[str, Any]) -> bool | None:
        """Send if the launcher has room now: True sent, False the launcher is gone (counted as dropped), None no
        room (nothing sent, nothing counted: the caller waits or queues it)."""
        sent = self._try_send(self._payload(message))
        if sent is False:
            self._dropped += 1
        return sent

    def send_nowait(self, message: dict[str, Any]) -> bool:
        """Send without waiting (ready, fatal); False when it could not go out now."""
        sent = self._try_send(self._payload(message))
        if not sent:
            self._dropped += 1
        return bool(sent)

    async def _send_waiting(self, data: bytes) -> bool:
        sent = self._try_send(data)
        if sent is not None:  # the usual case: the launcher had room, so no timeout scope is needed
            return sent
        with trio.move_on_after(math.inf if self.send_timeout_s is None else self.send_timeout_s):
            while (sent := self._try_send(data)) is None:
                await trio.lowlevel.wait_writable(self._sock)
            return sent
        return False

    async def send(self, message: dict[str, Any]) -> bool:
        """Send, waiting for the launcher to make room (at most `send_timeout_s` when set)."""
        if await self._send_waiting(self._payload(message)):
            return True
        self._dropped += 1
        return False

    def ready(self) -> bool:
        return self.send_nowait(ready_message())

    async def send_lost(self) -> bool:
        """A message with nothing but the count of what was lost (when no event is there to carry it)."""
        return await self._send_waiting(self._payload(lost_message()))

    async def forbid(self, name: str, value: str) -> bool:
        """Tell the launcher's audit log to redact `value` (a kept secret called `name`) from now on; only the
        keys door is heard. Send it before `ready`, so no line can hold the value before the log knows it."""
        return await self.send(forbid_message(name, value))

    def fatal(self, detail: str) -> bool:
        return self.send_nowait(fatal_message(detail))

    def statistics(self) -> StatusStatistics:
        return StatusStatistics(self._sent, self._dropped, self._gone)

    def close(self) -> None:
        self._sock.close()
