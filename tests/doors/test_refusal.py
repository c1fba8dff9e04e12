"""The one error shape: its record, its exception, reading it back, and that it has no second home."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doors._refusal import DoorRefused, Refusal, read_refusal

REPO = Path(__file__).resolve().parents[2]
# Classes outside doors that carry words and a hint, and why each is not the doors' Refusal: the launcher's
# refusals end in an exit code on a terminal, never in an HTTP answer (docs/decisions/transport.md).
LAUNCHER_OWN = {
    "launcher/commands/__init__.py:CommandError": "the CLI's one exit: code, message, hint, JSON details",
    "launcher/manifest/_errors.py:ManifestError": "names a JSON pointer into the document, not a row",
    "launcher/lifecycle/preflight.py:PreflightError": "becomes exit 78 in `run` before anything exists",
    "launcher/policy/path_rules.py:PathRefusal": "a pure preflight verdict on a path: `run` raises it as a "
                                                 "PreflightError, `check` lists it",
    "launcher/daemon/deputy.py:Refusal": "sharness-launchd's verdict on a request: a manifest row and a policy row "
                                         "to change, and the exit code its client ends with",
    "launcher/daemon/policy.py:PolicyError": "names a JSON pointer into the daemon's policy file, not a row",
}


def test_the_shape_has_the_four_keys_and_no_status() -> None:
    refusal = Refusal(409, "append_only", "fs", {"path": "log"}, "append instead")
    assert refusal.shape() == {"error": "append_only", "who": "fs", "detail": {"path": "log"}, "hint": "append instead"}


def test_the_exception_names_who_the_row_the_detail_and_the_hint() -> None:
    refused = DoorRefused(Refusal(403, "edges", "keys", "edge app->keys is not listed", "add it to `edges`"))
    assert str(refused) == "refused by keys (edges): edge app->keys is not listed (hint: add it to `edges`)"
    assert refused.close is False and DoorRefused(refused.refusal, close=True).close is True


@pytest.mark.parametrize(("body", "expected"), [
    ({"error": "version", "who": "fs", "detail": "stale", "hint": "read again"},
     Refusal(409, "version", "fs", "stale", "read again")),
    ({"error": "version"}, Refusal(409, "version", "door-default", "409", "")),
    ({"detail": 7, "who": None}, Refusal(409, "http", "None", "7", "")),
    (["not", "an", "object"], Refusal(409, "http", "door-default", "409", "")),
    (None, Refusal(409, "http", "door-default", "409", "")),
])
def test_a_body_is_read_back_leniently(body: object, expected: Refusal) -> None:
    assert read_refusal(409, body, who="door-default", row="http", detail="409") == expected


TEXT = st.text(max_size=40)


@given(st.sampled_from([400, 403, 404, 409, 413, 429, 502, 507]), TEXT, TEXT, TEXT, TEXT)
def test_a_shape_read_back_is_the_refusal_it_came_from(status: int, row: str, who: str, detail: str,
                                                       hint: str) -> None:
    refusal = Refusal(status, row, who, detail, hint)
    assert read_refusal(status, refusal.shape(), who="x", row="y") == refusal


def _carries_the_shape(node: ast.ClassDef) -> bool:
    """A class whose fields (annotated, or set on self) include a hint beside words for a person."""
    names = {t.target.id for t in node.body if isinstance(t, ast.AnnAssign) and isinstance(t.target, ast.Name)}
    for item in ast.walk(node):
        if isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store) and \
                isinstance(item.value, ast.Name) and item.value.id == "self":
            names.add(item.attr)
    return "hint" in names and bool(names & {"detail", "reason", "message"})


def _shape_classes() -> set[str]:
    found = set()
    for package in ("doors", "pki", "launcher", "bench"):
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and _carries_the_shape(node):
                    found.add(f"{path.relative_to(REPO)}:{node.name}")
    return found


def test_the_error_shape_has_one_home_in_doors_and_the_launcher_keeps_only_its_named_own() -> None:
    assert _shape_classes() == {"doors/_refusal.py:Refusal", *LAUNCHER_OWN}
