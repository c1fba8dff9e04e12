"""The pyOpenSSL backend of the transport: same policy, same refusal words, resumption, SVID loading."""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator
from typing import Any

import pytest
import trio
from OpenSSL import SSL

from doors._transport import (
    AsyncDoorClient,
    DoorNotTrusted,
    DoorRefused,
    TlsContext,
    _tls,
    client_context,
    client_context_from_file,
    connect,
    fresh_exchange,
    server_context,
    server_context_from_file,
)
from doors._transport._pyossl import PyOpenSSLObject
from doors._transport._pyossl_errors import as_ssl_error, reason_name
from doors._transport._pyossl_tls import load_svid_fd, load_svid_pem
from doors._transport.testing import Session, doors_in_thread, scratch_dir, session
from doors.client import DoorClient
from pki.testing import SessionPKI

BACKENDS: tuple[_tls.Backend, ...] = ("pyopenssl", "stdlib")


@pytest.fixture
def s() -> Iterator[Session]:
    with scratch_dir() as directory:
        yield Session(SessionPKI.create(), directory)


# --- the pure error mapping -----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "name"), [
    ("tls alert unsupported certificate", "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE"),
    ("tls alert certificate expired", "SSLV3_ALERT_CERTIFICATE_EXPIRED"),
    ("tls alert unknown ca", "TLSV1_ALERT_UNKNOWN_CA"),
    ("tls alert access denied", "TLSV1_ALERT_ACCESS_DENIED"),
    ("tls alert certificate required", "TLSV13_ALERT_CERTIFICATE_REQUIRED"),
    ("tlsv1 alert unknown ca", "TLSV1_ALERT_UNKNOWN_CA"),
    ("sslv3 alert bad certificate", "SSLV3_ALERT_BAD_CERTIFICATE"),
    ("peer did not return a certificate", "PEER_DID_NOT_RETURN_A_CERTIFICATE"),
])
def test_openssl_reason_texts_get_the_stdlibs_names(text: str, name: str) -> None:
    assert reason_name(text) == name


def test_a_verify_failure_carries_its_verify_message() -> None:
    error = as_ssl_error([("SSL routines", "", "certificate verify failed")], "certificate has expired")
    assert isinstance(error, ssl.SSLCertVerificationError)
    assert error.reason == "CERTIFICATE_VERIFY_FAILED"
    assert error.verify_message == "certificate has expired"


def test_an_unexpected_eof_is_the_stdlibs_eof_error() -> None:
    error = as_ssl_error([("SSL routines", "", "unexpected eof while reading")], None)
    assert isinstance(error, ssl.SSLEOFError)


def test_the_last_error_in_the_queue_names_the_failure() -> None:
    error = as_ssl_error([("x509 certificate routines", "", "some detail"),
                          ("SSL routines", "", "tls alert decrypt error")], None)
    assert error.reason == "TLSV1_ALERT_DECRYPT_ERROR"
    assert not isinstance(error, ssl.SSLCertVerificationError)


# --- contexts and backend selection ---------------------------------------------------------------------


def test_the_backend_is_chosen_in_code_and_both_build_contexts(s: Session) -> None:
    assert _tls.BACKEND in BACKENDS
    assert isinstance(server_context(s.pki.bundle_pem(), "pyopenssl"), SSL.Context)
    assert isinstance(client_context(s.pki.bundle_pem(), "pyopenssl"), SSL.Context)
    assert isinstance(server_context(s.pki.bundle_pem(), "stdlib"), ssl.SSLContext)
    assert isinstance(client_context(s.pki.bundle_pem(), "stdlib"), ssl.SSLContext)


def test_the_svid_loads_from_a_memfd_without_a_file(s: Session) -> None:
    fd = os.memfd_create("sharness-test-svid")
    try:
        os.write(fd, s.pki.svid_pem("fs"))
        ctx = server_context(s.pki.bundle_pem(), "pyopenssl")
        assert isinstance(ctx, SSL.Context)
        load_svid_fd(ctx, fd)
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        load_svid_fd(ctx, fd)


def test_a_file_without_a_key_and_leaf_is_refused_in_words(s: Session) -> None:
    ctx = client_context(s.pki.bundle_pem(), "pyopenssl")
    assert isinstance(ctx, SSL.Context)
    with pytest.raises(ValueError, match="SVID file x does not hold a PEM key and its leaf certificate"):
        load_svid_pem(ctx, s.pki.bundle_pem(), "SVID file x")
    other_key = SessionPKI.create().svid_pem("fs").split(b"-----BEGIN CERTIFICATE")[0]
    leaf = s.pki.svid_pem("fs").split(b"-----END PRIVATE KEY-----\n")[1]
    with pytest.raises(ValueError, match="does not hold a PEM key and its leaf"):
        load_svid_pem(ctx, other_key + leaf, "SVID file y")
    with pytest.raises(OSError, match="cannot open SVID file"):
        client_context_from_file(s.pki.bundle_pem(), os.path.join(s.directory, "missing.pem"), "pyopenssl")


# --- over real sockets ----------------------------------------------------------------------------------


def _ctx(s: Session, role: str, backend: _tls.Backend, *, server: bool, pem: bytes | None = None) -> TlsContext:
    path = s.pem_path(f"{role}-{backend}-{server}", pem) if pem is not None else s.svid_path(role)
    build = server_context_from_file if server else client_context_from_file
    return build(s.pki.bundle_pem(), path, backend)


@pytest.mark.parametrize("door_backend", BACKENDS)
@pytest.mark.parametrize("client_backend", BACKENDS)
async def test_each_backend_talks_to_the_other(door_backend: _tls.Backend, client_backend: _tls.Backend) -> None:
    async with session() as s, trio.open_nursery() as nursery:
        address = await s.start_door(nursery, "fs", ctx=_ctx(s, "fs", door_backend, server=True))
        dial = s.dial("fs", address, _ctx(s, "app", client_backend, server=False), "app")
        response, _ = await fresh_exchange(dial, "GET", "/v0/whoami")
        assert response.json()["peer_role"] == "app"
        refused = s.dial("fs", address, _ctx(s, "net", client_backend, server=False), "net")
        with pytest.raises(DoorRefused, match="edge net->fs is not in the manifest row `edges`"):
            await fresh_exchange(refused)
        nursery.cancel_scope.cancel()


async def _refusal(kind: str, door_backend: _tls.Backend, client_backend: _tls.Backend) -> tuple[str, str, str]:
    """What the client is told and what the door records when an odd certificate calls."""
    async with session() as s, trio.open_nursery() as nursery:
        address = await s.start_door(nursery, "fs", ctx=_ctx(s, "fs", door_backend, server=True))
        odd = _ctx(s, "app", client_backend, server=False, pem=s.pki.odd_leaf(kind, "app"))
        with pytest.raises(DoorRefused) as caught:
            await fresh_exchange(s.dial("fs", address, odd, "app"))
        await trio.sleep(0.05)  # the door records its refusal after its alert went out
        nursery.cancel_scope.cancel()
    recorded = [e["reason"] for e in s.events if e["kind"] == "transport.refused"]
    return caught.value.refusal.detail, caught.value.refusal.hint, recorded[0] if recorded else ""


@pytest.mark.parametrize("kind", ["other_ca", "self_signed", "expired", "not_yet_valid", "wrong_eku", "ca_flag",
                                  "dns_only", "other_session"])
async def test_a_refused_client_gets_the_same_words_from_either_door(kind: str) -> None:
    told_by_stdlib = await _refusal(kind, "stdlib", "stdlib")
    told_by_pyopenssl = await _refusal(kind, "pyopenssl", "pyopenssl")
    assert told_by_pyopenssl[:2] == told_by_stdlib[:2]
    assert told_by_pyopenssl[2] and told_by_stdlib[2]


async def test_a_client_without_a_certificate_is_told_so() -> None:
    async with session() as s, trio.open_nursery() as nursery:
        address = await s.start_door(nursery, "fs", ctx=_ctx(s, "fs", "pyopenssl", server=True))
        with pytest.raises(DoorRefused, match="presented no client certificate"):
            await fresh_exchange(s.dial("fs", address, client_context(s.pki.bundle_pem(), "pyopenssl")))
        await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
    assert any(e.get("reason") == "client presented no certificate" for e in s.events)


async def test_a_pyopenssl_client_refuses_a_door_of_another_session() -> None:
    async with session() as s, trio.open_nursery() as nursery:
        other = SessionPKI.create(s.pki.trust_domain, s.pki.session_id)
        door_ctx = server_context_from_file(other.bundle_pem(), other.write_svid("fs", s.directory), "pyopenssl")
        address = await s.start_door(nursery, "fs", ctx=door_ctx)
        with pytest.raises(DoorNotTrusted, match="not one of this session's SVIDs"):
            await connect(s.dial("fs", address, _ctx(s, "app", "pyopenssl", server=False), "app"))
        nursery.cancel_scope.cancel()


def _stdlib_client(s: Session, *, maximum: ssl.TLSVersion | None = None, curve: str | None = None) -> Any:
    ctx = _ctx(s, "app", "stdlib", server=False)
    assert isinstance(ctx, ssl.SSLContext)
    if maximum is not None:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.maximum_version = maximum
    if curve is not None:
        ctx.set_ecdh_curve(curve)
    return ctx


async def test_the_door_speaks_tls_13_only_and_falls_back_to_p256() -> None:
    async with session() as s, trio.open_nursery() as nursery:
        address = await s.start_door(nursery, "fs", ctx=_ctx(s, "fs", "pyopenssl", server=True))
        with pytest.raises(DoorRefused, match=r"TLS 1\.3 only"):
            await fresh_exchange(s.dial("fs", address, _stdlib_client(s, maximum=ssl.TLSVersion.TLSv1_2), "app"))
        p256_only = s.dial("fs", address, _stdlib_client(s, curve="prime256v1"), "app")
        response, _ = await fresh_exchange(p256_only, "GET", "/v0/whoami")
        assert response.json()["peer_role"] == "app"
        tls = await connect(s.dial("fs", address, _ctx(s, "app", "pyopenssl", server=False), "app"))
        try:
            assert isinstance(tls.ssl_object, PyOpenSSLObject)
            assert tls.ssl_object.version() == "TLSv1.3"
            assert tls.ssl_object.conn.get_group_name() == "x25519"
        finally:
            await tls.aclose()
        nursery.cancel_scope.cancel()


async def test_the_async_client_resumes_and_a_resumed_client_is_checked_again() -> None:
    async with session() as s, trio.open_nursery() as nursery:
        fs_ctx = _ctx(s, "fs", "pyopenssl", server=True)
        admitting = await s.start_door(nursery, "fs", ctx=fs_ctx)
        s.edges = frozenset()
        refusing = await s.start_door(nursery, "fs", ctx=fs_ctx, name="fs-no-edges")
        dial = s.dial("fs", admitting, _ctx(s, "app", "pyopenssl", server=False), "app")
        _, ticket = await fresh_exchange(dial)
        tls = await connect(dial, tls_session=ticket)
        try:
            assert tls.ssl_object.session_reused
        finally:
            await tls.aclose()
        async with AsyncDoorClient(s.dial("fs", refusing, dial.ctx, "app"), tls_session=ticket) as client:
            with pytest.raises(DoorRefused, match="edge app->fs"):
                await client.hello()
        nursery.cancel_scope.cancel()


async def test_a_stdlib_session_is_not_offered_to_a_pyopenssl_context() -> None:
    async with session() as s, trio.open_nursery() as nursery:
        address = await s.start_door(nursery, "fs", ctx=_ctx(s, "fs", "stdlib", server=True))
        _, stdlib_ticket = await fresh_exchange(s.dial("fs", address, _ctx(s, "app", "stdlib", server=False), "app"))
        with pytest.raises(TypeError, match="cannot resume"):
            await connect(s.dial("fs", address, _ctx(s, "app", "pyopenssl", server=False), "app"),
                          tls_session=stdlib_ticket)
        nursery.cancel_scope.cancel()


# --- the app's blocking client ---------------------------------------------------------------------------


def _blocking(s: Session, address: object, backend: _tls.Backend, svid: str | None = None) -> DoorClient:
    ctx = client_context_from_file(s.pki.bundle_pem(), svid or s.svid_path("app"), backend)
    return DoorClient(s.dial("fs", address, ctx, "app"))  # type: ignore[arg-type]


def test_the_blocking_client_resumes_after_close_notify(s: Session) -> None:
    with doors_in_thread(s, {"fs": "fs"}) as doors, _blocking(s, doors["fs"], "pyopenssl") as fs:
        assert fs.request("POST", "/v0/echo", body=b"x" * 100_000).body == b"x" * 100_000
        first = fs._conn
        fs.close()
        assert fs.request("GET", "/v0/whoami").json()["peer_role"] == "app"
        assert fs._conn is not first and fs._conn is not None and fs._conn.sock.session_reused


@pytest.mark.parametrize("kind", ["expired", "other_ca", "wrong_eku"])
def test_the_blocking_client_gets_the_same_words_on_either_backend(s: Session, kind: str) -> None:
    odd = s.pem_path(f"odd-{kind}", s.pki.odd_leaf(kind, "app"))
    told: dict[str, tuple[str, str]] = {}
    with doors_in_thread(s, {"fs": "fs"}) as doors:
        for backend in BACKENDS:
            with _blocking(s, doors["fs"], backend, svid=odd) as fs, pytest.raises(DoorRefused) as caught:
                fs.hello()
            told[backend] = (caught.value.refusal.detail, caught.value.refusal.hint)
    assert told["pyopenssl"] == told["stdlib"]
