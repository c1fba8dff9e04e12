"""bench._pyossl: the transport's server and async client run unchanged on pyOpenSSL, refusals included."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import trio

from bench import _pyossl
from bench._door import hello_router
from bench._tls import TlsOptions
from bench.handshake import SessionFiles
from doors._transport import (
    Dial,
    DoorRefused,
    client_context_from_file,
    fresh_exchange,
    serve_mtls,
    server_context_from_file,
    unix_listener,
)
from pki.edges import EdgePolicy


async def _serve_and_call(session: SessionFiles, edges: frozenset[tuple[str, str]]) -> int:
    options = TlsOptions(group="X25519")
    _pyossl.install(session.server, True, options)
    _pyossl.install(session.client, False, options)
    try:
        with tempfile.TemporaryDirectory(prefix="sharness-bench-test-") as tmp:
            path = str(Path(tmp) / "fs.sock")
            identity = session.pki.identity("fs")
            ctx = server_context_from_file(session.pki.bundle_pem(), session.server.cert)
            async with trio.open_nursery() as nursery:
                await nursery.start(serve_mtls, [unix_listener(path)], ctx, identity, EdgePolicy(edges),
                                    hello_router(identity), lambda event: None)
                client_ctx = client_context_from_file(session.pki.bundle_pem(), session.client.cert)
                dial = Dial("fs", path, client_ctx, session.pki.trust_domain, session.pki.session_id, "app")
                try:
                    response, ticket = await fresh_exchange(dial)
                    again, _ = await fresh_exchange(dial, tls_session=ticket)
                    return response.status + again.status
                finally:
                    nursery.cancel_scope.cancel()
    finally:
        _pyossl.uninstall()
    raise AssertionError("unreachable")


async def test_an_allowed_edge_is_served_on_pyopenssl(session: SessionFiles) -> None:
    assert await _serve_and_call(session, frozenset({("app", "fs")})) == 400


async def test_a_refused_edge_is_still_refused_on_pyopenssl(session: SessionFiles) -> None:
    with pytest.raises(ExceptionGroup) as caught:
        await _serve_and_call(session, frozenset({("app", "net")}))
    assert caught.group_contains(DoorRefused, match=r"edge app->fs is not in the manifest")
