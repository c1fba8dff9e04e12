"""The errno each refusal becomes through the mount (pure): every row the door refuses with has one, never 0."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from doors._refusal import Refusal
from doors.fs._fuse_errno import ROW_ERRNO, errno_of

VECTORS = Path(__file__).resolve().parents[3] / "doors" / "fs" / "vectors"


@pytest.mark.parametrize(("row", "code"), [
    ("read_only", errno.EACCES), ("hidden", errno.EACCES), ("within_root", errno.EACCES),
    ("refuse_secrets", errno.EACCES), ("append_only", errno.EPERM), ("exec", errno.EPERM),
    ("file_kinds", errno.EPERM), ("max_file_bytes", errno.EFBIG), ("max_total_bytes", errno.EDQUOT),
    ("max_files", errno.ENOSPC), ("audit_backpressure", errno.EAGAIN), ("path", errno.EINVAL),
])
def test_each_row_has_the_errno_a_program_understands(row: str, code: int) -> None:
    assert errno_of(Refusal(403, row, "fs", "", "")) == code


def test_a_path_too_long_or_too_deep_is_enametoolong() -> None:
    for detail in ("the path is 5000 bytes (at most 4096)", "the path is 65 levels deep (at most 64)"):
        assert errno_of(Refusal(400, "path", "fs", detail, "")) == errno.ENAMETOOLONG


def test_every_row_a_vector_expects_has_an_errno_and_an_unknown_row_is_never_success() -> None:
    rows = {step["expect"]["error"] for file in VECTORS.glob("*.json") for vector in json.loads(file.read_text())
            for step in vector["steps"] if "error" in step["expect"]} - {"http.route"}  # HTTP's own
    assert rows <= set(ROW_ERRNO), rows - set(ROW_ERRNO)
    assert errno_of(Refusal(500, "something new", "fs", "", "")) == errno.EIO
