"""Test helpers: stdlib-ssl contexts that trust one bundle, memfds, and a handshake over a socketpair."""

from __future__ import annotations

import os
import socket
import ssl
import threading

from cryptography import x509

from pki.bundle import bundle_pem, load_bundle_into_context, load_into_context, svid_pem
from pki.issue import PrivateKey


def tls_context(side: ssl._SSLMethod, bundle: bytes) -> ssl.SSLContext:
    """TLS 1.3 only, certificate required, trusting exactly `bundle`."""
    ctx = ssl.SSLContext(side)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.check_hostname = False
    load_bundle_into_context(ctx, bundle)
    return ctx


def memfd_with(data: bytes) -> int:
    """A memfd named sh-test-svid holding `data` (the caller closes it)."""
    fd = os.memfd_create("sh-test-svid")
    os.write(fd, data)
    return fd


def handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext) -> tuple[object, object]:
    """Run both ends over a socketpair; return (server result, client result): peer cert DER or the error."""
    left, right = socket.socketpair()
    results: dict[str, object] = {}

    def serve() -> None:
        try:
            with server_ctx.wrap_socket(left, server_side=True) as tls:
                results["server"] = tls.getpeercert(binary_form=True)
                tls.sendall(b"ok")
        except (ssl.SSLError, OSError) as exc:
            results["server"] = exc

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with client_ctx.wrap_socket(right) as tls:
            # TLS 1.3: a rejected client certificate surfaces only on the client's first read.
            results["client"] = (tls.getpeercert(binary_form=True), tls.version(), tls.recv(2))
    except (ssl.SSLError, OSError) as exc:
        results["client"] = exc
    finally:
        thread.join()
        left.close()
        right.close()
    return results["server"], results["client"]


def server_verdict_on_client(
    ca_cert: x509.Certificate,
    server: tuple[PrivateKey, x509.Certificate],
    client: tuple[PrivateKey, x509.Certificate],
) -> str:
    """'OK' when an OpenSSL server trusting `ca_cert` accepts the client's leaf, else OpenSSL's reason."""
    server_ctx = tls_context(ssl.PROTOCOL_TLS_SERVER, bundle_pem(ca_cert))
    client_ctx = tls_context(ssl.PROTOCOL_TLS_CLIENT, bundle_pem(ca_cert))
    fds = [memfd_with(svid_pem(*server)), memfd_with(svid_pem(*client))]
    try:
        load_into_context(server_ctx, fds[0])
        load_into_context(client_ctx, fds[1])
        result, _ = handshake(server_ctx, client_ctx)
    finally:
        for fd in fds:
            os.close(fd)
    if isinstance(result, ssl.SSLCertVerificationError):
        return str(result.verify_message)
    assert isinstance(result, bytes), result
    return "OK"
