"""The app's blocking client against real doors: reuse, resumption, refusals in words, from_env."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

import doors.client
from doors._http import Limits
from doors._transport.testing import Session, doors_in_thread, scratch_dir
from doors.client import DoorClient, DoorNotTrusted, DoorRefused, DoorUnavailable, fresh_request
from pki.testing import SessionPKI
from tests import as_user


@pytest.fixture
def s() -> Iterator[Session]:
    with scratch_dir() as directory:
        yield Session(SessionPKI.create(), directory)


def _client(s: Session, role: str, address: object, as_role: str = "app", svid: str | None = None) -> DoorClient:
    bundle = s.pem_path("bundle", s.pki.bundle_pem())
    return DoorClient.from_files(role, address, svid or s.svid_path(as_role), bundle,  # type: ignore[arg-type]
                                 s.pki.trust_domain, s.pki.session_id, client_role=as_role)


@pytest.mark.parametrize("tcp", [False, True], ids=["unix", "tcp"])
def test_requests_reuse_one_connection(s: Session, tcp: bool) -> None:
    with doors_in_thread(s, {"fs": "fs"}, tcp=tcp) as doors, _client(s, "fs", doors["fs"]) as fs:
        assert fs.request("GET", "/v0/whoami").json()["peer_role"] == "app"
        first = fs._conn
        assert fs.request("POST", "/v0/echo", body=b"hi").body == b"hi"
        assert fs.request("POST", "/v0/echo", json={"a": 1}).json() == {"a": 1}
        assert fs._conn is first
    assert len([e for e in s.events if e["kind"] == "http.request"]) == 3


def test_after_the_door_closes_an_idle_connection_the_client_reconnects_and_resumes(s: Session) -> None:
    limits = Limits(idle_timeout_s=0.05)
    with doors_in_thread(s, {"fs": "fs"}, limits=limits) as doors, _client(s, "fs", doors["fs"]) as fs:
        assert fs.request("GET", "/v0/whoami").ok
        first = fs._conn
        assert first is not None
        _wait_until_closed_by_the_door(first)
        assert fs.request("POST", "/v0/echo", body=b"after").body == b"after"
        assert fs._conn is not first
        assert fs._conn is not None and fs._conn.sock.session_reused


def _wait_until_closed_by_the_door(conn: object) -> None:
    import select

    poller = select.poll()
    poller.register(conn.sock.fileno(), select.POLLIN)  # type: ignore[attr-defined]
    assert poller.poll(10_000), "the door never closed the idle connection"


def test_an_edge_not_listed_is_refused_by_the_door(s: Session) -> None:
    with (doors_in_thread(s, {"keys": "keys"}) as doors, _client(s, "keys", doors["keys"]) as keys,
          pytest.raises(DoorRefused) as caught):
        keys.hello()
    assert caught.value.refusal.who == "keys"
    assert "edge app->keys is not in the manifest row `edges`" in caught.value.refusal.detail
    assert "manifest row `edges`" in caught.value.refusal.hint


def test_a_certificate_of_another_ca_is_refused_by_tls(s: Session) -> None:
    odd = s.pem_path("other", s.pki.odd_leaf("other_ca", "app"))
    with (doors_in_thread(s, {"fs": "fs"}) as doors, _client(s, "fs", doors["fs"], svid=odd) as fs,
          pytest.raises(DoorRefused, match="does not trust the CA")):
        fs.hello()


def test_a_door_with_another_role_is_not_trusted(s: Session) -> None:
    with (doors_in_thread(s, {"fs": "net"}) as doors, _client(s, "fs", doors["fs"]) as fs,
          pytest.raises(DoorNotTrusted, match="role 'net', expected 'fs'")):
        fs.hello()


def test_fresh_request_returns_a_resumable_session(s: Session) -> None:
    with doors_in_thread(s, {"fs": "fs"}) as doors:
        ctx = s.client_ctx("app")
        td, sid = s.pki.trust_domain, s.pki.session_id
        response, tls_session = fresh_request(doors["fs"], ctx, role="fs", trust_domain=td, session_id=sid,
                                              target="/v0/whoami")
        assert response.ok and tls_session is not None
        again, _ = fresh_request(doors["fs"], ctx, role="fs", trust_domain=td, session_id=sid,
                                 target="/v0/whoami", tls_session=tls_session)
        assert again.json()["peer_role"] == "app"


def test_from_env_reads_the_sharness_variables(s: Session) -> None:
    with doors_in_thread(s, {"fs": "fs"}) as doors:
        env = {"SHARNESS_SVID": s.svid_path("app"), "SHARNESS_BUNDLE": s.pem_path("b", s.pki.bundle_pem()),
               "SHARNESS_TRUST_DOMAIN": s.pki.trust_domain, "SHARNESS_SESSION": s.pki.session_id,
               "SHARNESS_DOOR_FS": str(doors["fs"])}
        with DoorClient.from_env("fs", env) as fs:
            assert fs.request("GET", "/v0/whoami").json()["peer_id"] == s.pki.identity("app").uri()


def test_from_env_without_the_door_names_the_launcher() -> None:
    with pytest.raises(DoorRefused) as caught:
        DoorClient.from_env("keys", {})
    assert caught.value.refusal.who == "launcher"
    assert "SHARNESS_DOOR_KEYS" in caught.value.refusal.detail


def test_a_door_that_closed_during_the_handshake_is_unavailable_with_a_reason(
        s: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    def closed_door(*args: object) -> socket.socket:
        ours, theirs = socket.socketpair()
        theirs.close()
        return ours

    monkeypatch.setattr(doors.client, "_open", closed_door)
    with pytest.raises(DoorUnavailable, match="closed the connection during the TLS handshake") as caught:
        _client(s, "fs", "/run/sharness-none/fs.sock").request("GET", "/v0/whoami")
    assert "maximum number of connections" in str(caught.value)


PROBE = """
import sys
from doors.client import DoorClient, DoorRefused
try:
    DoorClient.from_files(*sys.argv[1:7]).hello()
except DoorRefused as exc:
    print(exc.refusal.who, "|", exc.refusal.detail)
"""


@pytest.mark.root
def test_a_uid_the_socket_does_not_admit_is_refused_by_the_kernel(s: Session) -> None:
    with doors_in_thread(s, {"fs": "fs"}) as doors:
        os.chmod(s.directory, 0o711)
        os.chmod(str(doors["fs"]), 0o600)
        svid, bundle = s.svid_path("app"), s.pem_path("bundle", s.pki.bundle_pem())
        for path in (svid, bundle):
            os.chmod(path, 0o644)  # test keys only: the probe runs as nobody
        argv = [sys.executable, "-c", PROBE, "fs", str(doors["fs"]), svid, bundle, s.pki.trust_domain,
                s.pki.session_id]
        cwd = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        result = subprocess.run([*as_user.argv(65534), *argv], capture_output=True, text=True, cwd=cwd,
                                timeout=60, check=False)
    assert result.stdout.startswith("kernel |"), result.stderr
    assert "Permission denied" in result.stdout
