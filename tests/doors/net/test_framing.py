"""Framing: every smuggling shape is a 400 before any byte goes upstream; hop-by-hop fields go."""

from __future__ import annotations

import h11
import pytest
from hypothesis import given
from hypothesis import strategies as st

from doors.net._framing import (
    FramingError,
    check_head,
    find_head_end,
    parse_absolute_target,
    start_request,
    strip_hop_by_hop,
    upstream_request,
)
from doors.net._host import Host

GOOD = b"GET http://a.example/x HTTP/1.1\r\nHost: a.example\r\nAccept: */*\r\n\r\n"


def reason(head: bytes) -> str | None:
    result = start_request(head)
    return result.reason if isinstance(result, FramingError) else None


def test_good_head_parses() -> None:
    result = start_request(GOOD)
    assert not isinstance(result, FramingError) and result is not None
    _, request = result
    assert request.method == b"GET" and request.target == b"http://a.example/x"


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", "cl-and-te"),
        (b"POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", "cl-and-te"),
        (b"POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
         "duplicate-content-length"),
        (b"POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
         "duplicate-content-length"),
        (b"POST http://a/ HTTP/1.1\r\nHost: a\r\ncontent-length: 5\r\nCONTENT-LENGTH: 5\r\n\r\n",
         "duplicate-content-length"),
        (b"POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
         "duplicate-transfer-encoding"),
        (b"POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "bad-transfer-encoding"),
        (b"POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n", "bad-transfer-encoding"),
        (b"GET http://a/ HTTP/1.1\nHost: a\n\n", "bare-lf"),
        (b"GET http://a/ HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", "bare-lf"),
        (b"GET http://a/ HTTP/1.1\r\nHost: a\rX: y\r\n\r\n", "bare-lf"),
        (b"GET http://a/ HTTP/1.1\r\nHost: a\r\nX: y\n\r\n", "bare-lf"),
        (b"GET http://a/ HTTP/1.1\r\nHost: a\r\nX: y\r\n z\r\n\r\n", "obs-fold"),
        (b"GET http://a/ HTTP/1.1\r\nHost: a\r\nX: y\r\n\tz\r\n\r\n", "obs-fold"),
        (b"GET http://a/ HTTP/1.1\r\nHost: a\r\nX: y\x00z\r\n\r\n", "control-char"),
        (b"GET http://a/ HTTP/1.1\r\nHost: a\r\nX: y\x1bz\r\n\r\n", "control-char"),
        (b"GET http://a/ HTTP/1.1\r\nHost: a\r\nX: y\x7fz\r\n\r\n", "control-char"),
        (b"GET http://a/\x01 HTTP/1.1\r\nHost: a\r\n\r\n", "control-char"),
        (b"GET\thttp://a/ HTTP/1.1\r\nHost: a\r\n\r\n", "control-char"),
        (b"GET http://a/ HTTP/1.1\r\nHost : a\r\n\r\n", "bad-field"),
        (b"GET http://a/ HTTP/1.1\r\nHost: a\r\nno colon here\r\n\r\n", "bad-field"),
        (b"GET http://a/ HTTP/1.1\r\n\r\n", "bad-request"),  # h11: HTTP/1.1 without Host
        (b"GET http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", "bad-content-length"),
        (b"GET http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 1,1\r\n\r\n", "bad-content-length"),
        (b"GET http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\n", "bad-content-length"),
        (b"GET  http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", "bad-request"),
        (b"\x16\x03\x01\x00\x05hello\r\n\r\n", "control-char"),  # TLS bytes on a plain-HTTP request
    ],
)
def test_ambiguous_heads_refused(head: bytes, expected: str) -> None:
    assert reason(head) == expected


def test_tab_in_field_value_is_fine() -> None:
    assert check_head(b"GET http://a/ HTTP/1.1\r\nHost: a\r\nX: a\tb\r\n\r\n") is None


def test_head_incomplete_and_too_large() -> None:
    assert start_request(GOOD[:-2]) is None
    assert reason(b"GET http://a/ HTTP/1.1\r\nX: " + b"a" * 40000) == "head-too-large"
    assert reason(b"GET http://a/ HTTP/1.1\r\nX: " + b"a" * 40000 + b"\r\n\r\n") == "head-too-large"
    assert find_head_end(b"a\n\nb") == 3


@pytest.mark.parametrize(
    "body",
    [
        b"zz\r\nhello\r\n0\r\n\r\n",  # size not hex
        b"5\nhello\r\n0\r\n\r\n",  # bare LF after size
        b"5\r\nhelloXX0\r\n\r\n",  # data longer than declared
        b"-5\r\nhello\r\n0\r\n\r\n",
        b"0x5\r\nhello\r\n0\r\n\r\n",
        b"5\r\nhello\r\n0\r\nbad trailer\r\n\r\n",
        b"fffffffffffffffffffff\r\n",  # more hex digits than h11 reads
    ],
)
def test_bad_chunking_is_a_protocol_error(body: bytes) -> None:
    # h11 holds bad chunking; the proxy answers its RemoteProtocolError with 400 (tests/doors/net/test_proxy_http).
    result = start_request(b"POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
    assert not isinstance(result, FramingError) and result is not None
    conn, _ = result
    with pytest.raises(h11.RemoteProtocolError):
        for _ in range(10):
            if conn.next_event() is h11.NEED_DATA:
                conn.receive_data(b"")


@pytest.mark.parametrize(
    ("target", "authority", "path"),
    [
        (b"http://a.example/x?y=1", "a.example", b"/x?y=1"),
        (b"HTTP://a.example:8080", "a.example:8080", b"/"),
        (b"http://a.example?q", "a.example", b"/?q"),
        (b"http://[2001:db8::1]:80/p", "[2001:db8::1]:80", b"/p"),
        (b"http://u@evil.example/", "u@evil.example", b"/"),  # the authority parser refuses userinfo
        ("http://bücher.example/".encode(), "bücher.example", b"/"),  # _host turns it into A-labels
    ],
)
def test_absolute_targets(target: bytes, authority: str, path: bytes) -> None:
    assert parse_absolute_target(target) == (authority, path)


@pytest.mark.parametrize("target", [b"/x", b"https://a.example/", b"a.example:443", b"http:///x", b"http://a/#f",
                                    b"ftp://a/", b"http://\xff/"])
def test_non_absolute_targets(target: bytes) -> None:
    with pytest.raises(ValueError):
        parse_absolute_target(target)


def test_hop_by_hop_stripped() -> None:
    headers = [(b"Connection", b"keep-alive, X-Secret-Hop"), (b"Keep-Alive", b"5"), (b"Proxy-Authorization", b"x"),
               (b"Proxy-Connection", b"keep-alive"), (b"TE", b"trailers"), (b"Trailer", b"x"), (b"Upgrade", b"h2c"),
               (b"X-Secret-Hop", b"1"), (b"Accept", b"*/*")]
    assert strip_hop_by_hop(headers) == [(b"accept", b"*/*")]


def test_upstream_request_rewrites_host() -> None:
    request = h11.Request(method="POST", target=b"http://a.example:8080/p",
                          headers=[(b"Host", b"evil.example"), (b"Transfer-Encoding", b"chunked"),
                                   (b"Proxy-Authorization", b"Basic x"), (b"Accept", b"*/*")])
    out = upstream_request(request, Host("a.example"), 8080, b"/p")
    assert out.target == b"/p"
    assert list(out.headers) == [(b"host", b"a.example:8080"), (b"accept", b"*/*"),
                                 (b"transfer-encoding", b"chunked"), (b"connection", b"close")]
    plain = h11.Request(method="GET", target=b"/", headers=[(b"host", b"x")])
    default = upstream_request(plain, Host("a.example"), 80, b"/")
    assert (b"host", b"a.example") in list(default.headers)


_FIELDS = st.sampled_from([b"Host: a", b"Content-Length: 5", b"content-length: 5", b"Transfer-Encoding: chunked",
                           b"Transfer-Encoding: gzip", b"X: a\tb", b"X: \x00", b" folded", b"X:y", b"Content-Length:5"])


@given(st.lists(_FIELDS, max_size=6), st.sampled_from([b"\r\n", b"\n"]))
def test_accepted_heads_have_one_unambiguous_framing(fields: list[bytes], eol: bytes) -> None:
    head = b"POST http://a/ HTTP/1.1" + eol + eol.join(fields) + (eol if fields else b"") + eol
    result = start_request(head)
    if result is None or isinstance(result, FramingError):
        return
    _, request = result
    names = [name for name, _ in request.headers]
    framing = [n for n in names if n in (b"content-length", b"transfer-encoding")]
    assert len(framing) <= 1 and eol == b"\r\n"


@given(st.binary(max_size=300))
def test_random_bytes_never_raise(data: bytes) -> None:
    result = start_request(data)
    assert result is None or isinstance(result, FramingError | tuple)
