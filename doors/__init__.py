"""The doors: one unprivileged process per role, reached over mutual TLS (DESIGN.md).

This is the facade for code outside doors/ (the launcher, bench): the contract a door is started with, the
generic door runner, and the transport and HTTP pieces a harness drives a door with. Each door's own API is
its package (doors.fs, doors.net); the app's client is doors.client; `python -m doors` is doors.serve.
"""

from doors._contract import CONTRACT_ENV, DoorContract
from doors._door import run_door
from doors._http import ClientConnection, Limits, Request, Response, Route, Router, json_response
from doors._secret_match import SecretFingerprint, SecretMatcher, fingerprint_of
from doors._transport import (
    AsyncDoorClient,
    Dial,
    TlsContext,
    client_context_from_file,
    connect,
    exchange,
    fresh_exchange,
    serve_mtls,
    server_context_from_file,
    unix_listener,
)

__all__ = [
    "CONTRACT_ENV",
    "AsyncDoorClient",
    "ClientConnection",
    "Dial",
    "DoorContract",
    "Limits",
    "Request",
    "Response",
    "Route",
    "Router",
    "SecretFingerprint",
    "SecretMatcher",
    "TlsContext",
    "client_context_from_file",
    "connect",
    "exchange",
    "fingerprint_of",
    "fresh_exchange",
    "json_response",
    "run_door",
    "serve_mtls",
    "server_context_from_file",
    "unix_listener",
]
