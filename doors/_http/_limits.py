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
    send_timeout_s: float = 30.0

    def body_deadline(self, started: float, received: int) -> float:
        """Return when the next body bytes must have arrived: a grace period plus the rate floor."""
        return started + self.body_grace_s + received / self.body_min_bytes_per_s
