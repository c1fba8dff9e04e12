"""Fixtures of the daemon tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _launchd import Scratch


@pytest.fixture
def scratch() -> Iterator[Scratch]:
    made = Scratch()
    try:
        yield made
    finally:
        made.remove()
