"""The server side of one HTTP/1.1 connection on h11, with the door's limits. Sans-IO: bytes in and out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from types import MappingProxyType
from urllib.parse import parse_qs, urlsplit

import h11

from doors._http._limits import Limits
from doors._http._records import Request, Response, error_response
from doors._refusal import Refusal


@dataclass(frozen=True)
class NeedData:
    """Feed more bytes (or b"" at end of stream) with `receive_data`."""


@dataclass(frozen=True)
class Head:
    """A request head that passed the limits; its body (if any) follows as BodyData then BodyEnd."""

    request: Request
    content_length: int | None


@dataclass(frozen=True)
class BodyData:
    data: bytes


@dataclass(frozen=True)
class BodyEnd:
    """The request body is complete."""


@dataclass(frozen=True)
class PeerClosed:
    """The client closed its side between requests."""


@dataclass(frozen=True)
class Malformed:
    """The client broke HTTP or a limit: send `response` and close."""

    response: Response


_REASONS = {status.value: status.phrase.encode() for status in HTTPStatus}

Event = NeedData | Head | BodyData | BodyEnd | PeerClosed | Malformed
NO_QUERY: Mapping[str, tuple[str, ...]] = MappingProxyType({})


def path_and_query(target: str) -> tuple[str, Mapping[str, tuple[str, ...]]]:
    """The target's path and its query parameters, as urlsplit and parse_qs read them."""
    if target[:1] == "/" and target[1:2] != "/" and "?" not in target and "#" not in target:
        # An origin-form target without query or fragment is its own path in urlsplit's reading too: h11
        # let only visible ASCII (\x21-\x7e) into it, so there is no whitespace or control byte to strip.
        return target, NO_QUERY
    parts = urlsplit(target)
    return parts.path, {k: tuple(v) for k, v in parse_qs(parts.query, keep_blank_values=True).items()}


class ServerConnection:
    """Wraps h11.Connection: limits on heads, error responses for malformed input, keep-alive cycles."""

    def __init__(self, limits: Limits, who: str, *, any_target: bool = False, peer_role: str | None = None,
                 peer_id: str | None = None) -> None:
        self.limits = limits
        self.who = who
        self.any_target = any_target  # also authority- and absolute-form targets (for a takeover route)
        self.peer_role = peer_role  # who the transport admitted: every Request of this connection carries it
        self.peer_id = peer_id
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=limits.max_header_bytes)
        # Every byte of this cycle up to and including the read that completed its head (bounded by
        # max_header_bytes plus one read): what a takeover route replays.
        self._raw = bytearray()
        self._head_seen = False
        self._read_after_head = False

    def receive_data(self, data: bytes | bytearray) -> None:
        """Feed bytes from the client; b"" means the client closed its side."""
        if self._head_seen:
            self._read_after_head = True
        else:
            self._raw += data
        self._h11.receive_data(bytes(data))

    def takeover_bytes(self) -> bytes:
        """Right after a head: every byte received since its request began (the head, and what followed)."""
        if not self._head_seen or self._read_after_head:
            raise RuntimeError("take over right after the head, before reading on")
        return bytes(self._raw)

    def next_event(self) -> Event:
        """Return the next event, turning protocol errors and limit breaks into Malformed."""
        try:
            event = self._h11.next_event()
        except h11.RemoteProtocolError as exc:
            return Malformed(self._malformed(exc.error_status_hint, str(exc)))
        if event is h11.NEED_DATA or event is h11.PAUSED:
            return NeedData()
        if isinstance(event, h11.Request):
            return self._head(event)
        if isinstance(event, h11.Data):
            return BodyData(bytes(event.data))
        if isinstance(event, h11.EndOfMessage):
            return BodyEnd()
        return PeerClosed()

    def _head(self, event: h11.Request) -> Event:
        limits = self.limits
        headers = tuple((bytes(k).decode("latin-1"), bytes(v).decode("latin-1")) for k, v in event.headers)
        header_bytes = sum(len(k) + len(v) + 4 for k, v in headers)
        if len(headers) > limits.max_header_count:
            return Malformed(self._limit(431, "http.max_header_count", f"{len(headers)} headers",
                                         limits.max_header_count))
        if header_bytes > limits.max_header_bytes:
            return Malformed(self._limit(431, "http.max_header_bytes", f"{header_bytes} header bytes",
                                         limits.max_header_bytes))
        target = bytes(event.target).decode("ascii", "replace")
        if len(target) > limits.max_target_bytes:
            return Malformed(self._limit(414, "http.max_target_bytes", f"a {len(target)}-byte target",
                                         limits.max_target_bytes))
        if not target.startswith("/") and not self.any_target:
            return Malformed(self._not_a_path(target))
        names = {k for k, _ in headers}
        if "content-length" in names and "transfer-encoding" in names:
            # h11 lets Transfer-Encoding win (RFC 9112 6.3); a proxy in front might not: refuse, never guess.
            return Malformed(error_response(Refusal(400, "http.framing", self.who,
                                                    "the request has both Content-Length and Transfer-Encoding",
                                                    "send one of them, not both"), close=True))
        try:
            path, query = path_and_query(target)
        except ValueError:  # urlsplit's "Invalid IPv6 URL" for a target such as //[x
            return Malformed(self._not_a_path(target))
        length = next((int(v) for k, v in headers if k == "content-length"), None)
        request = Request(event.method.decode("ascii"), target, path, query, headers,
                          peer_role=self.peer_role, peer_id=self.peer_id)
        self._head_seen = True
        return Head(request, length)

    def _not_a_path(self, target: str) -> Response:
        return error_response(Refusal(400, "http.target", self.who, f"target {target[:80]!r} is not a path",
                                      "request a path such as /v0/hello"), close=True)

    def _limit(self, status: int, row: str, what: str, limit: int) -> Response:
        return error_response(Refusal(status, row, self.who, f"{what}, the limit is {limit}",
                                      "send a smaller request"), close=True)

    def _malformed(self, status: int, detail: str) -> Response:
        if status == 431:
            return self._limit(431, "http.max_header_bytes", "the request head is too large",
                               self.limits.max_header_bytes)
        return error_response(Refusal(400, "http.malformed", self.who, detail,
                                      "send a well-formed HTTP/1.1 request"), close=True)

    def response_head(self, response: Response, *, body_length: int | None) -> bytes:
        """Bytes of the status line and headers; `body_length` None means chunked."""
        headers = [(k, v) for k, v in response.headers if k.lower() not in ("content-length", "connection")]
        if body_length is not None:
            headers.append(("content-length", str(body_length)))
        if response.close or self._h11.their_state is h11.ERROR:
            headers.append(("connection", "close"))
        reason = _REASONS.get(response.status, b"")
        return self._send(h11.Response(status_code=response.status, headers=headers, reason=reason))

    def body_bytes(self, data: bytes) -> bytes:
        """Bytes framing one piece of the response body."""
        return self._send(h11.Data(data=data)) if data else b""

    def body_parts(self, data: bytes) -> list[bytes]:
        """The pieces framing `data` as one chunk, `data` itself among them (not copied into the framing)."""
        return (self._h11.send_with_data_passthrough(h11.Data(data=data)) or []) if data else []

    def end_bytes(self) -> bytes:
        """Bytes ending the response body."""
        return self._send(h11.EndOfMessage())

    def continue_bytes(self) -> bytes:
        """The interim `100 Continue` when the client waits for one before its body (else b"")."""
        if not self._h11.they_are_waiting_for_100_continue:
            return b""
        return self._send(h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue"))

    def can_send_response(self) -> bool:
        """Whether a response may still be started on this connection."""
        return self._h11.our_state in (h11.IDLE, h11.SEND_RESPONSE)

    def next_cycle(self) -> bool:
        """After a full exchange, prepare for the next request; False means close the connection."""
        if self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE:
            self._h11.start_next_cycle()
            self._raw = bytearray(self._h11.trailing_data[0])
            self._head_seen = self._read_after_head = False
            return True
        return False

    def _send(self, event: h11.Event) -> bytes:
        data = self._h11.send(event)
        return data if data is not None else b""
