"""What a client raises when it could not talk to the door it dialled: unreachable, or not that door.

A door that answered with a refusal (or the kernel or TLS refusing the client) raises
`doors._refusal.DoorRefused` instead: that is an answer, not a transport failure.
"""

from __future__ import annotations


class TransportError(Exception):
    """Base of every transport failure a door client raises."""


class DoorNotTrusted(TransportError):
    """The peer at the dialled address is not the door we dialled: this client refused it."""

    def __init__(self, dialled: str, reason: str) -> None:
        super().__init__(f"the peer dialled as {dialled!r} is not trusted: {reason}")
        self.dialled = dialled
        self.reason = reason


class DoorUnavailable(TransportError):
    """The door could not be reached, or the connection broke before an answer."""
