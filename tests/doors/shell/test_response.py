"""The `sh` client's HTTP/1.1 response reader: every split of the bytes gives the same head and body."""

from __future__ import annotations

import pytest

from doors.shell._response import ResponseError, ResponseReader

CHUNKED = (b"HTTP/1.1 200 \r\ncontent-type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"5\r\nhello\r\n1;ext=1\r\n\n\r\n0\r\n\r\n")
LENGTH = b"HTTP/1.1 403 Forbidden\r\ncontent-length: 7\r\n\r\n{\"a\":1}"
CLOSE = b"HTTP/1.1 200 OK\r\n\r\nuntil the end"


def _read(data: bytes, splits: list[int]) -> tuple[ResponseReader, bytes]:
    reader, body, start = ResponseReader(), b"", 0
    for end in [*splits, len(data)]:
        if end > start:  # b"" is the end of the stream
            body += b"".join(reader.feed(data[start:end]))
        start = end
    body += b"".join(reader.feed(b""))
    return reader, body


@pytest.mark.parametrize(("data", "status", "body"), [
    (CHUNKED, 200, b"hello\n"), (LENGTH, 403, b'{"a":1}'), (CLOSE, 200, b"until the end"),
    (b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n", 204, b""),
])
def test_every_split_of_a_response_reads_the_same(data: bytes, status: int, body: bytes) -> None:
    for cut in range(len(data) + 1):
        reader, got = _read(data, [cut])
        assert (reader.status, got, reader.done) == (status, body, True), cut
    reader, got = _read(data, list(range(1, len(data))))  # one byte at a time
    assert (reader.status, got) == (status, body)


def test_header_names_are_lowercased() -> None:
    reader, _ = _read(CHUNKED, [])
    assert reader.headers["transfer-encoding"] == "chunked"


@pytest.mark.parametrize(("data", "why"), [
    (b"HTTP/1.0 200 OK\r\n\r\n", "HTTP/1.1"),
    (b"HTTP/1.1 100 Continue\r\n\r\n", "final response"),
    (b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "colon"),
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n", "gzip"),
    (b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n", "content-length"),
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\nab\r\n", "longer than its size"),
])
def test_what_it_does_not_take_is_an_error(data: bytes, why: str) -> None:
    with pytest.raises(ResponseError, match=why):
        ResponseReader().feed(data)


def test_a_stream_cut_short_is_an_error() -> None:
    reader = ResponseReader()
    reader.feed(CHUNKED[:-5])
    with pytest.raises(ResponseError, match="ended"):
        reader.feed(b"")


def test_a_head_without_end_is_bounded() -> None:
    with pytest.raises(ResponseError, match="longer than"):
        ResponseReader().feed(b"HTTP/1.1 200 OK\r\n" + b"x" * 70_000)
