"""Fixtures of the lifecycle tests."""

from __future__ import annotations

import os
import termios
from collections.abc import Iterator

import pytest


@pytest.fixture
def person() -> Iterator[tuple[int, int]]:
    """The person's terminal: (master the test types into and reads the screen from, slave the launcher holds)."""
    master, slave = os.openpty()
    termios.tcsetwinsize(slave, (33, 101))
    try:
        yield master, slave
    finally:
        os.close(master)
        os.close(slave)
