"""Fixtures for the bench tests: one session's SVID files in a sharness-named temporary directory."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.handshake import SessionFiles, session_files


@pytest.fixture
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionFiles]:
    directory = Path(tempfile.mkdtemp(prefix="sharness-bench-test-"))
    try:
        yield session_files(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
