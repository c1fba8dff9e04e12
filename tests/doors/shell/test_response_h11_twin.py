"""The `sh` client's response reader against h11, on what h11 itself frames as the door does.

doors/shell/_response.py reads the door's answers without h11 (its imports would be paid on every `sh`;
docs/decisions/shell.md, "The `sh` client reads the door's responses without h11"). This test is what holds
that subset to the standard: responses serialized by h11 in the server role (the door's framing: chunked
streams of frames, Content-Length refusals, any status, extra headers),
cut at random points, must give the reader exactly what h11 in the client role gives: status, headers, body,
and the end of the message.
"""

from __future__ import annotations

import h11
from hypothesis import given, settings
from hypothesis import strategies as st

from doors.shell._response import ResponseReader

HEADER_NAMES = st.sampled_from(["content-type", "x-sharness-command", "cache-control", "x-a", "Server"])
HEADER_VALUES = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=0, max_size=40)
# Pieces as the door sends them: small frames and data frames up to past a 64 KiB read.
PIECES = st.one_of(st.binary(max_size=64), st.builds(lambda size, unit: (unit * (size // len(unit) + 1))[:size],
                                                     st.integers(0, 70_000), st.binary(min_size=1, max_size=16)))


@st.composite
def responses(draw: st.DrawFn) -> tuple[bytes, int, dict[str, str], bytes]:
    """h11-framed response bytes, and the status, headers (names lowercased, last one wins) and body sent."""
    status = draw(st.sampled_from([200, 201, 400, 403, 404, 409, 413, 422, 429, 500, 502, 503]))
    headers = draw(st.dictionaries(HEADER_NAMES.map(str.lower), HEADER_VALUES.map(str.strip), max_size=4))
    pieces = draw(st.lists(PIECES, max_size=8))
    body = b"".join(pieces)
    chunked = draw(st.booleans())
    shout = draw(st.booleans())  # names as the door may send them; both readers lowercase them
    sent = [((name.title() if shout else name).encode(), value.encode()) for name, value in headers.items()]
    sent.append((b"transfer-encoding", b"chunked") if chunked else (b"content-length", str(len(body)).encode()))
    server = h11.Connection(h11.SERVER)
    server.receive_data(b"POST /v0/shell/run HTTP/1.1\r\nhost: shell\r\ncontent-length: 0\r\n\r\n")
    assert isinstance(server.next_event(), h11.Request)
    assert isinstance(server.next_event(), h11.EndOfMessage)
    wire = server.send(h11.Response(status_code=status, headers=sent)) or b""
    for piece in pieces if chunked else [body]:
        wire += server.send(h11.Data(data=piece)) or b""
    wire += server.send(h11.EndOfMessage()) or b""
    expected = {name: value for name, value in headers.items()}
    expected["transfer-encoding" if chunked else "content-length"] = "chunked" if chunked else str(len(body))
    return wire, status, expected, body


def _h11_reads(wire: bytes) -> tuple[int, dict[str, str], bytes, bool]:
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="POST", target="/v0/shell/run", headers=[("host", "shell"),
                                                                            ("content-length", "0")]))
    client.send(h11.EndOfMessage())
    client.receive_data(wire)
    status, headers, body, done = 0, {}, b"", False
    while (event := client.next_event()) is not h11.NEED_DATA:
        if isinstance(event, h11.Response):
            status = event.status_code
            headers = {name.decode(): value.decode() for name, value in event.headers}
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            done = True
            break
    return status, headers, body, done


def _reader_reads(wire: bytes, cuts: list[int]) -> tuple[int, dict[str, str], bytes, bool]:
    reader, body, start = ResponseReader(), b"", 0
    for end in sorted({*cuts, len(wire)}):
        if end > start:
            body += b"".join(reader.feed(wire[start:end]))
        start = end
    return reader.status or 0, reader.headers, body, reader.done


@settings(max_examples=400, deadline=None)
@given(responses(), st.lists(st.floats(min_value=0, max_value=1), max_size=12))
def test_the_reader_reads_what_h11_reads(response: tuple[bytes, int, dict[str, str], bytes],
                                         fractions: list[float]) -> None:
    wire, status, headers, body = response
    cuts = [int(fraction * len(wire)) for fraction in fractions]
    assert _h11_reads(wire) == (status, headers, body, True)
    assert _reader_reads(wire, cuts) == (status, headers, body, True)


@settings(max_examples=200, deadline=None)
@given(responses(), st.integers(min_value=0, max_value=1 << 20))
def test_a_response_cut_short_is_never_done(response: tuple[bytes, int, dict[str, str], bytes], cut: int) -> None:
    """Any strict prefix of a framed response leaves the reader not done, as it leaves h11 (the client then
    reports the stream cut: doors/shell/_stdlib_client.py)."""
    wire = response[0]
    prefix = wire[:1 + cut % (len(wire) - 1)]  # not empty: b"" is the end of the stream to both
    assert not _h11_reads(prefix)[3]
    assert not _reader_reads(prefix, [])[3]
