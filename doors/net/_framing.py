"""HTTP/1.1 framing checks h11 does not make, and the request the door sends upstream. Pure, no I/O.

h11 parses; these checks run first on the raw request head, so that one byte stream cannot mean two
requests to two parsers (request smuggling): any ambiguity is a 400.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import h11

from doors._secret_match import KeptSecret, SecretMatcher
from doors.net._host import Host

MAX_HEAD = 32 * 1024
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_FIELD_NAME = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")

Headers = list[tuple[bytes, bytes]]


@dataclass(frozen=True)
class FramingError:
    """Why a request head is refused (400); `reason` is a short stable token."""

    reason: str
    detail: str


def find_head_end(buf: bytes) -> int | None:
    """Offset just past the head's blank line, or None while it is incomplete."""
    ends = [i + len(m) for m in (b"\r\n\r\n", b"\n\n", b"\n\r\n") if (i := buf.find(m)) >= 0]
    return min(ends) if ends else None


def _check_field(line: bytes, seen: dict[bytes, int]) -> FramingError | None:
    if line[:1] in (b" ", b"\t"):
        return FramingError("obs-fold", "a header line continues the previous one (obs-fold)")
    name, colon, value = line.partition(b":")
    if not colon or not _FIELD_NAME.fullmatch(name):
        return FramingError("bad-field", "a header line without a valid name and colon")
    if _CONTROL.search(value):
        return FramingError("control-char", f"a control character in the {name.decode()!r} header")
    key = name.lower()
    seen[key] = seen.get(key, 0) + 1
    if key == b"content-length" and not (value.strip().isdigit() and value.strip().isascii()):
        return FramingError("bad-content-length", "Content-Length that is not one decimal number")
    if key == b"transfer-encoding" and value.strip().lower() != b"chunked":
        return FramingError("bad-transfer-encoding", "Transfer-Encoding other than exactly 'chunked'")
    return None


def _check_counts(seen: dict[bytes, int]) -> FramingError | None:
    if seen.get(b"content-length", 0) > 1:
        return FramingError("duplicate-content-length", "Content-Length appears more than once")
    if seen.get(b"transfer-encoding", 0) > 1:
        return FramingError("duplicate-transfer-encoding", "Transfer-Encoding appears more than once")
    if seen.get(b"content-length") and seen.get(b"transfer-encoding"):
        return FramingError("cl-and-te", "both Content-Length and Transfer-Encoding frame the body")
    return None


def check_head(head: bytes) -> FramingError | None:
    """None when the raw head (through its blank line) is unambiguous, else why not."""
    if len(head) > MAX_HEAD:
        return FramingError("head-too-large", f"the request head exceeds {MAX_HEAD} bytes")
    body = head.lstrip(b"\r\n") if head.startswith(b"\r\n") else head
    if not body.endswith(b"\r\n\r\n"):
        return FramingError("bare-lf", "the head does not end with CRLF CRLF")
    lines = body[:-4].split(b"\r\n")
    if any(b"\n" in line or b"\r" in line for line in lines):
        return FramingError("bare-lf", "a line ends with a bare LF or CR")
    if _CONTROL.search(lines[0]) or b"\t" in lines[0]:
        return FramingError("control-char", "a control character in the request line")
    seen: dict[bytes, int] = {}
    for line in lines[1:]:
        error = _check_field(line, seen)
        if error is not None:
            return error
    return _check_counts(seen)


def parse_absolute_target(target: bytes) -> tuple[str, bytes]:
    """Split `http://authority/path?query` into authority and origin-form path; ValueError if not."""
    text = target.decode("utf-8", errors="strict")  # a host may arrive as UTF-8; _host judges it
    scheme, sep, rest = text.partition("://")
    if not sep or scheme.lower() != "http":
        raise ValueError("the target is not an absolute http:// URI (use CONNECT for https)")
    if "#" in rest:
        raise ValueError("the target carries a fragment")
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    authority, path = rest[:cut], rest[cut:]
    if not authority:
        raise ValueError("the target has an empty authority")
    if path.startswith("?"):
        path = "/" + path
    return authority, (path or "/").encode("ascii")


def strip_hop_by_hop(headers: Iterable[tuple[bytes, bytes]]) -> Headers:
    """Drop hop-by-hop fields and every field the Connection header names."""
    pairs = [(name.lower(), value) for name, value in headers]
    named = {
        token.strip().lower()
        for name, value in pairs
        if name == b"connection"
        for token in value.split(b",")
    }
    return [(n, v) for n, v in pairs if n not in HOP_BY_HOP and n not in named]


def authority_text(host: Host, port: int, default_port: int = 80) -> bytes:
    """The Host header value for `host:port`."""
    text = str(host) if port == default_port else f"{host}:{port}"
    return text.encode("ascii")


def upstream_request(request: h11.Request, host: Host, port: int, path: bytes) -> h11.Request:
    """The request to send upstream: origin-form, Host from the URI authority, one connection."""
    headers = [(n, v) for n, v in strip_hop_by_hop(request.headers) if n != b"host"]
    if _is_chunked(request.headers):
        headers.append((b"transfer-encoding", b"chunked"))
    headers = [(b"host", authority_text(host, port)), *headers, (b"connection", b"close")]
    return h11.Request(method=request.method, target=path, headers=headers)


def downstream_headers(headers: Sequence[tuple[bytes, bytes]]) -> Headers:
    """The upstream response's fields as the client gets them; h11 re-frames chunked bodies."""
    return strip_hop_by_hop(headers)


def _is_chunked(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    return any(name.lower() == b"transfer-encoding" for name, _ in headers)


def start_request(buf: bytes) -> tuple[h11.Connection, h11.Request] | FramingError | None:
    """Check and parse one request head from `buf`: None while incomplete, else h11's state + event."""
    end = find_head_end(buf)
    if end is None:
        return FramingError("head-too-large", f"no complete head in {MAX_HEAD} bytes") if len(buf) > MAX_HEAD else None
    error = check_head(buf[:end])
    if error is not None:
        return error
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    conn.receive_data(buf)
    try:
        event = conn.next_event()
    except h11.RemoteProtocolError as exc:
        return FramingError("bad-request", str(exc))
    if not isinstance(event, h11.Request):
        return FramingError("bad-request", "no request in the head")
    return conn, event


def head_bytes(request: h11.Request) -> bytes:
    """The request line's target and every field as the client sent them, one per line (what is scanned)."""
    return b"\r\n".join([request.target, *(name + b": " + value for name, value in request.headers)])


def unbound_secret(kept: SecretMatcher, data: bytes, host: str, start: int = 0) -> KeptSecret | None:
    """A kept secret found in `data` (a block ending past `start`) that is not bound to `host`, if any."""
    for match in kept.find(data, start):
        if host.lower() not in match.secret.hosts:
            return match.secret
    return None


def buffered_body(request: h11.Request, received: bytes) -> bytes:
    """What of the body came with the head (`received`: what h11 holds unparsed), cut at its Content-Length so a
    pipelined request after it is not read as this one's; a chunked body as it came, framing and all."""
    length = next((value for name, value in request.headers if name.lower() == b"content-length"), None)
    return received[: int(length)] if length is not None else received
