"""Shared test setup: privileged tests skip with a clear reason when not root."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root on a real kernel: run `sudo make test` to watch the kernel refuse")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)
