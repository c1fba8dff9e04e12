"""The `sh` client's own checks: the door's SPIFFE ID, its one-URI rule, its request bytes, its imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from doors.shell._stdlib_client import Unreachable, connect, expected_uri, peer_problem, run_request
from pki.spiffe import SessionIdentity

SID, TD = "0123abcd", "demo.sharness.test"
SHELL = f"spiffe://{TD}/session/{SID}/shell"


def test_the_expected_id_is_the_one_pki_formats() -> None:
    assert expected_uri(TD, SID) == SessionIdentity(TD, SID, "shell").uri()


@pytest.mark.parametrize(("sans", "problem"), [
    ((("URI", SHELL),), None),
    ((("URI", SHELL), ("DNS", "shell")), None),
    ((("URI", SHELL.replace("/shell", "/fs")),), "not"),
    ((("URI", SHELL), ("URI", SHELL)), "2 URI SANs"),
    ((), "0 URI SANs"),
    ((("URI", SHELL.replace(SID, "ffffffff")),), "not"),
])
def test_the_peer_must_hold_exactly_this_sessions_shell_id(sans: tuple[tuple[str, str], ...],
                                                           problem: str | None) -> None:
    found = peer_problem({"subjectAltName": sans}, SHELL)
    assert found is None if problem is None else problem in (found or "")


def test_the_request_is_one_post_with_its_length() -> None:
    raw = run_request({"argv": ["true"]})
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v0/shell/run HTTP/1.1\r\n") and json.loads(body) == {"argv": ["true"]}
    assert f"content-length: {len(body)}".encode() in head


def test_outside_a_session_it_names_what_is_missing() -> None:
    with pytest.raises(Unreachable, match="SHARNESS_DOOR_SHELL"):
        connect({})


def test_the_sh_path_loads_no_door_runtime_and_no_launcher_command() -> None:
    code = ("import sys; sys.argv = ['sharness-launch', 'sh', '--', 'true']; import launcher.cli, doors.shell.cli; "
            "print(sorted(m for m in ('trio', 'h11', 'OpenSSL', 'cryptography', 'jsonschema', 'dataclasses', "
            "'launcher.manifest', 'doors.client') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
