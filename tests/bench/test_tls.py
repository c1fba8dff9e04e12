"""bench._tls: the transport's server and async client run on the bench's own pyOpenSSL contexts, refusals included."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import trio

from bench._door import hello_router
from bench._tls import TlsOptions, pyopenssl_context
from bench.handshake import SessionFiles
from doors._transport import Dial, DoorRefused, fresh_exchange, serve_mtls, unix_listener
from pki.edges import EdgePolicy


async def _serve_and_call(session: SessionFiles, edges: frozenset[tuple[str, str]]) -> int:
    options = TlsOptions(group="X25519")
    with tempfile.TemporaryDirectory(prefix="sharness-bench-test-") as tmp:
        path = str(Path(tmp) / "fs.sock")
        identity = session.pki.identity("fs")
        ctx = pyopenssl_context(session.server, True, options)
        async with trio.open_nursery() as nursery:
            await nursery.start(serve_mtls, [unix_listener(path)], ctx, identity, EdgePolicy(edges),
                                hello_router(identity), lambda event: None)
            client_ctx = pyopenssl_context(session.client, False, options)
            dial = Dial("fs", path, client_ctx, session.pki.trust_domain, session.pki.session_id, "app")
            try:
                response, ticket = await fresh_exchange(dial)
                again, _ = await fresh_exchange(dial, tls_session=ticket)
                return response.status + again.status
            finally:
                nursery.cancel_scope.cancel()
    raise AssertionError("unreachable")


async def test_an_allowed_edge_is_served_on_pyopenssl(session: SessionFiles) -> None:
    assert await _serve_and_call(session, frozenset({("app", "fs")})) == 400


async def test_a_refused_edge_is_still_refused_on_pyopenssl(session: SessionFiles) -> None:
    with pytest.raises(ExceptionGroup) as caught:
        await _serve_and_call(session, frozenset({("app", "net")}))
    assert caught.group_contains(DoorRefused, match=r"edge app->fs is not in the manifest")
