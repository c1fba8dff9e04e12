"""The doors: one unprivileged process per role, reached over mutual TLS (DESIGN.md).

This is the facade for code outside doors/ (the launcher, bench): the contract a door is started with, the
generic door runner, and the transport and HTTP pieces a harness drives a door with. Each door's own API is
its package (doors.fs, doors.net); the app's client is doors.client; `python -m doors` is doors.serve.

Each name loads its module on first use (PEP 562): importing any doors.* module runs this file, and the
door runtime it names (trio, the transport, pyOpenSSL) costs ~200 ms that the in-session `sharness-launch sh`
client must not pay (docs/decisions/bench.md, "sh").
"""

from __future__ import annotations

import sys

# Not `from typing import TYPE_CHECKING`: typing (with re and collections) is ~15 ms of CPU on this VM that the
# `sh` client would pay for this file alone; mypy treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
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

if TYPE_CHECKING:
    from typing import Any

_HOMES = {
    "doors._contract": ("CONTRACT_ENV", "DoorContract"),
    "doors._door": ("run_door",),
    "doors._http": ("ClientConnection", "Limits", "Request", "Response", "Route", "Router", "json_response"),
    "doors._secret_match": ("SecretFingerprint", "SecretMatcher", "fingerprint_of"),
    "doors._transport": ("AsyncDoorClient", "Dial", "TlsContext", "client_context_from_file", "connect",
                         "exchange", "fresh_exchange", "serve_mtls", "server_context_from_file", "unix_listener"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

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


def __getattr__(name: str) -> Any:
    """Import the module that holds `name` (once) and hand back its value."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'doors' has no attribute {name!r}")
    __import__(module)  # not importlib.import_module: importlib loads warnings, ~0.6 ms of CPU per `sh` call
    value = getattr(sys.modules[module], name)
    globals()[name] = value
    return value
