"""Measure the session CA's key type: keygen, sign, verify, minting, and a fresh mutual-TLS 1.3 handshake
between two processes with stdlib ssl. Figures for docs/decisions/pki.md, not a test.

Run: .venv/bin/python tests/pki/measure_curves.py [handshakes]
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import NameOID

from pki.issue import CA_KEY_USAGE, LEAF_EKU, LEAF_KEY_USAGE

Key = ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
PublicKey = ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey
KEYS: dict[str, Callable[[], Key]] = {
    "P-256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "P-384": lambda: ec.generate_private_key(ec.SECP384R1()),
    "Ed25519": ed25519.Ed25519PrivateKey.generate,
}
MSG = os.urandom(64)


def _sign(key: Key, data: bytes) -> bytes:
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key.sign(data)
    return key.sign(data, ec.ECDSA(hashes.SHA256()))


def _verify(pub: PublicKey, sig: bytes, data: bytes) -> None:
    if isinstance(pub, ed25519.Ed25519PublicKey):
        pub.verify(sig, data)
    else:
        pub.verify(sig, data, ec.ECDSA(hashes.SHA256()))


def _per_op_us(fn: Callable[[], object], n: int) -> float:
    samples = []
    for _ in range(n):
        t = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t)
    return statistics.median(samples) / 1000


def _cert(subject: str, key: Key, issuer_key: Key, issuer: str, *, ca: bool, uri: str | None) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(seconds=30))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
        .add_extension(CA_KEY_USAGE if ca else LEAF_KEY_USAGE, critical=True)
    )
    if not ca:
        b = b.add_extension(x509.ExtendedKeyUsage(list(LEAF_EKU)), critical=False)
        b = b.add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(uri or "")]), critical=False)
    algorithm = None if isinstance(issuer_key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    return b.sign(issuer_key, algorithm)


def _pem(key: Key, cert: x509.Certificate) -> bytes:
    enc = serialization.NoEncryption()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc) + cert.public_bytes(
        serialization.Encoding.PEM
    )


def _mint(make: Callable[[], Key]) -> tuple[bytes, bytes, bytes]:
    ca_key = make()
    ca = _cert("ca", ca_key, ca_key, "ca", ca=True, uri=None)
    leaves = []
    for role in ("app", "fs", "net", "keys", "shell", "model"):
        k = make()
        leaves.append(_pem(k, _cert(role, k, ca_key, "ca", ca=False, uri=f"spiffe://t.test/session/0123abcd/{role}")))
    return ca.public_bytes(serialization.Encoding.PEM), leaves[0], leaves[1]


def _ctx(side: ssl._SSLMethod, bundle: bytes, svid_path: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(side)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.check_hostname = False
    ctx.load_verify_locations(cadata=bundle.decode())
    ctx.load_cert_chain(svid_path)
    return ctx


def _handshakes(bundle: bytes, client_pem: bytes, server_pem: bytes, n: int) -> list[float]:
    """Fresh handshakes, client in this process, server in a forked one, over a Unix socket; ms each."""
    with tempfile.TemporaryDirectory(prefix="sh-measure-") as d:
        for name, pem in (("c.pem", client_pem), ("s.pem", server_pem)):
            with open(os.path.join(d, name), "wb") as f:
                f.write(pem)
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(os.path.join(d, "sh.sock"))
        listener.listen(64)
        pid = os.fork()
        if pid == 0:
            server_ctx = _ctx(ssl.PROTOCOL_TLS_SERVER, bundle, os.path.join(d, "s.pem"))
            try:
                while True:
                    conn, _ = listener.accept()
                    with server_ctx.wrap_socket(conn, server_side=True) as tls:
                        tls.sendall(b"k")
            finally:
                os._exit(0)
        listener.close()
        client_ctx = _ctx(ssl.PROTOCOL_TLS_CLIENT, bundle, os.path.join(d, "c.pem"))
        times = []
        try:
            for _ in range(n):
                t = time.perf_counter_ns()
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(os.path.join(d, "sh.sock"))
                    with client_ctx.wrap_socket(s) as tls:
                        assert tls.recv(1) == b"k"
                times.append((time.perf_counter_ns() - t) / 1e6)
        finally:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    return times


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    print(f"{ssl.OPENSSL_VERSION}, Python {sys.version.split()[0]}, {os.cpu_count()} cpus, {n} handshakes each")
    columns = ("keygen us", "sign us", "verify us", "mint CA+6 ms", "hs p50 ms", "hs p90 ms")
    print(f"{'key':8} " + " ".join(f"{c:>12}" for c in columns))
    for name, make in KEYS.items():
        key = make()
        sig = _sign(key, MSG)
        keygen = _per_op_us(make, 300)
        sign = _per_op_us(lambda: _sign(key, MSG), 300)  # noqa: B023
        verify = _per_op_us(lambda: _verify(key.public_key(), sig, MSG), 300)  # noqa: B023
        mint = _per_op_us(lambda: _mint(make), 30) / 1000  # noqa: B023
        bundle, client, server = _mint(make)
        hs = _handshakes(bundle, client, server, n + 30)[30:]
        q = statistics.quantiles(hs, n=10)
        figures = (keygen, sign, verify, mint, statistics.median(hs), q[8])
        print(f"{name:8} " + " ".join(f"{f:12.2f}" for f in figures))


if __name__ == "__main__":
    main()
