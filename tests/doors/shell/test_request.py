"""The run request's parser: every field's refusal names it, cwd cannot leave by its form. Pure."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest

from doors._refusal import DoorRefused
from doors.shell._request import DEFAULT_SHELL, MAX_STDIN_BYTES, normalise_cwd, parse_run


def _refusal(body: Any) -> tuple[int, str]:
    with pytest.raises(DoorRefused) as caught:
        parse_run(body)
    return caught.value.refusal.status, caught.value.refusal.row


@pytest.mark.parametrize(("cwd", "expected"), [
    (None, "."), ("", "."), (".", "."), ("./src//lib/", "src/lib"), ("a/./b", "a/b"), ("..a/b..", "..a/b.."),
])
def test_cwd_is_normalised(cwd: str | None, expected: str) -> None:
    assert normalise_cwd(cwd) == expected


@pytest.mark.parametrize("cwd", ["/etc", "/", "..", "a/../..", "a/..", "./../x", "a/b/../../.."])
def test_cwd_that_could_leave_is_refused_by_row(cwd: str) -> None:
    assert _refusal({"argv": ["true"], "cwd": cwd}) == (403, "shell.cwd")


@pytest.mark.parametrize(("body", "row"), [
    ([], "shell.request.body"),
    ({"argv": ["true"], "extra": 1}, "shell.request.body"),
    ({}, "shell.request.argv"),
    ({"argv": ["true"], "script": "true"}, "shell.request.argv"),
    ({"argv": []}, "shell.request.argv"),
    ({"argv": "true"}, "shell.request.argv"),
    ({"argv": ["a\0b"]}, "shell.request.argv"),
    ({"argv": ["true"], "shell": "/bin/bash"}, "shell.request.shell"),
    ({"script": 3}, "shell.request.script"),
    ({"script": "true", "shell": ""}, "shell.request.shell"),
    ({"argv": ["true"], "timeout_ms": 0}, "shell.request.timeout_ms"),
    ({"argv": ["true"], "timeout_ms": True}, "shell.request.timeout_ms"),
    ({"argv": ["true"], "timeout_ms": 1.5}, "shell.request.timeout_ms"),
    ({"argv": ["true"], "max_output_bytes": 10}, "shell.request.max_output_bytes"),
    ({"argv": ["true"], "tty": "yes"}, "shell.request.tty"),
    ({"argv": ["true"], "stdin": 5}, "shell.request.stdin"),
    ({"argv": ["true"], "stdin": {"base64": "!!"}}, "shell.request.stdin"),
    ({"argv": ["true"], "cwd": 7}, "shell.request.cwd"),
])
def test_malformed_fields_are_named(body: Any, row: str) -> None:
    assert _refusal(body)[1] == row


def test_argv_request_defaults_to_no_stdin() -> None:
    run = parse_run({"argv": ["ls", "-l"]})
    assert run.argv == ("ls", "-l") and run.stdin is None and run.cwd == "." and run.env == () and not run.tty
    assert run.audit_command() == {"argv": ["ls", "-l"]}


def test_script_runs_under_its_shell_and_audits_only_its_hash() -> None:
    run = parse_run({"script": "echo secret-ish", "shell": "/bin/bash"})
    assert run.argv == ("/bin/bash", "-c", "echo secret-ish") and run.script
    assert run.audit_command() == {"shell": "/bin/bash", "script_bytes": 15,
                                   "script_sha256": hashlib.sha256(b"echo secret-ish").hexdigest()}
    assert parse_run({"script": "true"}).argv[0] == DEFAULT_SHELL


def test_stdin_forms() -> None:
    assert parse_run({"argv": ["cat"], "stdin": "none"}).stdin is None
    assert parse_run({"argv": ["cat"], "stdin": "hi"}).stdin == b"hi"
    blob = base64.b64encode(b"\xff\x00").decode()
    assert parse_run({"argv": ["cat"], "stdin": {"base64": blob}}).stdin == b"\xff\x00"
    assert _refusal({"argv": ["cat"], "stdin": "x" * (MAX_STDIN_BYTES + 1)}) == (413, "shell.request.stdin")
