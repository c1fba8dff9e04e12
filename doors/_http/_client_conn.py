"""The client side of one HTTP/1.1 connection on h11, for the sync and async door clients. Sans-IO."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import h11

from doors._http._records import JSON_TYPE, json_body

MAX_RESPONSE_BYTES = 64 * 1024 * 1024


class ResponseProtocolError(Exception):
    """The door's response broke HTTP/1.1 or the client's size limit."""


@dataclass(frozen=True)
class ClientResponse:
    """A response as a client receives it; header names are lowercase."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    will_close: bool

    def header(self, name: str) -> str | None:
        """Return the first value of header `name` (case-insensitive), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key == wanted), None)

    def json(self) -> Any:
        """Return the body parsed as JSON."""
        return json.loads(self.body)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


Headers = tuple[tuple[str, str], ...]


def encode_body(json_value: Any = None, body: bytes | None = None) -> tuple[bytes, Headers]:
    """Return the body bytes and content headers for a request given as JSON or bytes (not both)."""
    if json_value is not None and body is not None:
        raise ValueError("give json or body, not both")
    if json_value is not None:
        return json_body(json_value), (("content-type", JSON_TYPE),)
    return body or b"", ()


class ClientConnection:
    """Wraps h11.Connection for one request at a time, keep-alive between them."""

    def __init__(self, host: str, max_response_bytes: int = MAX_RESPONSE_BYTES) -> None:
        self._h11 = h11.Connection(h11.CLIENT)
        self._host = host
        self._max = max_response_bytes
        self._status = 0
        self._headers: tuple[tuple[str, str], ...] = ()
        self._body = bytearray()

    def request_bytes(
        self, method: str, target: str, body: bytes = b"", headers: tuple[tuple[str, str], ...] = ()
    ) -> bytes:
        """Bytes of a whole request with a Content-Length body."""
        all_headers = [("host", self._host), *headers, ("content-length", str(len(body)))]
        out = self._h11.send(h11.Request(method=method, target=target, headers=all_headers))
        out = (out or b"") + (self._h11.send(h11.Data(data=body)) or b"" if body else b"")
        return out + (self._h11.send(h11.EndOfMessage()) or b"")

    def receive_data(self, data: bytes | bytearray) -> None:
        """Feed bytes from the door; b"" means it closed."""
        self._h11.receive_data(bytes(data))

    def next_response(self) -> ClientResponse | None:
        """Return the response once complete, None when more bytes are needed."""
        while True:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise ResponseProtocolError(f"the door's response is not HTTP/1.1: {exc}") from exc
            if event is h11.NEED_DATA:
                return None
            if isinstance(event, h11.Response):
                self._status = event.status_code
                self._headers = tuple((bytes(k).decode("latin-1"), bytes(v).decode("latin-1"))
                                      for k, v in event.headers)
            elif isinstance(event, h11.Data):
                self._body += event.data
                if len(self._body) > self._max:
                    raise ResponseProtocolError(f"the response is larger than {self._max} bytes")
            elif isinstance(event, h11.EndOfMessage):
                return self._finish()
            elif isinstance(event, h11.ConnectionClosed):
                raise ResponseProtocolError("the door closed the connection before answering")

    def _finish(self) -> ClientResponse:
        will_close = self._h11.our_state is h11.MUST_CLOSE or self._h11.their_state is h11.MUST_CLOSE
        response = ClientResponse(self._status, self._headers, bytes(self._body), will_close)
        self._body = bytearray()
        return response

    def next_cycle(self) -> bool:
        """Prepare for the next request on this connection; False means open a new one."""
        if self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE:
            self._h11.start_next_cycle()
            return True
        return False
