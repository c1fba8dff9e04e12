"""The whole decision: real path, secrets, existence, version, size and quota."""

from __future__ import annotations

import pytest

from doors.fs._decide import EXEC_MODE, FILE_MODE, decide, file_mode, precheck_size
from doors.fs._paths import WorkspacePath, parse_path
from doors.fs._rules import Facts, FsRows, Op, Target, Usage

ROWS = FsRows.from_rows({
    "read_only": [".git"], "append_only": ["log"], "hidden": [".env"], "exec": ["bin"],
    "max_file_bytes": 100, "max_total_bytes": 1000, "max_files": 3,
})
FILE = Target("file", 10, '"v1"', False)
DIR = Target("dir")
NONE = Target()
NO_USAGE = Usage()


def p(text: str) -> WorkspacePath:
    parsed = parse_path(text)
    assert isinstance(parsed, WorkspacePath)
    return parsed


def verdict(op: Op, path: str, facts: Facts, usage: Usage = NO_USAGE, **kw: object) -> str:
    refusal = decide(op, p(path), ROWS, usage, facts, **kw)  # type: ignore[arg-type]
    return "allow" if refusal is None else f"{refusal.status} {refusal.row}"


def test_symlink_into_protected_place_is_judged_on_the_real_path() -> None:
    facts = Facts(target=FILE, real_path=p(".git/config"))
    assert verdict(Op.WRITE, "innocent", facts) == "403 read_only"
    assert verdict(Op.READ, "innocent", Facts(target=FILE, real_path=p(".env"))) == "403 hidden"
    assert verdict(Op.APPEND, "x", Facts(target=FILE, real_path=p("log"))) == "allow"
    assert verdict(Op.WRITE, "x", Facts(target=FILE, real_path=p("log"))) == "403 append_only"


def test_secret_refused_only_when_the_row_says() -> None:
    facts = Facts(target=NONE, body_bytes=40, secret="PEM private key")
    assert verdict(Op.WRITE, "a", facts) == "403 refuse_secrets"
    permissive = FsRows.from_rows({"refuse_secrets": False})
    assert decide(Op.WRITE, p("a"), permissive, Usage(), facts) is None


@pytest.mark.parametrize(("op", "target", "expected"), [
    (Op.READ, NONE, "404 not_found"), (Op.STAT, NONE, "404 not_found"), (Op.LIST, NONE, "404 not_found"),
    (Op.DELETE, NONE, "404 not_found"), (Op.RENAME, NONE, "404 not_found"),
    (Op.READ, DIR, "409 not_a_file"), (Op.LIST, FILE, "409 not_a_directory"),
    (Op.WRITE, DIR, "409 not_a_file"), (Op.APPEND, DIR, "409 not_a_file"),
    (Op.WRITE, Target("other"), "409 not_a_file"), (Op.MKDIR, FILE, "409 exists"),
    (Op.MKDIR, DIR, "allow"), (Op.WRITE, NONE, "allow"), (Op.WRITE, FILE, "allow"),
    (Op.APPEND, NONE, "allow"), (Op.READ, FILE, "allow"), (Op.LIST, DIR, "allow"),
])
def test_existence(op: Op, target: Target, expected: str) -> None:
    assert verdict(op, "a", Facts(target=target)) == expected


def test_append_only_allows_create_and_append_but_not_replace() -> None:
    assert verdict(Op.WRITE, "log", Facts(target=NONE, body_bytes=5)) == "allow"
    assert verdict(Op.WRITE, "log", Facts(target=FILE, body_bytes=5)) == "403 append_only"
    assert verdict(Op.APPEND, "log", Facts(target=FILE, body_bytes=5)) == "allow"


def test_rename_onto_existing_is_409() -> None:
    facts = Facts(target=FILE, dest_target=FILE)
    assert verdict(Op.RENAME, "a", facts, dest=p("b")) == "409 exists"
    assert verdict(Op.RENAME, "a", Facts(target=FILE, dest_target=NONE), dest=p("b")) == "allow"


@pytest.mark.parametrize("op", [Op.WRITE, Op.APPEND, Op.DELETE, Op.RENAME])
def test_version_mismatch_is_409(op: Op) -> None:
    dest = p("b") if op is Op.RENAME else None
    assert verdict(op, "a", Facts(target=FILE, if_match='"v0"'), dest=dest) == "409 version"
    assert verdict(op, "a", Facts(target=FILE, if_match='"v1"'), dest=dest) == "allow"


def test_create_only() -> None:
    assert verdict(Op.WRITE, "a", Facts(target=FILE, if_none_match="*")) == "409 version"
    assert verdict(Op.WRITE, "a", Facts(target=NONE, if_none_match="*")) == "allow"


def test_max_file_bytes_is_413() -> None:
    assert verdict(Op.WRITE, "a", Facts(target=NONE, body_bytes=100)) == "allow"
    assert verdict(Op.WRITE, "a", Facts(target=NONE, body_bytes=101)) == "413 max_file_bytes"
    # an append counts what the file already holds (10 bytes)
    assert verdict(Op.APPEND, "a", Facts(target=FILE, body_bytes=90)) == "allow"
    assert verdict(Op.APPEND, "a", Facts(target=FILE, body_bytes=91)) == "413 max_file_bytes"


def test_session_quotas_are_507() -> None:
    spent = Usage(bytes_written=950, files_created=0)
    assert verdict(Op.WRITE, "a", Facts(target=FILE, body_bytes=50), spent) == "allow"
    assert verdict(Op.WRITE, "a", Facts(target=FILE, body_bytes=51), spent) == "507 max_total_bytes"
    full = Usage(bytes_written=0, files_created=3)
    assert verdict(Op.WRITE, "a", Facts(target=NONE), full) == "507 max_files"
    assert verdict(Op.MKDIR, "d", Facts(target=NONE), full) == "507 max_files"
    assert verdict(Op.WRITE, "a", Facts(target=FILE), full) == "allow"  # replacing creates nothing
    assert verdict(Op.MKDIR, "d", Facts(target=DIR), full) == "allow"


def test_precheck_uses_the_declared_length() -> None:
    too_big = precheck_size(Op.WRITE, ROWS, Usage(), 101)
    spent = precheck_size(Op.APPEND, ROWS, Usage(bytes_written=990), 11)
    assert too_big is not None and too_big.row == "max_file_bytes"
    assert spent is not None and spent.row == "max_total_bytes"
    assert precheck_size(Op.WRITE, ROWS, Usage(files_created=99), 1) is None
    assert precheck_size(Op.WRITE, ROWS, Usage(), None) is None
    assert precheck_size(Op.DELETE, ROWS, Usage(), 10**9) is None


def test_first_refusal_wins_names_before_facts() -> None:
    facts = Facts(target=NONE, body_bytes=10**6, secret="PEM private key")
    assert verdict(Op.WRITE, ".git/x", facts) == "403 read_only"
    assert verdict(Op.WRITE, "a", facts) == "403 refuse_secrets"


def test_modes_never_setuid_and_exec_only_where_allowed() -> None:
    assert file_mode(p("bin/t"), ROWS, True, False) == EXEC_MODE
    assert file_mode(p("bin/t"), ROWS, False, True) == EXEC_MODE  # keeps an exec bit it had
    assert file_mode(p("src/t"), ROWS, True, True) == FILE_MODE
    assert file_mode(p("bin/t"), ROWS, False, False) == FILE_MODE
    assert not (EXEC_MODE | FILE_MODE) & 0o7000


EXEC_FILE = Target(kind="file", size=3, etag="e", executable=True)
PLAIN_FILE = Target(kind="file", size=3, etag="e")
A_DIR = Target(kind="dir")


@pytest.mark.parametrize(("source", "target", "dest", "expected"), [
    ("bin/tool", EXEC_FILE, "tool", "403 exec"),  # an executable leaves the exec prefix
    ("bin", A_DIR, "tools", "403 exec"),  # the prefix itself, with whatever it holds
    ("bin/sub", A_DIR, "sub", "403 exec"),  # a directory inside it
    ("bin/tool", EXEC_FILE, "bin/tool2", "allow"),  # stays inside
    ("bin/notes", PLAIN_FILE, "notes", "allow"),  # not executable
    ("scripts/run", EXEC_FILE, "run", "allow"),  # already outside: the person's own executable moves freely
    ("src", A_DIR, "lib", "allow"),  # holds no exec prefix
])
def test_a_rename_never_takes_executables_out_of_the_exec_prefixes(
    source: str, target: Target, dest: str, expected: str,
) -> None:
    assert verdict(Op.RENAME, source, Facts(target=target, dest_target=Target()), dest=p(dest)) == expected
