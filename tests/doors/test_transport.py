"""The mTLS transport end to end over real sockets: matrix of roles, refused certificates, Unix and TCP."""

from __future__ import annotations

import functools
import itertools
import os

import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes

from doors._transport import (
    AsyncDoorClient,
    DoorNotTrusted,
    DoorRefused,
    DoorUnavailable,
    _client,
    client_context,
    client_context_from_file,
    connect,
    fresh_exchange,
    serve_mtls,
    unix_listener,
)
from doors._transport.testing import session, tiny_router
from pki.bundle import svid_pem
from pki.edges import EdgePolicy
from pki.issue import LEAF_EKU, LEAF_KEY_USAGE, leaf_spec, new_key
from pki.testing import SessionPKI
from pki.vocabulary import DEFAULT_EDGES, ROLES

PAIRS = list(itertools.product(ROLES, ROLES))


async def test_every_role_pair_over_the_default_edges() -> None:
    async with session() as s, trio.open_nursery() as nursery:
        addresses = {role: await s.start_door(nursery, role) for role in ROLES}
        for client_role, server_role in PAIRS:
            dial = s.dial(server_role, addresses[server_role], s.client_ctx(client_role), client_role)
            if (client_role, server_role) in DEFAULT_EDGES:
                response, _ = await fresh_exchange(dial, "GET", "/v0/whoami")
                assert response.json()["peer_role"] == client_role
                continue
            with pytest.raises(DoorRefused) as caught:
                await fresh_exchange(dial, "GET", "/v0/whoami")
            assert caught.value.refusal.who == server_role
            assert caught.value.refusal.row == "edges"
            detail = caught.value.refusal.detail
            assert f"edge {client_role}->{server_role} is not in the manifest row `edges`" in detail
        refusals = [e for e in s.events if e["kind"] == "transport.refused"]
        assert len(refusals) == len(PAIRS) - len(DEFAULT_EDGES)
        assert all(e["stage"] == "edge" and isinstance(e["peer_uid"], int) for e in refusals)
        nursery.cancel_scope.cancel()


# Refused by OpenSSL during the handshake (the client reads the alert), or by our SVID check (403).
ODD_CLIENTS = {
    "other_ca": "does not trust the CA",
    "self_signed": "does not trust the CA",
    "expired": "expired",
    "not_yet_valid": "rejected your certificate",
    "two_uris": "2 URI SANs",
    "ca_flag": "could not accept your certificate",
    "wrong_eku": "not allowed for TLS client use",
    "other_session": "session ffffffff",
    "other_trust_domain": "could not accept your certificate",
    "no_uri": "no URI SAN",
    "dns_only": "could not accept your certificate",
    "wrong_key_usage": "KeyUsage",
}


@pytest.mark.parametrize("kind", sorted(ODD_CLIENTS))
async def test_an_odd_client_certificate_is_refused_with_its_reason(kind: str) -> None:
    async with session() as s, trio.open_nursery() as nursery:
        address = await s.start_door(nursery, "fs")
        odd = s.pem_path(f"odd-{kind}", s.pki.odd_leaf(kind, "app"))
        dial = s.dial("fs", address, client_context_from_file(s.pki.bundle_pem(), odd), "app")
        with pytest.raises(DoorRefused) as caught:
            await fresh_exchange(dial)
        assert caught.value.refusal.who == "fs"
        assert ODD_CLIENTS[kind] in caught.value.refusal.detail
        refusals = [e for e in s.events if e["kind"] == "transport.refused"]
        assert len(refusals) == 1 and refusals[0]["stage"] in ("tls", "svid")
        nursery.cancel_scope.cancel()


def _forged_leaf(pki: SessionPKI, role: str) -> bytes:
    """A conformant-looking leaf naming the session CA as issuer (name and key identifier), signed by another key."""
    spec = leaf_spec(pki.ca_cert, pki.identity(role), pki.created, pki.ttl_s)
    key, forger = new_key(), new_key()
    ski = pki.ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    leaf = (
        x509.CertificateBuilder().subject_name(spec.subject).issuer_name(pki.ca_cert.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(spec.not_before).not_valid_after(spec.not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(LEAF_KEY_USAGE, critical=True)
        .add_extension(x509.ExtendedKeyUsage(list(LEAF_EKU)), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier(ski, None, None), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(u) for u in spec.uris]),
                       critical=False)
        .sign(forger, hashes.SHA256())
    )
    return svid_pem(key, leaf)


async def test_a_leaf_forged_in_the_session_cas_name_is_refused_for_its_signature() -> None:
    async with session() as s, trio.open_nursery() as nursery:
        address = await s.start_door(nursery, "fs")
        forged = s.pem_path("forged", _forged_leaf(s.pki, "app"))
        dial = s.dial("fs", address, client_context_from_file(s.pki.bundle_pem(), forged), "app")
        with pytest.raises(DoorRefused) as caught:
            await fresh_exchange(dial)
        assert caught.value.refusal.who == "fs" and caught.value.refusal.row == "svid"
        assert "signature" in caught.value.refusal.detail and "not signed by it" in caught.value.refusal.detail
        assert s.events[0]["stage"] == "tls" and "signature failure" in s.events[0]["reason"]
        nursery.cancel_scope.cancel()


async def test_a_client_without_a_certificate_is_refused() -> None:
    async with session() as s, trio.open_nursery() as nursery:
        address = await s.start_door(nursery, "fs")
        with pytest.raises(DoorRefused) as caught:
            await fresh_exchange(s.dial("fs", address, client_context(s.pki.bundle_pem())))
        assert "no client certificate" in caught.value.refusal.detail
        assert s.events[0]["reason"] == "client presented no certificate"
        nursery.cancel_scope.cancel()


async def test_the_client_refuses_a_door_that_is_not_the_dialled_role() -> None:
    async with session() as s, trio.open_nursery() as nursery:
        # The "fs" socket is served by the net door's SVID: an app dialling fs must not talk to it.
        address = await s.start_door(nursery, "fs", ctx=s.server_ctx("net"))
        with pytest.raises(DoorNotTrusted) as caught:
            await fresh_exchange(s.dial("fs", address, s.client_ctx("app"), "app"))
        assert "role 'net', expected 'fs'" in caught.value.reason
        nursery.cancel_scope.cancel()


async def test_the_client_refuses_a_door_of_another_session_ca() -> None:
    async with session() as s, session() as other, trio.open_nursery() as nursery:
        address = await other.start_door(nursery, "fs")
        with pytest.raises(DoorNotTrusted) as caught:
            await fresh_exchange(s.dial("fs", address, s.client_ctx("app"), "app"))
        assert "not one of this session's SVIDs" in caught.value.reason
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("tcp", [False, True], ids=["unix", "tcp"])
async def test_allowed_and_refused_over_unix_and_tcp(tcp: bool) -> None:
    async with session() as s, trio.open_nursery() as nursery:
        address = await s.start_door(nursery, "keys", tcp=tcp)
        response, _ = await fresh_exchange(s.dial("keys", address, s.client_ctx("net"), "net"), "GET",
                                           "/v0/whoami")
        assert response.json()["peer_role"] == "net"
        with pytest.raises(DoorRefused, match="edge app->keys"):
            await fresh_exchange(s.dial("keys", address, s.client_ctx("app"), "app"))
        with pytest.raises(DoorRefused, match="does not trust the CA"):
            odd = s.pem_path("other", s.pki.odd_leaf("other_ca", "net"))
            await fresh_exchange(s.dial("keys", address, client_context_from_file(s.pki.bundle_pem(), odd)))
        nursery.cancel_scope.cancel()


async def test_keep_alive_reuses_one_connection_and_resumes_after_close() -> None:
    async with session() as s, trio.open_nursery() as nursery:
        address = await s.start_door(nursery, "fs")
        async with AsyncDoorClient(s.dial("fs", address, s.client_ctx("app"), "app")) as client:
            for size in (1, 1000, 100_000):
                response = await client.request("POST", "/v0/echo", body=b"x" * size)
                assert response.body == b"x" * size
            first = client._tls
            assert first is not None
            assert (await client.request("GET", "/v0/whoami")).ok
            assert client._tls is first
            assert not first.ssl_object.session_reused
            await client.aclose()
            assert (await client.request("GET", "/v0/whoami")).json()["peer_role"] == "app"
            assert client._tls is not None and client._tls.ssl_object.session_reused
        requests = [e for e in s.events if e["kind"] == "http.request"]
        assert len(requests) == 5 and all(e["client_role"] == "app" for e in requests)
        nursery.cancel_scope.cancel()


async def test_a_resumed_session_is_checked_again() -> None:
    async with session(frozenset({("app", "fs")})) as s, trio.open_nursery() as nursery:
        fs_ctx = s.server_ctx("fs")
        admitting = await s.start_door(nursery, "fs", ctx=fs_ctx)
        s.edges = frozenset()
        refusing = await s.start_door(nursery, "fs", ctx=fs_ctx, name="fs-no-edges")
        dial = s.dial("fs", admitting, s.client_ctx("app"), "app")
        _, ticket = await fresh_exchange(dial, "GET", "/v0/whoami")
        tls = await connect(dial, tls_session=ticket)
        assert tls.ssl_object.session_reused
        await tls.aclose()
        # The same ticket is good for the door that lists no edge: resumption must not skip the check.
        refused_dial = s.dial("fs", refusing, dial.ctx, "app")
        with pytest.raises(DoorRefused, match="edge app->fs"):
            await fresh_exchange(refused_dial, tls_session=ticket)
        nursery.cancel_scope.cancel()


FULL = "closed the connection during the TLS handshake"


async def test_a_full_door_is_unavailable_with_a_reason() -> None:
    async with session() as s, trio.open_nursery() as nursery:
        path = os.path.join(s.directory, "fs.sock")
        await nursery.start(functools.partial(
            serve_mtls, [unix_listener(path)], s.server_ctx("fs"), s.pki.identity("fs"), EdgePolicy(s.edges),
            tiny_router("fs"), s.events.append, max_connections=1))
        async with AsyncDoorClient(s.dial("fs", path, s.client_ctx("app"), "app")) as holder:
            assert (await holder.request("GET", "/v0/whoami")).ok  # holds the door's only connection slot
            for _ in range(5):
                with pytest.raises(DoorUnavailable, match=FULL) as caught:
                    await connect(s.dial("fs", path, s.client_ctx("app"), "app"))
                assert "maximum number of connections" in str(caught.value)
        assert [e["stage"] for e in s.events if e["kind"] == "transport.refused"] == ["capacity"] * 5
        nursery.cancel_scope.cancel()


async def test_a_door_closed_before_the_client_hello_is_unavailable_not_a_broken_stream(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Sending the ClientHello to a socket the door already closed fails with EPIPE, which trio raises as
    # BrokenResourceError: the race a full door loses half the time, made certain here.
    async def closed_door(dial: object) -> trio.SocketStream:
        ours, theirs = trio.socket.socketpair()
        theirs.close()
        return trio.SocketStream(ours)

    monkeypatch.setattr(_client, "_open", closed_door)
    async with session() as s:
        with pytest.raises(DoorUnavailable, match=FULL) as caught:
            await connect(s.dial("fs", "/run/sharness-none/fs.sock", s.client_ctx("app"), "app"))
    assert isinstance(caught.value.__cause__, trio.BrokenResourceError)
    assert "'fs' at /run/sharness-none/fs.sock" in str(caught.value)


def test_the_scratch_directory_is_removed() -> None:
    from doors._transport.testing import scratch_dir

    with scratch_dir() as path:
        assert "sharness-test-" in path
    import os

    assert not os.path.exists(path)


@pytest.mark.root
async def test_one_client_holds_at_most_half_the_slots_and_another_uid_still_gets_in() -> None:
    import shutil
    import subprocess
    import sys
    import tempfile

    directory = tempfile.mkdtemp(prefix="sh-test-share-", dir="/tmp")
    os.chmod(directory, 0o755)
    try:
        async with session() as s, trio.open_nursery() as nursery:
            path = os.path.join(directory, "fs.sock")
            listener = unix_listener(path)
            os.chmod(path, 0o777)
            await nursery.start(functools.partial(
                serve_mtls, [listener], s.server_ctx("fs"), s.pki.identity("fs"), EdgePolicy(s.edges),
                tiny_router("fs"), s.events.append, max_connections=4, handshake_timeout_s=30))
            held = [await trio.open_unix_socket(path) for _ in range(2)]  # this uid's share: 2 of 4
            third = await trio.open_unix_socket(path)
            with trio.fail_after(5):
                assert await third.receive_some(1) == b""  # closed at once: over its share
            probe = ("import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
                     "s.settimeout(1.0)\ntry:\n    print('closed' if s.recv(1) == b'' else 'data')\n"
                     "except TimeoutError:\n    print('open')")
            other = await trio.to_thread.run_sync(functools.partial(
                subprocess.run, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
                                 "-c", probe, path], capture_output=True, text=True, timeout=30))
            assert other.stdout.strip() == "open", other.stderr  # another client still has its slots
            # (the probe's own connection ends as a "tls" refusal when it hangs up before its ClientHello)
            refused = [e for e in s.events if e["kind"] == "transport.refused" and e["stage"] == "capacity"]
            assert len(refused) == 1 and "uid 0" in refused[0]["reason"] and refused[0]["peer_uid"] == 0
            for stream in (*held, third):
                await stream.aclose()
            nursery.cancel_scope.cancel()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
