"""Rows → decision on names alone, for every op and every row."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doors.fs._paths import WorkspacePath, parse_path
from doors.fs._rules import FsRows, Op, decide_names, is_hidden

ROWS = FsRows.from_rows({
    "read_only": [".git", "vendor/lib"],
    "append_only": ["log", "journal/"],
    "hidden": [".env", "secret/dir"],
    "exec": ["bin"],
})


def p(text: str) -> WorkspacePath:
    parsed = parse_path(text)
    assert isinstance(parsed, WorkspacePath)
    return parsed


def row_of(op: Op, path: str, **kw: object) -> str:
    refusal = decide_names(op, p(path), ROWS, **kw)  # type: ignore[arg-type]
    return "allow" if refusal is None else f"{refusal.status} {refusal.row}"


# (op, path) -> expected; a table over every op and every row.
TABLE = [
    # plain paths: everything allowed
    *[(op, "src/a.py", "allow") for op in Op],
    # read_only: reads allowed, every mutation refused, also beneath and via the parent for destructive ops
    (Op.READ, ".git/config", "allow"), (Op.STAT, ".git", "allow"), (Op.LIST, ".git", "allow"),
    (Op.WRITE, ".git/config", "403 read_only"), (Op.APPEND, ".git/config", "403 read_only"),
    (Op.MKDIR, ".git/hooks", "403 read_only"), (Op.DELETE, ".git/config", "403 read_only"),
    (Op.RENAME, ".git/config", "403 read_only"), (Op.DELETE, ".git", "403 read_only"),
    (Op.DELETE, "vendor", "403 read_only"), (Op.RENAME, "vendor", "403 read_only"),
    (Op.WRITE, "vendor/other.py", "allow"), (Op.MKDIR, "vendor", "allow"),
    (Op.WRITE, ".github/x", "allow"),
    # append_only: append and create allowed by name; delete/rename of it or a parent refused
    (Op.APPEND, "log", "allow"), (Op.APPEND, "journal/2026.txt", "allow"), (Op.WRITE, "journal/new", "allow"),
    (Op.READ, "log", "allow"), (Op.MKDIR, "journal/sub", "allow"),
    (Op.DELETE, "log", "403 append_only"), (Op.RENAME, "log", "403 append_only"),
    (Op.DELETE, "journal/2026.txt", "403 append_only"), (Op.DELETE, "journal", "403 append_only"),
    (Op.RENAME, "journal", "403 append_only"),
    # hidden: nothing at all, and no destroying a parent of it
    *[(op, ".env", "403 hidden") for op in Op],
    (Op.READ, ".env/x", "403 hidden"), (Op.LIST, "secret/dir", "403 hidden"), (Op.LIST, "secret", "allow"),
    (Op.DELETE, "secret", "403 hidden"), (Op.RENAME, "secret", "403 hidden"), (Op.READ, ".envrc", "allow"),
    # the root itself
    (Op.LIST, "", "allow"), (Op.STAT, "", "allow"), (Op.MKDIR, "", "allow"),
    (Op.READ, "", "403 within_root"), (Op.WRITE, "", "403 within_root"), (Op.APPEND, "", "403 within_root"),
    (Op.DELETE, "", "403 within_root"), (Op.RENAME, "", "403 within_root"),
]


@pytest.mark.parametrize(("op", "path", "expected"), TABLE)
def test_table(op: Op, path: str, expected: str) -> None:
    assert row_of(op, path) == expected


@pytest.mark.parametrize(("dest", "expected"), [
    ("src/b.py", "allow"),
    (".git/x", "403 read_only"),
    ("vendor", "403 read_only"),  # would create vendor/lib content
    ("log", "403 append_only"),
    ("journal/x", "403 append_only"),
    (".env", "403 hidden"),
    ("secret", "403 hidden"),
    ("", "403 within_root"),
])
def test_rename_destinations(dest: str, expected: str) -> None:
    assert row_of(Op.RENAME, "src/a.py", dest=p(dest)) == expected


def test_exec_only_inside_exec_prefixes() -> None:
    assert row_of(Op.WRITE, "bin/tool", want_exec=True) == "allow"
    assert row_of(Op.WRITE, "src/tool", want_exec=True) == "403 exec"
    assert row_of(Op.WRITE, "src/tool", want_exec=False) == "allow"


def test_refusals_name_row_and_manifest_change() -> None:
    refusal = decide_names(Op.WRITE, p(".git/config"), ROWS)
    assert refusal is not None and refusal.who == "fs"
    assert ".git" in refusal.detail and "doors.fs.read_only" in refusal.hint


def test_hidden_filter() -> None:
    assert is_hidden(p(".env"), ROWS) and is_hidden(p("secret/dir/x"), ROWS)
    assert not is_hidden(p("secret"), ROWS) and not is_hidden(p(".envrc"), ROWS)


def test_from_rows_defaults_and_errors() -> None:
    rows = FsRows.from_rows({"workspace": "/w", "workspace_fd": 7})
    assert rows.refuse_secrets and rows.read_only == () and rows.max_file_bytes == 10 * 1024 * 1024
    for bad in ({"read_only": ".git"}, {"read_only": ["../x"]}, {"max_files": -1}, {"max_files": True},
                {"refuse_secrets": "yes"}, {"hidden": [1]}):
        with pytest.raises(ValueError, match="fs row"):
            FsRows.from_rows(bad)
    assert FsRows.from_rows({"read_only": ["."]}).read_only == (p(""),)


def test_describe_round_trips_the_rows() -> None:
    described = ROWS.describe()
    assert described["read_only"] == [".git", "vendor/lib"] and described["within_root"] is True
    assert FsRows.from_rows(described) == ROWS


NAMES = st.sampled_from([".git", "vendor", "lib", "log", "journal", "x", ".env", "secret", "dir", "bin", "a"])
PATHS = st.lists(NAMES, min_size=0, max_size=4).map(lambda parts: WorkspacePath(tuple(parts)))


@given(st.sampled_from(list(Op)), PATHS, PATHS)
def test_no_op_ever_touches_a_hidden_path_or_writes_a_read_only_one(op: Op, path: WorkspacePath,
                                                                    dest: WorkspacePath) -> None:
    refusal = decide_names(op, path, ROWS, dest=dest if op is Op.RENAME else None)
    if refusal is not None:
        return
    for hidden in ROWS.hidden:
        assert not path.is_within(hidden)
        if op in (Op.DELETE, Op.RENAME):
            assert not hidden.is_within(path)
    if op in (Op.WRITE, Op.APPEND, Op.MKDIR, Op.DELETE, Op.RENAME):
        assert not any(path.is_within(prefix) for prefix in ROWS.read_only)
    if op in (Op.DELETE, Op.RENAME):
        for protected in (*ROWS.read_only, *ROWS.append_only):
            assert not protected.is_within(path) and not path.is_within(protected)
    if op is Op.RENAME:
        for protected in (*ROWS.read_only, *ROWS.append_only, *ROWS.hidden):
            assert not dest.is_within(protected) and not protected.is_within(dest)
