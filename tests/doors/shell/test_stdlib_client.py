"""The `sh` client's own checks: the door's SPIFFE ID, its one-URI rule, its request bytes, its imports."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from doors.shell._stdlib_client import (
    NotTheDoor,
    Refused,
    Unreachable,
    connect,
    expected_uri,
    frames,
    peer_problem,
    run_request,
    tls_context,
)
from pki.spiffe import SessionIdentity
from pki.testing import SessionPKI

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


# What the sh client's own path (the console script's) must not import: each is milliseconds of CPU per call
# (ssl's and socket's enums, re's compiler behind json and base64, typing; docs/decisions/bench.md, "shquick").
HEAVY = ("ssl", "socket", "json", "re", "enum", "typing", "base64", "collections", "contextlib", "argparse")


def test_the_console_scripts_sh_path_imports_only_c_modules_of_the_stdlib() -> None:
    code = ("import sys; sys.argv = ['sharness-launch', 'sh', '--', 'true']; import launcher.entry, doors.shell.cli; "
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_the_sh_path_as_the_script_starts_it_loads_no_os_module() -> None:
    """The console script runs with -S (no site, which would load os): then nothing on sh's path loads `os` either
    (its _collections_abc, stat and posixpath were 2.7 ms of CPU per call; docs/decisions/bench.md, "shtrue")."""
    root = str(Path(__file__).resolve().parents[3])
    unwanted = ("os", "stat", "posixpath", *HEAVY)
    code = (f"import sys; sys.path.append({root!r}); sys.argv = ['sharness-launch', 'sh', '--', 'true']; "
            f"import doors.shell.cli; print(sorted(m for m in {unwanted!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-S", "-I", "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_the_environment_reads_as_os_environ_does() -> None:
    code = ("import sys; from doors.shell.cli import process_environ; import os; "
            "print(process_environ() == dict(os.environ))")
    env = {"PATH": "/usr/bin:/bin", "SHARNESS_SESSION": "abc", "ODD": "café"}
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert shown.strip() == "True"


def _reference_context(bundle: str, svid: str) -> ssl.SSLContext:
    """The context the `ssl` package builds for the same policy (the client's before it drove `_ssl` itself)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.verify_flags |= ssl.VERIFY_X509_STRICT
    ctx.load_verify_locations(cafile=bundle)
    ctx.load_cert_chain(certfile=svid, keyfile=svid)
    return ctx


def test_the_context_is_the_one_the_ssl_package_builds_setting_by_setting(tmp_path: Path) -> None:
    pki = SessionPKI.create(TD, SID)
    env = _env(pki, tmp_path, str(tmp_path / "none.sock"))
    lean, reference = (make(env["SHARNESS_BUNDLE"], env["SHARNESS_SVID"]) for make in (tls_context, _reference_context))
    for setting in ("protocol", "minimum_version", "maximum_version", "verify_mode", "verify_flags", "options",
                    "check_hostname", "post_handshake_auth", "security_level"):
        assert int(getattr(lean, setting)) == int(getattr(reference, setting)), setting
    assert lean.minimum_version == lean.maximum_version == ssl.TLSVersion.TLSv1_3
    assert lean.verify_mode == ssl.CERT_REQUIRED and lean.verify_flags & ssl.VERIFY_X509_STRICT
    assert lean.get_ciphers() == reference.get_ciphers()
    assert lean.get_ca_certs() == reference.get_ca_certs() and len(lean.get_ca_certs()) == 1


def test_an_unreadable_svid_is_unreachable_naming_it(tmp_path: Path) -> None:
    env = {"SHARNESS_DOOR_SHELL": str(tmp_path / "shell.sock"), "SHARNESS_SVID": str(tmp_path / "none.pem"),
           "SHARNESS_BUNDLE": str(tmp_path / "none.pem"), "SHARNESS_TRUST_DOMAIN": TD, "SHARNESS_SESSION": SID}
    with pytest.raises(Unreachable, match="SVID or bundle"):
        connect(env)


def _serve_once(pki: SessionPKI, role: str, tmp_path: Path, answer: bytes,
                version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3) -> str:
    """A TLS server on a Unix socket presenting `role`'s SVID, answering one request with `answer`."""
    path = str(tmp_path / "shell.sock")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ctx.maximum_version = version
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(cadata=pki.bundle_pem().decode())
    ctx.load_cert_chain(pki.write_svid(role, tmp_path))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def serve() -> None:
        with listener, contextlib.suppress(OSError):
            conn, _ = listener.accept()
            with ctx.wrap_socket(conn, server_side=True) as tls:
                tls.recv(65536)
                tls.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    return path


def _env(pki: SessionPKI, tmp_path: Path, socket_path: str) -> dict[str, str]:
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(pki.bundle_pem())
    return {"SHARNESS_DOOR_SHELL": socket_path, "SHARNESS_SVID": pki.write_svid("app", tmp_path),
            "SHARNESS_BUNDLE": str(bundle), "SHARNESS_TRUST_DOMAIN": pki.trust_domain,
            "SHARNESS_SESSION": pki.session_id}


FRAMES = (b"HTTP/1.1 200 \r\ntransfer-encoding: chunked\r\n\r\n"
          b"1a\r\n" + b'{"seq":1,"final":{"x":1}}\n' + b"\r\n0\r\n\r\n")


def test_the_shell_door_of_this_session_is_talked_to(tmp_path: Path) -> None:
    pki = SessionPKI.create(TD, SID)
    env = _env(pki, tmp_path, _serve_once(pki, "shell", tmp_path, FRAMES))
    with connect(env, timeout_s=10) as tls:
        assert list(frames(tls, {"argv": ["true"]})) == [{"seq": 1, "final": {"x": 1}}]


def test_another_door_on_the_shell_socket_is_refused_before_any_request(tmp_path: Path) -> None:
    """The attack: a process of the session (here the fs door's SVID) listens where the shell door should."""
    pki = SessionPKI.create(TD, SID)
    env = _env(pki, tmp_path, _serve_once(pki, "fs", tmp_path, FRAMES))
    with pytest.raises(NotTheDoor, match=r"/fs'"):
        connect(env, timeout_s=10)


def test_a_refusal_comes_back_with_its_shape(tmp_path: Path) -> None:
    pki = SessionPKI.create(TD, SID)
    shape = json.dumps({"error": "shell.cwd", "who": "shell", "detail": "no", "hint": "h"}).encode()
    answer = b"HTTP/1.1 403 \r\ncontent-length: %d\r\n\r\n%s" % (len(shape), shape)
    env = _env(pki, tmp_path, _serve_once(pki, "shell", tmp_path, answer))
    with connect(env, timeout_s=10) as tls, pytest.raises(Refused) as refused:
        list(frames(tls, {"argv": ["true"]}))
    assert refused.value.status == 403 and refused.value.shape["error"] == "shell.cwd"


def test_a_door_that_speaks_tls_1_2_is_refused(tmp_path: Path) -> None:
    pki = SessionPKI.create(TD, SID)
    env = _env(pki, tmp_path, _serve_once(pki, "shell", tmp_path, FRAMES, ssl.TLSVersion.TLSv1_2))
    with pytest.raises(NotTheDoor, match="TLS refused"):
        connect(env, timeout_s=10)


def test_a_shell_door_of_another_session_ca_is_refused(tmp_path: Path) -> None:
    """The attack: the right SPIFFE ID on a certificate the session's CA did not sign."""
    impostor = SessionPKI.create(TD, SID)
    env = _env(SessionPKI.create(TD, SID), tmp_path, _serve_once(impostor, "shell", tmp_path, FRAMES))
    with pytest.raises(NotTheDoor, match="TLS refused"):
        connect(env, timeout_s=10)


def test_the_stream_is_read_to_its_end_in_order(tmp_path: Path) -> None:
    """Several frames in records cut anywhere, then the chunked end: every frame, in order."""
    pki = SessionPKI.create(TD, SID)
    lines = [b'{"seq":0,"started":{"id":"c1"}}\n', b'{"seq":1,"stream":"stdout","length":3}\nabc',
             b'{"seq":2,"final":{"exit_code":0}}\n']
    body = b"".join(b"%x\r\n%s\r\n" % (len(line), line) for line in lines)
    answer = (b"HTTP/1.1 200 \r\ncontent-type: application/vnd.sharness.shell-frames\r\n"
              b"transfer-encoding: chunked\r\n\r\n")
    env = _env(pki, tmp_path, _serve_once(pki, "shell", tmp_path, answer + body + b"0\r\n\r\n"))
    with connect(env, timeout_s=10) as tls:
        got = list(frames(tls, {"argv": ["true"]}))
    assert got == [{"seq": 0, "started": {"id": "c1"}}, {"seq": 1, "stream": "stdout", "data": b"abc"},
                   {"seq": 2, "final": {"exit_code": 0}}]
