"""The transport every door and client uses: mutual TLS 1.3 with SVID and edge checks, HTTP/1.1 on top."""

from doors._refusal import DoorRefused
from doors._transport._alerts import client_error, closed_in_handshake, connect_error, handshake_error
from doors._transport._client import AsyncDoorClient, connect, exchange, fresh_exchange
from doors._transport._errors import DoorNotTrusted, DoorUnavailable, TransportError
from doors._transport._identity import Admission, admit_client, check_door, refusal_from_response
from doors._transport._pyossl_socket import BlockingTls
from doors._transport._server import listener_from_fd, peer_of, serve_mtls, unix_listener, utc_now
from doors._transport._stream import TlsFailure, TlsStream
from doors._transport._tls import (
    BACKEND,
    TlsContext,
    TlsSession,
    client_context,
    client_context_from_fd,
    client_context_from_file,
    server_context,
    server_context_from_fd,
    server_context_from_file,
)
from doors._transport.client_policy import Address, Dial

__all__ = [
    "BACKEND",
    "Address",
    "Admission",
    "AsyncDoorClient",
    "BlockingTls",
    "Dial",
    "DoorNotTrusted",
    "DoorRefused",
    "DoorUnavailable",
    "TlsContext",
    "TlsFailure",
    "TlsSession",
    "TlsStream",
    "TransportError",
    "admit_client",
    "check_door",
    "client_context",
    "client_context_from_fd",
    "client_context_from_file",
    "client_error",
    "closed_in_handshake",
    "connect",
    "connect_error",
    "exchange",
    "fresh_exchange",
    "handshake_error",
    "listener_from_fd",
    "peer_of",
    "refusal_from_response",
    "serve_mtls",
    "server_context",
    "server_context_from_fd",
    "server_context_from_file",
    "unix_listener",
    "utc_now",
]
