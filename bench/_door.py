"""The project's door server in its own process: ``python -m bench._door '<spec json>'``.

serve_mtls with the session's edges and a router answering ``GET /v0/hello``; prints ``ready <address>``.
"""

from __future__ import annotations

import json
import ssl
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import trio

from bench._certs import CertFiles
from bench._tls import TlsOptions, pyopenssl_context
from doors import Request, Response, Route, Router, json_response, serve_mtls, server_context_from_file, unix_listener
from pki.edges import EdgePolicy
from pki.spiffe import SessionIdentity
from pki.vocabulary import DEFAULT_EDGES


@dataclass(frozen=True)
class DoorSpec:
    """Which door to serve, where, and with which SVID file and bundle."""

    role: str
    address: str  # a Unix socket path, or "tcp:<port>" on 127.0.0.1
    svid_path: str
    bundle_path: str
    trust_domain: str
    session_id: str
    num_tickets: int = -1  # -1: leave the transport's context as it is (the study sets 0 or 1)
    backend: str = "stdlib"  # or "pyopenssl": bench._tls's pyOpenSSL context with `group`
    group: str = ""  # key-exchange group for the pyopenssl backend ("" = its default)

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def hello_router(identity: SessionIdentity) -> Router:
    """A router with the one route every door answers, ``GET /v0/hello``, with a small fixed body."""
    body = {"role": identity.role, "spiffe_id": identity.uri(), "session": identity.session_id, "rows": {}}

    async def hello(request: Request) -> Response:
        return json_response(body)

    return Router(identity.role, [Route("GET", "/v0/hello", hello)])


async def serve(spec: DoorSpec) -> None:
    """Listen, say ready, and serve until killed; events (refusals, requests) are dropped."""
    with open(spec.bundle_path, "rb") as bundle:
        ctx = server_context_from_file(bundle.read(), spec.svid_path, "stdlib")
    if spec.num_tickets >= 0 and isinstance(ctx, ssl.SSLContext):
        ctx.num_tickets = spec.num_tickets
    if spec.backend == "pyopenssl":  # the transport takes a pyOpenSSL context as it is
        svid = Path(spec.svid_path)
        ctx = pyopenssl_context(CertFiles(svid, svid, Path(spec.bundle_path)), True, TlsOptions(group=spec.group))
    identity = SessionIdentity(spec.trust_domain, spec.session_id, spec.role)
    if spec.address.startswith("tcp:"):
        listeners = await trio.open_tcp_listeners(int(spec.address[4:]), host="127.0.0.1")
        said = str(listeners[0].socket.getsockname()[1])
    else:
        listeners = [unix_listener(spec.address, backlog=512)]
        said = spec.address
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_mtls, listeners, ctx, identity, EdgePolicy(DEFAULT_EDGES),
                            hello_router(identity), lambda event: None)
        print("ready", said, flush=True)


if __name__ == "__main__":
    trio.run(serve, DoorSpec(**json.loads(sys.argv[1])))
