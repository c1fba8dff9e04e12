"""The door's status fd: one JSON object per SOCK_SEQPACKET message to the launcher, never blocking forever.

ready / audit / fatal, in the codec of pki.vocabulary.status (each at most MAX_STATUS_BYTES; an audit event
too large is replaced by a marker that says so).
If the launcher stops reading, a send waits `send_timeout_s` and is then counted as dropped; the count
rides on the next message that goes through.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

import trio

from pki.vocabulary import encode_status, fatal_message, ready_message


@dataclass(frozen=True)
class StatusStatistics:
    sent: int
    dropped: int
    launcher_gone: bool


class StatusSender:
    """Sends status messages on an inherited SOCK_SEQPACKET fd (the door owns and closes it)."""

    def __init__(self, fd: int, *, send_timeout_s: float = 2.0) -> None:
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

    def send_nowait(self, message: dict[str, Any]) -> bool:
        """Send without waiting (ready, fatal); False when it could not go out now."""
        sent = self._try_send(self._payload(message))
        if not sent:
            self._dropped += 1
        return bool(sent)

    async def send(self, message: dict[str, Any]) -> bool:
        """Send, waiting at most `send_timeout_s` for the launcher to make room."""
        data = self._payload(message)
        with trio.move_on_after(self.send_timeout_s):
            while (sent := self._try_send(data)) is None:
                await trio.lowlevel.wait_writable(self._sock)
            if sent:
                return True
        self._dropped += 1
        return False

    def ready(self) -> bool:
        return self.send_nowait(ready_message())

    def fatal(self, detail: str) -> bool:
        return self.send_nowait(fatal_message(detail))

    def statistics(self) -> StatusStatistics:
        return StatusStatistics(self._sent, self._dropped, self._gone)

    def close(self) -> None:
        self._sock.close()
