"""The `sh` client's transport, on the standard library's C layer only: mutual TLS 1.3 on the door's Unix socket.

`sharness-launch sh` pays every import on every call. This module loads nothing of the door runtime (no trio,
h11, pyOpenSSL or cryptography: ~300 ms of imports before), and not even the stdlib's `ssl`, `socket` and `json`
packages: their Python builds enums (`IntEnum._convert_` over the C modules' constants) and compiles regexes
that a one-request client never uses, ~25 ms of CPU per call on this VM (docs/decisions/bench.md, "shquick");
nor `os`, whose `_collections_abc`, `stat` and `posixpath` were 2.7 ms more ("shtrue"): `posix` is its C module.
It drives the C modules those packages wrap, `_ssl` and `_socket`, the way `ssl.SSLContext` and
`ssl.SSLSocket` drive them: the same OpenSSL calls, the same settings, no TLS of our own. The policy is the
transport's (doors/_transport/_tls.py): TLS 1.3 only, the session bundle the only trust anchor, a certificate
both ways, X509_STRICT (tests/doors/shell/test_stdlib_client.py checks this context against one the `ssl`
package builds, setting by setting). The door's identity is read from the certificate OpenSSL decoded after
verifying its chain: exactly one URI SAN, this session's shell door (docs/decisions/shell.md, "sh").
"""

from __future__ import annotations

import _socket
import _ssl
import posix

from doors.shell._cjson import dumps, loads
from doors.shell._response import ResponseError, ResponseReader
from doors.shell._wire import FRAMES_TYPE, RUN_PATH, FrameReader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import Any

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


class UnixSocket(_socket.socket):
    """`_socket.socket` as `socket.socket` subclasses it: `_ssl` holds its socket by a weak reference, which the
    C type alone does not take."""

    __slots__ = ("__weakref__",)


class TlsStream:
    """A verified TLS connection: the `_ssl` object and the socket it runs on (it holds the socket only weakly)."""

    def __init__(self, sock: UnixSocket, tls: Any) -> None:
        self._sock = sock
        self._tls = tls

    def getpeercert(self) -> dict[str, Any]:
        """The peer's certificate as OpenSSL decoded it (ssl.SSLSocket.getpeercert's form)."""
        return dict(self._tls.getpeercert() or {})

    def sendall(self, data: bytes) -> None:
        """Write all of `data` (one TLS write per piece OpenSSL takes, as ssl.SSLSocket.sendall)."""
        view = memoryview(data)
        while view:
            view = view[self._tls.write(view):]

    def recv(self, size: int) -> bytes:
        """Up to `size` bytes; b"" at the end (a close_notify, or an EOF without one, as ssl.SSLSocket's
        suppress_ragged_eofs: the response's own framing says whether it was complete)."""
        try:
            return bytes(self._tls.read(size))
        except (_ssl.SSLZeroReturnError, _ssl.SSLEOFError):
            return b""

    def close(self) -> None:
        """Close the socket (no close_notify: ssl.SSLSocket.close does not send one either)."""
        self._sock.close()

    def __enter__(self) -> TlsStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def tls_context(bundle_path: str, svid_path: str) -> Any:
    """A client context (an `_ssl._SSLContext`) holding the app's SVID and trusting only the session bundle."""
    ctx = _ssl._SSLContext(_ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False  # the SPIFFE ID is checked instead (peer_problem)
    ctx.minimum_version = ctx.maximum_version = _ssl.PROTO_TLSv1_3
    ctx.verify_mode = _ssl.CERT_REQUIRED
    ctx.verify_flags |= _ssl.VERIFY_X509_STRICT
    ctx.load_verify_locations(cafile=bundle_path)
    ctx.load_cert_chain(svid_path, svid_path)
    return ctx


def connect(environ: Mapping[str, str], timeout_s: float | None = None) -> TlsStream:
    """A mutual-TLS stream to this session's shell door, its identity checked."""
    missing = [name for name in ENV_NAMES if not environ.get(name)]
    if missing:
        raise Unreachable(f"{', '.join(missing)} not set: no shell door in this session (add the door and "
                          "the edge app->shell to the manifest)")
    try:
        ctx = tls_context(environ["SHARNESS_BUNDLE"], environ["SHARNESS_SVID"])
    except OSError as exc:  # _ssl.SSLError is one too
        raise Unreachable(f"cannot load this session's SVID or bundle: {exc}") from None
    raw = UnixSocket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    raw.settimeout(timeout_s)
    try:
        raw.connect(environ["SHARNESS_DOOR_SHELL"])
    except OSError as exc:
        raw.close()
        raise Unreachable(f"{environ['SHARNESS_DOOR_SHELL']}: {posix.strerror(exc.errno or 0)}") from None
    tls = TlsStream(raw, ctx._wrap_socket(raw, False, None))  # no SNI: the door is named by its SPIFFE ID
    try:
        tls._tls.do_handshake()
    except OSError as exc:  # _ssl.SSLError, or the socket's own
        tls.close()
        raise NotTheDoor(f"TLS refused: {getattr(exc, 'reason', None) or exc}") from None
    problem = peer_problem(tls.getpeercert(), expected_uri(environ["SHARNESS_TRUST_DOMAIN"],
                                                           environ["SHARNESS_SESSION"]))
    if problem is not None:
        tls.close()
        raise NotTheDoor(problem)
    return tls


def run_request(body: Mapping[str, Any], binary: bool = True) -> bytes:
    """The bytes of `POST /v0/shell/run` with `body` as JSON (asking for the binary framing unless not `binary`)."""
    payload = dumps(body).encode()
    accept = FRAMES_TYPE if binary else "application/x-ndjson"
    head = (f"POST {RUN_PATH} HTTP/1.1\r\nhost: shell\r\ncontent-type: application/json\r\naccept: {accept}\r\n"
            f"content-length: {len(payload)}\r\n\r\n")
    return head.encode() + payload


def frames(tls: TlsStream, body: Mapping[str, Any], binary: bool = True) -> Iterator[dict[str, Any]]:
    """Send the run request; yield each frame as it arrives (a data frame's bytes as `data` in the binary
    framing); Refused when the door answered with an error."""
    try:  # not contextlib.suppress: contextlib loads collections and functools (imports are paid per call)  # noqa: SIM105
        tls.sendall(run_request(body, binary))
    except (BrokenPipeError, ConnectionResetError):  # a door that refused and closed: read why below
        pass
    reader, partial, framed = ResponseReader(), bytearray(), None
    while not reader.done:
        try:
            data = tls.recv(RECEIVE_BYTES)
        except _ssl.SSLError as exc:  # TLS 1.3: a refused client certificate is seen on the first read
            raise NotTheDoor(f"TLS refused: {getattr(exc, 'reason', None) or exc}") from None
        except OSError as exc:
            raise Unreachable(f"the shell door closed the connection: {posix.strerror(exc.errno or 0)}") from None
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
        shape = loads(body)
    except ValueError:
        shape = None
    if isinstance(shape, dict):
        return shape
    return {"error": "http", "who": "shell", "detail": body[:200].decode(errors="replace"), "hint": ""}
