"""The trio loop around ServerConnection: timeouts, body limits, streaming bodies, keep-alive."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from dataclasses import replace

import trio

from doors._http._limits import Limits
from doors._http._records import Request, Response, error_response, refused_response
from doors._http._router import Match, Router, TakeoverRoute
from doors._http._server_conn import BodyData, BodyEnd, Event, Head, Malformed, NeedData, ServerConnection
from doors._http._takeover import ReplayStream
from doors._refusal import DoorRefused, Refusal

log = logging.getLogger(__name__)

Gate = Callable[[Request], Response | None]
OnExchange = Callable[[Request, int], None]
OnCut = Callable[[Request, int], None]  # a response the client stopped draining: the request, bytes sent
LINGER_S = 1.0
LINGER_BYTES = 256 * 1024
RECORD_BYTES = 16 * 1024  # TLS's largest record: smaller parts are coalesced, larger ones sent from themselves


class SendStalled(trio.TooSlowError):
    """The client did not drain a piece of the response within send_timeout_s: the connection is cut."""

    def __init__(self, sent: int) -> None:
        super().__init__(sent)
        self.sent = sent


class _Reader:
    """Pulls events from the stream into the connection, with a deadline for each wait."""

    def __init__(self, stream: trio.abc.Stream, conn: ServerConnection) -> None:
        self.stream = stream
        self.conn = conn
        self.received_any = False
        self.first_byte_at = 0.0

    async def next_event(self, deadline: float, after_first_byte_s: float | None = None) -> Event:
        """Return the next event; raise trio.TooSlowError if the client misses `deadline`.

        With `after_first_byte_s`, the deadline also comes no later than that long after the first byte.
        """
        while True:
            event = self.conn.next_event()
            if not isinstance(event, NeedData):
                return event
            if after_first_byte_s is not None and self.received_any:
                deadline = min(deadline, self.first_byte_at + after_first_byte_s)
            # A bare scope, not trio.fail_at: the same deadline without a generator context manager per read.
            with trio.CancelScope(deadline=deadline) as scope:
                data = await self.stream.receive_some(self.conn.limits.receive_bytes)
            if scope.cancelled_caught:
                raise trio.TooSlowError
            if data and not self.received_any:
                self.first_byte_at = trio.current_time()
            self.received_any = self.received_any or bool(data)
            self.conn.receive_data(data)


class _Body:
    """A request body read on demand by a streaming handler, under the route's size and rate limits."""

    def __init__(self, reader: _Reader, max_bytes: int, who: str) -> None:
        self._reader = reader
        self._max = max_bytes
        self._who = who
        self._started = trio.current_time()
        self.received = 0
        self.done = False

    async def receive_some(self) -> bytes:
        """Return the next piece of the body, b"" at its end; DoorRefused 413/408 past the limits."""
        limits = self._reader.conn.limits
        if not self.done:
            await self._send_continue()
        while not self.done:
            try:
                event = await self._reader.next_event(limits.body_deadline(self._started, self.received))
            except trio.TooSlowError:
                raise DoorRefused(Refusal(408, "http.body_min_bytes_per_s", self._who,
                                          f"the body arrived slower than {limits.body_min_bytes_per_s} bytes/s",
                                          "send the body without pausing"), close=True) from None
            if isinstance(event, BodyData):
                self.received += len(event.data)
                if self.received > self._max:
                    raise _too_large(self._who, self._max)
                return event.data
            if isinstance(event, Malformed):
                raise DoorRefused(Refusal(400, "http.malformed", self._who, "the body is malformed",
                                          "send a well-formed HTTP/1.1 body"), close=True)
            self.done = True
        return b""

    async def _send_continue(self) -> None:
        """Tell a client that sent `Expect: 100-continue` to send its body now (curl waits 1 s otherwise)."""
        interim = self._reader.conn.continue_bytes()
        if interim:
            with trio.fail_after(self._reader.conn.limits.send_timeout_s):
                await self._reader.stream.send_all(interim)

    async def read_all(self) -> bytes:
        parts = bytearray()
        while piece := await self.receive_some():
            parts += piece
        return bytes(parts)


def _too_large(who: str, limit: int) -> DoorRefused:
    return DoorRefused(Refusal(413, "http.max_body_bytes", who, f"the body is larger than {limit} bytes",
                               "send a smaller body"), close=True)


async def serve_http(
    stream: trio.abc.Stream,
    router: Router,
    limits: Limits,
    *,
    gate: Gate | None = None,
    on_exchange: OnExchange | None = None,
    on_cut: OnCut | None = None,
    peer_role: str | None = None,
    peer_id: str | None = None,
) -> None:
    """Serve requests on `stream` until the client leaves, breaks a limit, or a response closes it.

    A client that stops draining a response is cut (`on_cut` says which request and how much it took).
    A request for a TakeoverRoute (that `gate` lets through) hands the connection to its handler for good;
    the handler does its own auditing (`on_exchange` is not called for it).
    """
    conn = ServerConnection(limits, router.who, any_target=router.takes_over, peer_role=peer_role, peer_id=peer_id)
    reader = _Reader(stream, conn)
    try:
        while True:
            head = await _read_head(reader, stream)
            if head is None:
                return
            request = head.request
            takeover = _takeover_route(router, request, gate)
            if takeover is not None:
                return await _take_over(takeover, request, ReplayStream(conn.takeover_bytes(), stream))
            response, body = await _respond(reader, router, request, head, gate)
            if on_exchange is not None:
                on_exchange(request, response.status)
            body_done = body.done if body is not None and (body.done or body.received) else _bodyless(conn)
            if not body_done:
                # Answered before the body was read: say the connection closes, so no client reuses it.
                response = replace(response, close=True)
            try:
                await _send_response(stream, conn, response)
            except SendStalled as stalled:
                if on_cut is not None:
                    on_cut(request, stalled.sent)
                return
            if not body_done:
                await _linger(stream)
                return
            if response.close or not conn.next_cycle():
                return
    except (trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError):
        return  # the client stopped reading or left: nothing more to say to it


def _takeover_route(router: Router, request: Request, gate: Gate | None) -> TakeoverRoute | None:
    """The route taking this connection over: a non-path target, its method's route, the gate passed."""
    if request.target.startswith("/"):
        return None
    route = router.takeover(request.method)
    if route is None or (gate is not None and gate(request) is not None):
        return None
    return route


async def _take_over(route: TakeoverRoute, request: Request, stream: ReplayStream) -> None:
    try:
        await route.handler(request, stream)
    except (trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError):
        raise
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        log.error("takeover for %s failed: %s at %s:%s", request.method, type(exc).__name__,
                  frame.filename, frame.lineno)


def _bodyless(conn: ServerConnection) -> bool:
    """Whether the request's body ends at once in what is already buffered (no body was sent)."""
    return isinstance(conn.next_event(), BodyEnd)


async def _read_head(reader: _Reader, stream: trio.abc.Stream) -> Head | None:
    """Wait for a request head: idle timeout before its first byte, head timeout after. None = close."""
    limits = reader.conn.limits
    reader.received_any = False
    deadline = trio.current_time() + limits.idle_timeout_s
    while True:
        try:
            event = await reader.next_event(deadline, after_first_byte_s=limits.head_timeout_s)
        except trio.TooSlowError:
            if reader.received_any:
                await _send_response(stream, reader.conn, error_response(Refusal(
                    408, "http.head_timeout_s", reader.conn.who, "the request head did not arrive in time",
                    "send the whole request head at once"), close=True))
            return None
        if isinstance(event, Head):
            return event
        if isinstance(event, Malformed):
            await _send_response(stream, reader.conn, event.response)
            await _linger(stream)  # the client may still be sending: closing now could reset the answer
            return None
        if not isinstance(event, NeedData):
            return None  # PeerClosed, or stray body events: nothing more to serve


async def _respond(
    reader: _Reader, router: Router, request: Request, head: Head, gate: Gate | None
) -> tuple[Response, _Body | None]:
    """Decide the response: gate, route, body limits, then the handler. Never raises."""
    body: _Body | None = None
    try:
        refusal = gate(request) if gate is not None else None
        if refusal is not None:
            return refusal, None
        if not request.target.startswith("/"):
            raise DoorRefused(Refusal(400, "http.target", router.who,
                                      f"target {request.target[:80]!r} is not a path",
                                      f"{request.method} takes a path here, such as /v0/hello"), close=True)
        match = router.match(request.method, request.path)
        max_body = match.route.max_body_bytes or reader.conn.limits.max_body_bytes
        if head.content_length is not None and head.content_length > max_body:
            raise _too_large(router.who, max_body)
        body = _Body(reader, max_body, router.who)
        return await _call(match, request, body), body
    except DoorRefused as refused:
        return refused_response(refused), body
    except Exception as exc:
        # Type and place only: an exception's text may hold what a handler was working on (a secret).
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        log.error("handler for %s %s failed: %s at %s:%s", request.method, request.path,
                  type(exc).__name__, frame.filename, frame.lineno)
        return error_response(Refusal(500, "door.internal", router.who, "the door failed on this request",
                                      "report this with the door's audit log"), close=True), body


async def _call(match: Match, request: Request, body: _Body) -> Response:
    if match.route.stream_body:
        request = replace(request, body_stream=body, rest=match.rest)
    else:
        read = await body.read_all()
        if read or match.rest:  # a bodiless request to an exact route is the head's own request
            request = replace(request, body=read, rest=match.rest)
    return await match.route.handler(request)


async def _send_response(stream: trio.abc.Stream, conn: ServerConnection, response: Response) -> None:
    """Send `response` in pieces of at most send_piece_bytes, each drained within send_timeout_s (else
    SendStalled); a streamed body's producer is started before anything is sent, so a cut always closes it."""
    if not conn.can_send_response():
        return
    sender = _Sender(stream, conn.limits)
    body, piece = response.body, conn.limits.send_piece_bytes
    if isinstance(body, bytes):
        head = conn.response_head(response, body_length=len(body))
        if len(head) + len(body) <= piece:  # the usual answer: one send, no pending buffer
            await sender.send_whole(head + conn.body_bytes(body) + conn.end_bytes())
            return
        await sender.write(head)
        for start in range(0, len(body), piece):
            await sender.write(conn.body_bytes(body[start:start + piece]))
        await sender.write(conn.end_bytes())
        await sender.flush()
        return
    pieces = aiter(body)
    try:
        produced = await anext(pieces, None)
        await sender.write(conn.response_head(response, body_length=response.content_length))
        while produced is not None:
            await sender.write_parts(conn.body_parts(produced))
            await sender.flush()  # each piece goes out as it is produced: a stream (the shell's frames) is live
            produced = await anext(pieces, None)
        await sender.write(conn.end_bytes())
        await sender.flush()
    finally:
        aclose = getattr(pieces, "aclose", None)
        if aclose is not None:
            await aclose()  # a cut or broken client: the producer lets go of its file now


class _Sender:
    """Coalesces framed bytes into pieces of at most send_piece_bytes, each sent within send_timeout_s; counts
    what the client took. What it holds unsent is under two pieces."""

    def __init__(self, stream: trio.abc.Stream, limits: Limits) -> None:
        self._stream = stream
        self._limits = limits
        self._pending = bytearray()
        self.sent = 0

    async def write(self, data: bytes) -> None:
        self._pending += data
        piece = self._limits.send_piece_bytes
        while len(self._pending) >= piece:
            await self._send(bytes(self._pending[:piece]))
            del self._pending[:piece]

    async def write_parts(self, parts: list[bytes]) -> None:
        """Like `write` for each part, but a large part is sent from itself, a piece at a time, not copied into
        the pending buffer (what is pending goes first, topped up to one TLS record from the part's head)."""
        for part in parts:
            if len(part) < RECORD_BYTES:
                await self.write(part)
                continue
            view, piece = memoryview(part), self._limits.send_piece_bytes
            if self._pending:
                take = max(min(RECORD_BYTES, piece) - len(self._pending), 0)
                self._pending += view[:take]
                view = view[take:]
                await self.flush()
            for start in range(0, len(view), piece):
                await self._send(view[start:start + piece])

    async def send_whole(self, data: bytes) -> None:
        """Send `data`, at most one piece, with nothing pending (a whole response that fits in one)."""
        await self._send(data)

    async def flush(self) -> None:
        if self._pending:
            await self._send(bytes(self._pending))
            self._pending.clear()

    async def _send(self, data: bytes | memoryview) -> None:
        with trio.CancelScope(deadline=trio.current_time() + self._limits.send_timeout_s) as scope:
            await self._stream.send_all(data)
        if scope.cancelled_caught:
            raise SendStalled(self.sent)
        self.sent += len(data)


async def _linger(stream: trio.abc.Stream) -> None:
    """Read and drop what the client still sends for a moment, so closing does not reset the response."""
    with trio.move_on_after(LINGER_S):
        drained = 0
        while drained < LINGER_BYTES:
            try:
                data = await stream.receive_some(64 * 1024)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not data:
                return
            drained += len(data)
