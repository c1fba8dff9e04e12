"""Rows on a file system that folds case: every row compares names the way the directory looks them up."""

from __future__ import annotations

import dataclasses

import pytest

from doors.fs._decide import file_mode
from doors.fs._paths import ROOT, WorkspacePath, parse_path
from doors.fs._rules import FsRows, Op, decide_names, fold_name, is_hidden


def p(text: str) -> WorkspacePath:
    parsed = parse_path(text)
    assert isinstance(parsed, WorkspacePath)
    return parsed


EXACT = FsRows.from_rows({"read_only": [".git", "src/.git", "café"], "append_only": ["log"],
                          "hidden": [".env", "secret/keys"], "exec": ["bin"]})
# The root folds (as an ext4 `chattr +F` workspace, or vfat); src does not; secret does.
FOLDING = dataclasses.replace(EXACT, casefold_dirs=frozenset({ROOT, p("secret")}))


def _row(rows: FsRows, op: Op, path: str, **kw: object) -> str:
    refusal = decide_names(op, p(path), rows, **kw)  # type: ignore[arg-type]
    return "allow" if refusal is None else f"{refusal.status} {refusal.row}"


# (op, path, on a folding root, on an exact one): the second column is the attack without the fold.
TABLE = [
    (Op.WRITE, ".GIT/config", "403 read_only", "allow"),
    (Op.WRITE, ".Git/hooks/pre-commit", "403 read_only", "allow"),
    (Op.DELETE, ".gIT", "403 read_only", "allow"),
    (Op.MKDIR, ".GIT/hooks", "403 read_only", "allow"),
    (Op.WRITE, "cafe\u0301/x", "403 read_only", "allow"),  # NFD spelling of the NFC rule
    (Op.WRITE, "CAFÉ/x", "403 read_only", "allow"),
    (Op.READ, ".ENV", "403 hidden", "allow"),
    (Op.READ, ".Env", "403 hidden", "allow"),
    (Op.READ, "secret/KEYS/id", "403 hidden", "allow"),  # secret folds: KEYS is looked up in it
    (Op.READ, "SECRET/keys/id", "403 hidden", "allow"),  # the root folds: SECRET is secret
    (Op.DELETE, "SECRET", "403 hidden", "allow"),  # deleting the parent takes the hidden prefix along
    (Op.DELETE, "LOG", "403 append_only", "allow"),
    (Op.WRITE, "src/.GIT/config", "allow", "allow"),  # src does not fold: src/.GIT is another directory
    (Op.WRITE, "SRC/.git/config", "403 read_only", "allow"),  # but SRC is src, and .git under it is the rule
    (Op.WRITE, ".gitx/config", "allow", "allow"),
    (Op.READ, ".git/config", "allow", "allow"),
]


@pytest.mark.parametrize(("op", "path", "folding", "exact"), TABLE)
def test_rows_compare_as_the_file_system_looks_names_up(op: Op, path: str, folding: str, exact: str) -> None:
    assert _row(FOLDING, op, path) == folding
    assert _row(EXACT, op, path) == exact


@pytest.mark.parametrize(("dest", "folding"), [(".GIT/x", "403 read_only"), (".ENV", "403 hidden"),
                                               ("Secret", "403 hidden"), ("elsewhere", "allow")])
def test_rename_destinations_fold_too(dest: str, folding: str) -> None:
    assert _row(FOLDING, Op.RENAME, "a.txt", dest=p(dest)) == folding
    assert _row(EXACT, Op.RENAME, "a.txt", dest=p(dest)) == "allow"


def test_listings_hide_every_spelling_and_exec_follows_the_fold() -> None:
    assert is_hidden(p(".ENV"), FOLDING) and not is_hidden(p(".ENV"), EXACT)
    assert _row(FOLDING, Op.WRITE, "BIN/tool", want_exec=True) == "allow"
    assert _row(EXACT, Op.WRITE, "BIN/tool", want_exec=True) == "403 exec"
    assert file_mode(p("BIN/tool"), FOLDING, True, False) == 0o755


@pytest.mark.parametrize(("a", "b"), [("README", "readme"), ("Straße", "STRASSE"), ("\u212a", "k"),
                                      ("é", "e\u0301"), ("ǅ", "ǆ"), ("ΣΑΣ", "σας")])
def test_fold_name_folds_case_and_normalisation(a: str, b: str) -> None:
    assert fold_name(a) == fold_name(b)


@pytest.mark.parametrize(("a", "b"), [("a", "b"), ("i", "ı"), ("e", "é"), (".git", ".git\u200b")])
def test_fold_name_keeps_different_letters_apart(a: str, b: str) -> None:
    assert fold_name(a) != fold_name(b)
