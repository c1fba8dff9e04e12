"""Handshake CPU cost with no sockets and no scheduler: both ends in this process over memory BIOs.

What is left is the TLS library's own work (both sides together), so the option study can tell the
library's cost from the cost of Python, trio and the kernel around it. CPU time, not wall time.
"""

from __future__ import annotations

import ssl
import time

from OpenSSL import SSL

from bench._certs import CertFiles
from bench._tls import TlsOptions, pyopenssl_context, stdlib_context

_PING = b"x" * 64


def _pump_stdlib(source: ssl.MemoryBIO, sink: ssl.MemoryBIO) -> bool:
    data = source.read()
    if data:
        sink.write(data)
    return bool(data)


def _step(obj: ssl.SSLObject) -> bool:
    try:
        obj.do_handshake()
        return True
    except ssl.SSLWantReadError:
        return False


def _stdlib_once(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext,
                 session: ssl.SSLSession | None) -> ssl.SSLObject:
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out, server_side=False, session=session)
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    client_done = server_done = False
    while not (client_done and server_done):
        client_done = client_done or _step(client)
        _pump_stdlib(c_out, s_in)
        server_done = server_done or _step(server)
        _pump_stdlib(s_out, c_in)
    server.write(_PING)  # one round trip, so the client also reads the tickets
    _pump_stdlib(s_out, c_in)
    client.read(len(_PING))
    return client


def stdlib_cpu_ms(server: CertFiles, client: CertFiles, options: TlsOptions, count: int,
                  resume: bool = False) -> float:
    """CPU milliseconds per stdlib handshake, both sides, optionally resuming the previous session."""
    server_ctx = stdlib_context(server, True, options)
    client_ctx = stdlib_context(client, False, options)
    session = _stdlib_once(server_ctx, client_ctx, None).session if resume else None
    start = time.process_time()
    for _ in range(count):
        _stdlib_once(server_ctx, client_ctx, session)
    return (time.process_time() - start) * 1000 / count


def _pump_py(source: SSL.Connection, sink: SSL.Connection) -> None:
    try:
        data = source.bio_read(65536)
    except SSL.WantReadError:
        return
    sink.bio_write(data)


def _py_step(conn: SSL.Connection) -> bool:
    try:
        conn.do_handshake()
        return True
    except SSL.WantReadError:
        return False


def _pyopenssl_once(server_ctx: SSL.Context, client_ctx: SSL.Context, session: SSL.Session | None) -> SSL.Connection:
    client, server = SSL.Connection(client_ctx, None), SSL.Connection(server_ctx, None)
    if session is not None:
        client.set_session(session)
    client.set_connect_state()
    server.set_accept_state()
    client_done = server_done = False
    while not (client_done and server_done):
        client_done = client_done or _py_step(client)
        _pump_py(client, server)
        server_done = server_done or _py_step(server)
        _pump_py(server, client)
    server.send(_PING)
    _pump_py(server, client)
    client.recv(len(_PING))
    # Freeing an SSL that never shut down marks its session not resumable (OpenSSL's rule; CPython
    # dodges it by copying every session it hands out, which is what makes `.session` cost ~0.2 ms).
    client.set_shutdown(SSL.SENT_SHUTDOWN)
    return client


def pyopenssl_cpu_ms(server: CertFiles, client: CertFiles, options: TlsOptions, count: int,
                     resume: bool = False) -> float:
    """CPU milliseconds per pyOpenSSL (bundled OpenSSL) handshake, both sides."""
    server_ctx = pyopenssl_context(server, True, options)
    client_ctx = pyopenssl_context(client, False, options)
    session = _pyopenssl_once(server_ctx, client_ctx, None).get_session() if resume else None
    start = time.process_time()
    for _ in range(count):
        _pyopenssl_once(server_ctx, client_ctx, session)
    return (time.process_time() - start) * 1000 / count


INPROC_VARIANTS: tuple[tuple[str, str, TlsOptions, bool], ...] = (
    ("stdlib (OpenSSL 3.0), X25519, 2 tickets", "stdlib", TlsOptions(), False),
    ("stdlib, 1 ticket", "stdlib", TlsOptions(num_tickets=1), False),
    ("stdlib, no tickets", "stdlib", TlsOptions(num_tickets=0), False),
    ("stdlib, P-256 key exchange", "stdlib", TlsOptions(group="P-256"), False),
    ("stdlib, resumed", "stdlib", TlsOptions(), True),
    ("stdlib, resumed, 1 ticket", "stdlib", TlsOptions(num_tickets=1), True),
    ("pyOpenSSL (OpenSSL 4), default X25519MLKEM768", "pyopenssl", TlsOptions(), False),
    ("pyOpenSSL, X25519", "pyopenssl", TlsOptions(group="X25519"), False),
    ("pyOpenSSL, P-256 key exchange", "pyopenssl", TlsOptions(group="P-256"), False),
    ("pyOpenSSL, X25519, AES-128-GCM", "pyopenssl", TlsOptions(group="X25519", ciphersuite="TLS_AES_128_GCM_SHA256"),
     False),
    ("pyOpenSSL, default group, resumed", "pyopenssl", TlsOptions(), True),
    ("pyOpenSSL, X25519, resumed", "pyopenssl", TlsOptions(group="X25519"), True),
)


def study(sets: dict[str, tuple[CertFiles, CertFiles]], count: int, rounds: int) -> list[dict[str, object]]:
    """CPU ms per handshake for every in-process variant and certificate set, best of ``rounds``."""
    rows: list[dict[str, object]] = []
    for cert_name, (server, client) in sets.items():
        for name, library, options, resume in INPROC_VARIANTS:
            measure = stdlib_cpu_ms if library == "stdlib" else pyopenssl_cpu_ms
            best = min(measure(server, client, options, count, resume) for _ in range(rounds))
            rows.append({"variant": name, "certs": cert_name, "cpu_ms_both_sides": round(best, 3)})
    return rows
