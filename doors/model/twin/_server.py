"""The twin as a plain HTTP/1.1 server (h11 + trio): for tests, and the bench's direct baseline.

Every answer, hostile input included, is in the API's shape: malformed HTTP or JSON is a 400
invalid_request_error, a body over the limit a 413 request_too_large, then the connection closes; one broken
connection never stops the server. A cut stream closes the connection without the body's last chunk.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from http import HTTPStatus
from typing import NoReturn

import h11
import trio

from doors.model.twin._errors import ApiError
from doors.model.twin._request import inflate_gzip
from doors.model.twin._twin import Answer
from doors.model.twin._upstream import TwinUpstream, paced

log = logging.getLogger(__name__)

RECEIVE_BYTES = 64 * 1024
_REASONS = {status.value: status.phrase.encode() for status in HTTPStatus}
LINGER_S = 1.0
LINGER_READS = 64


@dataclass(frozen=True)
class ServerLimits:
    """What one client may make the twin hold or wait for."""

    max_body_bytes: int = 32 * 1024 * 1024  # the API's own limit for Messages and count_tokens
    max_head_bytes: int = 64 * 1024
    idle_timeout_s: float = 120.0  # a connection with no request (or an unfinished head) this long is closed
    body_timeout_s: float = 60.0  # a request body not all there after this long: the connection is closed
    send_timeout_s: float = 30.0  # a client that does not take a piece of the answer for this long is cut


class _Closed(Exception):
    """The connection is done: the client left, broke HTTP, or the answer asked to close."""


class _Connection:
    """One client connection: requests in, the twin's answers out, keep-alive between them."""

    def __init__(self, stream: trio.abc.Stream, upstream: TwinUpstream, limits: ServerLimits) -> None:
        self.stream = stream
        self.upstream = upstream
        self.limits = limits
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=limits.max_head_bytes)

    async def serve(self) -> None:
        while True:
            request = await self._next_request()
            with trio.fail_after(self.limits.body_timeout_s):
                body = await self._read_body(request)
            target = bytes(request.target)
            try:
                answer = self.upstream.twin.answer(bytes(request.method), target.split(b"?", 1)[0],
                                                   tuple((bytes(k), bytes(v)) for k, v in request.headers), body)
            except Exception as exc:  # a bug in the twin: answer it, say where (never what the client sent)
                log.error("the twin failed: %s", type(exc).__name__)
                await self._refuse(ApiError(500, f"the twin failed: {type(exc).__name__}"))
            await self._send_answer(answer, head_only=request.method == b"HEAD")
            if self.h11.our_state is h11.MUST_CLOSE or not answer.complete:
                raise _Closed
            self.h11.start_next_cycle()

    async def _next_request(self) -> h11.Request:
        event: h11.Event | None = None
        with trio.move_on_after(self.limits.idle_timeout_s):
            event = await self._next_event()
        if not isinstance(event, h11.Request):
            raise _Closed  # idle too long, or not a request (a stray body event cannot come between cycles)
        # h11 bounds a head that arrives in pieces only; one that arrives whole is measured here
        if len(event.target) + sum(len(k) + len(v) + 4 for k, v in event.headers) > self.limits.max_head_bytes:
            await self._refuse(self._head_too_large())
        return event

    async def _read_body(self, request: h11.Request) -> bytes:
        length = next((int(v) for k, v in request.headers if k == b"content-length"), 0)
        if length > self.limits.max_body_bytes:
            await self._refuse(self._too_large())
        if self.h11.they_are_waiting_for_100_continue:
            await self._send(h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue"))
        body = bytearray()
        while True:
            event = await self._next_event()
            if isinstance(event, h11.EndOfMessage):
                break
            if isinstance(event, h11.Data):
                body += event.data
                if len(body) > self.limits.max_body_bytes:
                    await self._refuse(self._too_large())
        return await self._decoded(request, bytes(body))

    async def _decoded(self, request: h11.Request, body: bytes) -> bytes:
        encoding = next((bytes(v).lower() for k, v in request.headers if k == b"content-encoding"), b"identity")
        if encoding == b"identity":
            return body
        if encoding != b"gzip":
            await self._refuse(ApiError(400, f"content-encoding {encoding[:40].decode('latin-1')!r} is not "
                                             "supported (send gzip or none)"))
        plain = inflate_gzip(body, self.limits.max_body_bytes)
        if isinstance(plain, ApiError):
            await self._refuse(plain)
        return plain

    def _head_too_large(self) -> ApiError:
        return ApiError(413, f"the request head is larger than {self.limits.max_head_bytes} bytes")

    def _too_large(self) -> ApiError:
        return ApiError(413, f"the request body is larger than {self.limits.max_body_bytes} bytes")

    async def _next_event(self) -> h11.Event:
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                if exc.error_status_hint == 431:
                    await self._refuse(self._head_too_large())
                await self._refuse(ApiError(400, f"the request is not well-formed HTTP/1.1: {exc}"))
            if event is h11.NEED_DATA:
                self.h11.receive_data(bytes(await self.stream.receive_some(RECEIVE_BYTES)))
                continue
            if isinstance(event, h11.ConnectionClosed) or not isinstance(event, h11.Event):
                raise _Closed  # the client left (PAUSED cannot come: a cycle is restarted before reading on)
            return event

    async def _refuse(self, error: ApiError) -> NoReturn:
        """Answer `error` (when a response can still be started), close the connection, and stop."""
        if self.h11.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            await self._send_answer(self.upstream.twin.error(error), close=True)
            await self._linger()
        raise _Closed

    async def _linger(self) -> None:
        """Drop what the client still sends for a moment: closing with unread bytes would reset the answer."""
        with trio.move_on_after(LINGER_S):
            for _ in range(LINGER_READS):
                if not await self.stream.receive_some(RECEIVE_BYTES):
                    return

    async def _send_answer(self, answer: Answer, *, close: bool = False, head_only: bool = False) -> None:
        """Send `answer` (`head_only`: a HEAD request's, its head alone), paced, ending it unless it is cut."""
        headers = list(answer.headers)
        if not answer.complete or dict(answer.headers).get(b"content-type") == b"text/event-stream":
            headers.append((b"transfer-encoding", b"chunked"))
        else:
            headers.append((b"content-length", str(len(answer.body)).encode()))
        if close:
            headers.append((b"connection", b"close"))
        reason = _REASONS.get(answer.status, b"")
        await self._send(h11.Response(status_code=answer.status, headers=headers, reason=reason))
        if head_only:
            await self._send(h11.EndOfMessage())
            return
        async for piece in paced(answer):
            await self._send(h11.Data(data=piece))
        if answer.complete:
            await self._send(h11.EndOfMessage())

    async def _send(self, event: h11.Event) -> None:
        data = self.h11.send(event)
        if data:
            with trio.fail_after(self.limits.send_timeout_s):
                await self.stream.send_all(data)


async def serve_connection(stream: trio.abc.Stream, upstream: TwinUpstream, limits: ServerLimits) -> None:
    """Serve one client until it leaves or breaks something; never raises (the server stays up)."""
    try:
        await _Connection(stream, upstream, limits).serve()
    except (_Closed, trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    except Exception as exc:  # a bug must not stop the server: say where, not what the client sent
        log.error("twin connection failed: %s", type(exc).__name__)
    finally:
        await trio.aclose_forcefully(stream)


async def serve_twin(
    host: str,
    port: int,
    upstream: TwinUpstream,
    limits: ServerLimits = ServerLimits(),
    *,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on `host:port` (port 0: any) and serve the twin; `task_status` gets the bound address."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()
    task_status.started((bound[0], bound[1]))

    async def handler(stream: trio.SocketStream) -> None:
        await serve_connection(stream, upstream, limits)

    await trio.serve_listeners(handler, listeners)
