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
