"""Limits a door server enforces on every connection. Pure data."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Sizes and times that bound what one client may make a door hold or wait for."""

    max_header_count: int = 64
    max_header_bytes: int = 16 * 1024
    max_target_bytes: int = 4096
    max_body_bytes: int = 1024 * 1024
    receive_bytes: int = 64 * 1024
    idle_timeout_s: float = 30.0
    head_timeout_s: float = 10.0
    body_grace_s: float = 5.0
    body_min_bytes_per_s: int = 4096
    # A response goes out in pieces of at most send_piece_bytes, each of which the client must drain within
    # send_timeout_s: what one connection holds unsent is one piece (plaintext and ciphertext) plus the
    # kernel's socket buffer, whatever the response's size, and a client that stops reading is cut.
    send_timeout_s: float = 30.0
    send_piece_bytes: int = 64 * 1024
    # SO_SNDBUF of each connection (None: the kernel's, 208 KiB on a Unix socket). Larger, a sender that streams
    # waits for its reader fewer times; the kernel holds up to twice it per connection for a client that stalls.
    send_buffer_bytes: int | None = None

    def body_deadline(self, started: float, received: int) -> float:
        """Return when the next body bytes must have arrived: a grace period plus the rate floor."""
        return started + self.body_grace_s + received / self.body_min_bytes_per_s
