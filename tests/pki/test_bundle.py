"""SVID/bundle encodings, loading from a memfd with no file on disk, and a real TLS 1.3 handshake."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _pki_tls import handshake, memfd_with, tls_context
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pki.bundle import bundle_pem, load_file_into_context, load_into_context, svid_pem
from pki.testing import ODD_KINDS, SessionPKI


@pytest.fixture(scope="module")
def spki() -> SessionPKI:
    return SessionPKI.create()


@pytest.fixture
def memfd_of() -> Iterator[list[int]]:
    fds: list[int] = []
    try:
        yield fds
    finally:
        for fd in fds:
            os.close(fd)


def test_svid_pem_is_key_then_leaf(spki: SessionPKI) -> None:
    key, cert = spki.leaves["app"]
    pem = svid_pem(key, cert)
    assert pem.startswith(b"-----BEGIN PRIVATE KEY-----\n")
    assert pem.count(b"-----BEGIN") == 2
    assert pem.index(b"PRIVATE KEY") < pem.index(b"BEGIN CERTIFICATE")
    loaded = serialization.load_pem_private_key(pem, None)
    assert loaded.public_key() == cert.public_key()
    assert x509.load_pem_x509_certificates(pem) == [cert]


def test_bundle_pem_is_the_ca(spki: SessionPKI) -> None:
    assert x509.load_pem_x509_certificates(bundle_pem(spki.ca_cert)) == [spki.ca_cert]
    assert spki.bundle_pem() == bundle_pem(spki.ca_cert)


def test_memfd_loaded_leaves_complete_mutual_tls13(spki: SessionPKI, memfd_of: list[int]) -> None:
    server_ctx = tls_context(ssl.PROTOCOL_TLS_SERVER, spki.bundle_pem())
    client_ctx = tls_context(ssl.PROTOCOL_TLS_CLIENT, spki.bundle_pem())
    memfd_of += [memfd_with(spki.svid_pem("fs")), memfd_with(spki.svid_pem("app"))]
    load_into_context(server_ctx, memfd_of[0])
    load_into_context(client_ctx, memfd_of[1])
    server, client = handshake(server_ctx, client_ctx)
    assert server == spki.cert("app").public_bytes(serialization.Encoding.DER)
    assert client == (spki.cert("fs").public_bytes(serialization.Encoding.DER), "TLSv1.3", b"ok")


def test_file_loaded_leaf_works_too(spki: SessionPKI, tmp_path: Path, memfd_of: list[int]) -> None:
    server_ctx = tls_context(ssl.PROTOCOL_TLS_SERVER, spki.bundle_pem())
    client_ctx = tls_context(ssl.PROTOCOL_TLS_CLIENT, spki.bundle_pem())
    memfd_of.append(memfd_with(spki.svid_pem("fs")))
    load_into_context(server_ctx, memfd_of[0])
    load_file_into_context(client_ctx, spki.write_svid("app", tmp_path))
    server, _ = handshake(server_ctx, client_ctx)
    assert server == spki.cert("app").public_bytes(serialization.Encoding.DER)


def test_write_svid_refuses_to_overwrite(spki: SessionPKI, tmp_path: Path) -> None:
    path = spki.write_svid("app", tmp_path)
    assert Path(path).read_bytes() == spki.svid_pem("app")
    with pytest.raises(FileExistsError):
        spki.write_svid("app", tmp_path)


def test_closed_fd_named(spki: SessionPKI) -> None:
    fd = memfd_with(b"")
    os.close(fd)
    with pytest.raises(OSError):
        load_into_context(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), fd)


def test_memfd_without_key_refused_clearly(spki: SessionPKI, memfd_of: list[int]) -> None:
    memfd_of.append(memfd_with(spki.bundle_pem()))
    with pytest.raises(ValueError, match=f"SVID fd {memfd_of[0]} does not hold a PEM key"):
        load_into_context(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), memfd_of[0])


def test_missing_file_named(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="cannot open SVID file"):
        load_file_into_context(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), tmp_path / "sh-none.pem")


# What OpenSSL itself refuses in the handshake (chain, validity, name constraints, EKU purpose) and what
# only our check_svid refuses: the transport must run check_svid after every handshake.
OPENSSL_REFUSES = {
    "expired": "certificate has expired",
    "not_yet_valid": "certificate is not yet valid",
    "self_signed": "self-signed certificate",
    "other_ca": "unable to get local issuer certificate",
    "other_trust_domain": "permitted subtree violation",
    "wrong_eku": "unsuitable certificate purpose",
    "dns_only": "excluded subtree violation",
}


@pytest.mark.parametrize("kind", ODD_KINDS)
def test_what_openssl_refuses_in_the_handshake(spki: SessionPKI, kind: str, memfd_of: list[int]) -> None:
    server_ctx = tls_context(ssl.PROTOCOL_TLS_SERVER, spki.bundle_pem())
    client_ctx = tls_context(ssl.PROTOCOL_TLS_CLIENT, spki.bundle_pem())
    memfd_of += [memfd_with(spki.svid_pem("fs")), memfd_with(spki.odd_leaf(kind, "app"))]
    load_into_context(server_ctx, memfd_of[0])
    load_into_context(client_ctx, memfd_of[1])
    server, client = handshake(server_ctx, client_ctx)
    if kind in OPENSSL_REFUSES:
        assert isinstance(server, ssl.SSLCertVerificationError)
        assert OPENSSL_REFUSES[kind] in str(server)
        assert isinstance(client, ssl.SSLError)  # the client learns on its first read
    else:
        assert isinstance(server, bytes), f"OpenSSL now refuses {kind}: {server}"
        assert client[2] == b"ok"  # type: ignore[index]


@pytest.mark.root
def test_memfd_loads_under_landlock_that_refuses_every_path(spki: SessionPKI) -> None:
    probe = Path(__file__).with_name("_landlock_probe.py")
    done = subprocess.run(
        [sys.executable, str(probe)], input=spki.svid_pem("fs"), capture_output=True, check=True, timeout=60
    )
    verdict = json.loads(done.stdout)
    assert verdict["etc"] == "EACCES", "Landlock did not refuse /etc: this test would prove nothing"
    assert verdict["svid"] == "loaded"
