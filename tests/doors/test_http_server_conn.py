"""Limits and malformed input on the sans-IO server connection."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from doors._http import Limits, ServerConnection
from doors._http._server_conn import BodyEnd, Head, Malformed, NeedData, path_and_query


def _feed(data: bytes, limits: Limits | None = None) -> object:
    conn = ServerConnection(limits or Limits(), "fs")
    conn.receive_data(data)
    return conn.next_event()


def _refusal(event: object) -> tuple[int, str]:
    assert isinstance(event, Malformed), event
    assert isinstance(event.response.body, bytes)
    assert event.response.close
    return event.response.status, json.loads(event.response.body)["error"]


def test_a_request_head_with_query() -> None:
    event = _feed(b"GET /v0/hello?a=1&a=2 HTTP/1.1\r\nHost: door\r\n\r\n")
    assert isinstance(event, Head)
    assert event.request.path == "/v0/hello"
    assert event.request.query == {"a": ("1", "2")}
    assert event.request.header("HOST") == "door"


def test_a_request_carries_the_peer_the_transport_admitted() -> None:
    conn = ServerConnection(Limits(), "fs", peer_role="app", peer_id="spiffe://sharness.test/0123abcd/app")
    conn.receive_data(b"GET /v0/hello HTTP/1.1\r\nHost: door\r\n\r\n")
    event = conn.next_event()
    assert isinstance(event, Head)
    assert (event.request.peer_role, event.request.peer_id) == ("app", "spiffe://sharness.test/0123abcd/app")


_TARGET_CHARS = st.sampled_from([chr(c) for c in range(0x21, 0x7F)])  # what h11 lets into a request target


@settings(max_examples=3000)
@given(st.one_of(st.text(_TARGET_CHARS, min_size=1), st.text(st.sampled_from("/?#:@[]%a;=&"), min_size=1)))
def test_path_and_query_read_a_target_as_urlsplit_and_parse_qs_do(target: str) -> None:
    try:
        parts = urlsplit(target)
    except ValueError:  # an authority that is not one ("//[x"): the fast path must not hide it either
        with pytest.raises(ValueError):
            path_and_query(target)
        return
    want = (parts.path, {k: tuple(v) for k, v in parse_qs(parts.query, keep_blank_values=True).items()})
    path, query = path_and_query(target)
    assert (path, dict(query)) == want


def test_a_target_urlsplit_cannot_read_is_400_not_a_crash() -> None:
    assert _refusal(_feed(b"GET //[x HTTP/1.1\r\nHost: x\r\n\r\n")) == (400, "http.target")


def test_garbage_is_400() -> None:
    assert _refusal(_feed(b"\x16\x03\x01garbage\r\n\r\n")) == (400, "http.malformed")


def test_missing_host_is_400() -> None:
    assert _refusal(_feed(b"GET / HTTP/1.1\r\n\r\n"))[0] == 400


def test_absolute_target_is_400() -> None:
    assert _refusal(_feed(b"GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n")) == (400, "http.target")


def test_too_many_headers_is_431() -> None:
    headers = b"".join(b"x-%d: 1\r\n" % i for i in range(10))
    event = _feed(b"GET / HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n", Limits(max_header_count=5))
    assert _refusal(event) == (431, "http.max_header_count")


def test_header_bytes_over_the_limit_is_431_even_when_complete() -> None:
    head = b"GET / HTTP/1.1\r\nHost: x\r\nx-big: " + b"a" * 3000 + b"\r\n\r\n"
    assert _refusal(_feed(head, Limits(max_header_bytes=2048))) == (431, "http.max_header_bytes")


def test_incomplete_head_over_the_limit_is_431() -> None:
    event = _feed(b"GET / HTTP/1.1\r\nx-big: " + b"a" * 5000, Limits(max_header_bytes=2048))
    assert _refusal(event)[0] == 431


def test_long_target_is_414() -> None:
    event = _feed(b"GET /" + b"a" * 300 + b" HTTP/1.1\r\nHost: x\r\n\r\n", Limits(max_target_bytes=100))
    assert _refusal(event) == (414, "http.max_target_bytes")


def test_partial_head_needs_data_then_bodyless_request_ends() -> None:
    conn = ServerConnection(Limits(), "fs")
    conn.receive_data(b"GET / HTTP/1.1\r\nHo")
    assert isinstance(conn.next_event(), NeedData)
    conn.receive_data(b"st: x\r\n\r\n")
    assert isinstance(conn.next_event(), Head)
    assert isinstance(conn.next_event(), BodyEnd)


@given(st.binary(max_size=4096), st.integers(min_value=1, max_value=64))
@settings(max_examples=300, deadline=None)
def test_any_bytes_give_events_never_an_exception(data: bytes, piece: int) -> None:
    conn = ServerConnection(Limits(max_header_bytes=1024), "fs")
    for start in range(0, len(data), piece):
        conn.receive_data(data[start:start + piece])
        event = conn.next_event()
        if isinstance(event, Malformed):
            assert event.response.status in (400, 414, 431) and event.response.close
            return
        while isinstance(event, Head | BodyEnd):
            event = conn.next_event()
