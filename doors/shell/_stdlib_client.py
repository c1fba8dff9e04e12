"""The `sh` client's transport, on the standard library only: mutual TLS 1.3 on the door's Unix socket.

`sharness-launch sh` pays every import on every call, so this module loads ssl, socket and json and nothing
of the door runtime (no trio, no h11, no pyOpenSSL, no cryptography: ~300 ms of imports before). The policy is
the transport's (doors/_transport/_tls.py): TLS 1.3 only, the session bundle the only trust anchor, a
certificate both ways, X509_STRICT. The door's identity is read from the certificate the stdlib decoded
after verifying its chain: exactly one URI SAN, this session's shell door (docs/decisions/shell.md, "sh").
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
from collections.abc import Iterator, Mapping
from typing import Any

from doors.shell._response import ResponseError, ResponseReader
from doors.shell._wire import FRAMES_TYPE, RUN_PATH, FrameReader

RECEIVE_BYTES = 256 * 1024
MAX_ERROR_BYTES = 64 * 1024
ENV_NAMES = ("SHARNESS_DOOR_SHELL", "SHARNESS_SVID", "SHARNESS_BUNDLE", "SHARNESS_TRUST_DOMAIN",
             "SHARNESS_SESSION")


class Unreachable(Exception):
    """No shell door to talk to (not in a session, no edge app→shell, the socket refused)."""


class NotTheDoor(Exception):
    """The peer on the shell socket is not this session's shell door, or TLS refused this client."""


class Refused(Exception):
    """The door answered with its error shape (status and `{"error", "who", "detail", "hint"}`)."""

    def __init__(self, status: int, shape: Mapping[str, Any]) -> None:
        super().__init__(f"{status} {shape.get('error')}")
        self.status = status
        self.shape = dict(shape)


def expected_uri(trust_domain: str, session_id: str) -> str:
    """The shell door's SPIFFE ID in this session (pki.spiffe.SessionIdentity's form; a test keeps them equal)."""
    return f"spiffe://{trust_domain}/session/{session_id}/shell"


def peer_problem(cert: Mapping[str, Any], expected: str) -> str | None:
    """Why the stdlib-decoded peer certificate is not `expected`'s SVID (exactly one URI SAN), or None."""
    uris = [value for kind, value in cert.get("subjectAltName", ()) if kind == "URI"]
    if len(uris) != 1:
        return f"its certificate has {len(uris)} URI SANs, not exactly one"
    if uris[0] != expected:
        return f"it is {uris[0]!r}, not {expected!r}"
    return None


def tls_context(bundle_path: str, svid_path: str) -> ssl.SSLContext:
    """A client context holding the app's SVID and trusting only the session bundle."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False  # the SPIFFE ID is checked instead (peer_problem)
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.verify_flags |= ssl.VERIFY_X509_STRICT
    ctx.load_verify_locations(cafile=bundle_path)
    ctx.load_cert_chain(certfile=svid_path, keyfile=svid_path)
    return ctx


def connect(environ: Mapping[str, str], timeout_s: float | None = None) -> ssl.SSLSocket:
    """A mutual-TLS stream to this session's shell door, its identity checked."""
    missing = [name for name in ENV_NAMES if not environ.get(name)]
    if missing:
        raise Unreachable(f"{', '.join(missing)} not set: no shell door in this session (add the door and "
                          "the edge app->shell to the manifest)")
    try:
        ctx = tls_context(environ["SHARNESS_BUNDLE"], environ["SHARNESS_SVID"])
    except OSError as exc:  # ssl.SSLError is one too
        raise Unreachable(f"cannot load this session's SVID or bundle: {exc}") from None
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.settimeout(timeout_s)
    try:
        raw.connect(environ["SHARNESS_DOOR_SHELL"])
    except OSError as exc:
        raw.close()
        raise Unreachable(f"{environ['SHARNESS_DOOR_SHELL']}: {os.strerror(exc.errno or 0)}") from None
    try:
        tls = ctx.wrap_socket(raw)
    except ssl.SSLError as exc:
        raw.close()
        raise NotTheDoor(f"TLS refused: {exc.reason or exc}") from None
    problem = peer_problem(tls.getpeercert() or {}, expected_uri(environ["SHARNESS_TRUST_DOMAIN"],
                                                                   environ["SHARNESS_SESSION"]))
    if problem is not None:
        tls.close()
        raise NotTheDoor(problem)
    return tls


def run_request(body: Mapping[str, Any], binary: bool = True) -> bytes:
    """The bytes of `POST /v0/shell/run` with `body` as JSON (asking for the binary framing unless not `binary`)."""
    payload = json.dumps(body, separators=(",", ":")).encode()
    accept = FRAMES_TYPE if binary else "application/x-ndjson"
    head = (f"POST {RUN_PATH} HTTP/1.1\r\nhost: shell\r\ncontent-type: application/json\r\naccept: {accept}\r\n"
            f"content-length: {len(payload)}\r\n\r\n")
    return head.encode() + payload


def frames(tls: ssl.SSLSocket, body: Mapping[str, Any], binary: bool = True) -> Iterator[dict[str, Any]]:
    """Send the run request; yield each frame as it arrives (a data frame's bytes as `data` in the binary
    framing); Refused when the door answered with an error."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a door that refused and closed: read why
        tls.sendall(run_request(body, binary))
    reader, partial, framed = ResponseReader(), bytearray(), None
    while not reader.done:
        try:
            data = tls.recv(RECEIVE_BYTES)
        except ssl.SSLError as exc:  # TLS 1.3: a refused client certificate is seen on the first read
            raise NotTheDoor(f"TLS refused: {exc.reason or exc}") from None
        except OSError as exc:
            raise Unreachable(f"the shell door closed the connection: {os.strerror(exc.errno or 0)}") from None
        for piece in reader.feed(data):
            if reader.status != 200:
                partial += piece
                continue
            if framed is None:  # the door answers NDJSON to a client that did not ask (or an older door)
                framed = FrameReader(reader.headers.get("content-type", "").startswith(FRAMES_TYPE))
            yield from framed.feed(piece)
        if reader.status not in (None, 200) and len(partial) > MAX_ERROR_BYTES:
            break
        if not data:
            break
    if reader.status != 200:
        raise Refused(reader.status or 502, _shape(bytes(partial)))
    if not reader.done:
        raise ResponseError("the shell door closed the stream before its end")


def _shape(body: bytes) -> dict[str, Any]:
    try:
        shape = json.loads(body)
    except ValueError:
        shape = None
    if isinstance(shape, dict):
        return shape
    return {"error": "http", "who": "shell", "detail": body[:200].decode(errors="replace"), "hint": ""}
