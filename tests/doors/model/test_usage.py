"""UsageReader: the usage and the end of a response, however its bytes are split, and bounded on hostile input."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

from doors.model._usage import Usage, UsageError, UsageReader, UsageReport, usage_from

START_USAGE = {"input_tokens": 25, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 7,
               "cache_creation": {"ephemeral_5m_input_tokens": 10, "ephemeral_1h_input_tokens": 20},
               "output_tokens": 1}
FINAL = Usage(input_tokens=25, cache_creation_5m=10, cache_creation_1h=20, cache_read=7, output_tokens=12)


def event(name: str | None, data: dict[str, Any], eol: bytes = b"\n") -> bytes:
    lines = ([b"event: " + name.encode()] if name else []) + [b"data: " + json.dumps(data).encode()]
    return eol.join(lines) + eol + eol


def stream(eol: bytes = b"\n", deltas: int = 3, stop: bool = True, delta_usage: dict[str, Any] | None = None) -> bytes:
    parts = [event("message_start", {"type": "message_start", "message": {
                 "id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": START_USAGE}}, eol),
             event("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}}, eol),
             event("ping", {"type": "ping"}, eol)]
    parts += [event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                            "delta": {"type": "text_delta", "text": f"word{i} "}}, eol)
              for i in range(deltas)]
    parts += [event("content_block_stop", {"type": "content_block_stop", "index": 0}, eol),
              event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                      "usage": delta_usage or {"output_tokens": 12}}, eol)]
    if stop:
        parts.append(event("message_stop", {"type": "message_stop"}, eol))
    return b"".join(parts)


def read(chunks: list[bytes], *, stream_mode: bool = True, **limits: int) -> UsageReport:
    reader = UsageReader(stream=stream_mode, **limits)
    for chunk in chunks:
        reader.feed(chunk)
    return reader.finish()


def test_a_whole_stream() -> None:
    report = read([stream()])
    assert report == UsageReport(FINAL, complete=True, events=9)


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
def test_split_at_every_byte_boundary(eol: bytes) -> None:
    # The unparsed garbage event notices a CRLF taken for two line ends: its name lost, its data parsed.
    body = eol.join([b"event: content_block_delta", b"data: {garbage", b""]) + eol + stream(eol)
    expected = read([body])
    assert expected.complete and expected.usage == FINAL
    for cut in range(len(body) + 1):
        assert read([body[:cut], body[cut:]]) == expected, f"split at byte {cut}"


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
def test_one_byte_at_a_time(eol: bytes) -> None:
    body = stream(eol)
    assert read([body[i:i + 1] for i in range(len(body))]) == read([body])


def test_ten_thousand_tiny_chunks() -> None:
    body = stream(deltas=2000)
    size = len(body) // 10_000
    chunks = [body[i:i + size] for i in range(0, len(body), size)]
    assert len(chunks) >= 10_000
    report = read(chunks)
    assert report.complete and report.usage == FINAL and report.events == 2006


def test_a_stream_cut_before_its_end_is_incomplete_with_what_it_had() -> None:
    body = stream(stop=False)
    report = read([body[: body.index(b"event: message_delta")]])
    assert not report.complete
    assert report.usage == Usage(25, 10, 20, 7, 1)  # message_start's small output count


def test_message_stop_without_its_blank_line_is_not_an_end() -> None:
    body = stream()
    assert not read([body[:-1]]).complete
    assert read([body]).complete


def test_an_error_event_ends_incomplete_with_its_type() -> None:
    body = stream(stop=False) + event("error", {"type": "error", "error": {"type": "overloaded_error",
                                                                            "message": "Overloaded"}})
    report = read([body])
    assert not report.complete
    assert report.error_type == "overloaded_error"


def test_comments_no_space_and_data_only_events() -> None:
    body = (b": a comment\n"
            b"data:" + json.dumps({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}).encode()
            + b"\n\n"
            b"event:message_delta\ndata: " + json.dumps({"type": "message_delta",
                                                           "usage": {"output_tokens": 4}}).encode() + b"\n\n"
            b"data: {\"type\": \"message_stop\"}\n\n")
    report = read([body])
    assert report.complete
    assert report.usage == Usage(input_tokens=3, output_tokens=4)


def test_data_split_over_several_lines_is_joined() -> None:
    body = b'event: message_delta\ndata: {"type": "message_delta",\ndata:  "usage": {"output_tokens": 9}}\n\n'
    assert read([body]).usage.output_tokens == 9


def test_message_delta_overwrites_only_what_it_carries() -> None:
    body = stream(delta_usage={"output_tokens": 50, "input_tokens": 40, "cache_read_input_tokens": None})
    usage = read([body]).usage
    assert usage == Usage(input_tokens=40, cache_creation_5m=10, cache_creation_1h=20, cache_read=7, output_tokens=50)


@pytest.mark.parametrize(("fields", "usage"), [
    ({"input_tokens": 5, "output_tokens": 6}, Usage(input_tokens=5, output_tokens=6)),
    # no split: the whole cache write at the 1h rate (the dearest), never under-charged
    ({"cache_creation_input_tokens": 100}, Usage(cache_creation_1h=100)),
    ({"cache_creation_input_tokens": 100, "cache_creation": {"ephemeral_5m_input_tokens": 100}},
     Usage(cache_creation_5m=100)),
    ({"cache_creation_input_tokens": 100, "cache_creation": {"ephemeral_5m_input_tokens": 60,
                                                             "ephemeral_1h_input_tokens": 40}},
     Usage(cache_creation_5m=60, cache_creation_1h=40)),
    # a split that accounts for less than the total: the rest at 1h
    ({"cache_creation_input_tokens": 100, "cache_creation": {"ephemeral_5m_input_tokens": 30}},
     Usage(cache_creation_5m=30, cache_creation_1h=70)),
    # a split with no total (or a total below it): the split is what was written
    ({"cache_creation": {"ephemeral_5m_input_tokens": 8, "ephemeral_1h_input_tokens": 2}},
     Usage(cache_creation_5m=8, cache_creation_1h=2)),
    ({"cache_read_input_tokens": 7, "cache_creation_input_tokens": None, "cache_creation": None},
     Usage(cache_read=7)),
    ({"input_tokens": 10, "output_tokens": 5, "iterations": [
        {"type": "compaction", "input_tokens": 1000, "output_tokens": 200, "cache_read_input_tokens": 3},
        {"type": "message", "input_tokens": 10, "output_tokens": 5}]},
     Usage(input_tokens=1010, cache_read=3, output_tokens=205)),
    ({"output_tokens": 5, "server_tool_use": {"web_search_requests": 3, "web_fetch_requests": 1}},
     Usage(output_tokens=5, web_search_requests=3)),
    ({"server_tool_use": None}, Usage()),
])
def test_usage_fields(fields: dict[str, Any], usage: Usage) -> None:
    assert usage_from(fields) == usage


@pytest.mark.parametrize("bad", ["12", -1, True, 1.5, [], {"n": 1}])
def test_a_count_that_is_not_a_count_is_refused(bad: object) -> None:
    with pytest.raises(UsageError, match="output_tokens"):
        usage_from({"output_tokens": bad})


def test_a_bad_count_in_a_stream_is_a_problem_not_a_charge() -> None:
    report = read([stream(delta_usage={"output_tokens": "lots"})])
    assert not report.complete
    assert report.problem is not None and "output_tokens" in report.problem


def test_a_bad_search_count_is_refused() -> None:
    with pytest.raises(UsageError, match="web_search_requests"):
        usage_from({"server_tool_use": {"web_search_requests": -2}})


def test_bad_iterations_are_refused() -> None:
    with pytest.raises(UsageError, match="iterations"):
        usage_from({"iterations": {"type": "compaction"}})


def test_event_data_that_is_not_json_is_an_error() -> None:
    reader = UsageReader(stream=True)
    with pytest.raises(UsageError, match="message_delta"):
        reader.feed(b"event: message_delta\ndata: {not json\n\n")
    with pytest.raises(UsageError):
        reader.feed(b"more")  # and stays failed
    report = reader.finish()
    assert not report.complete and report.problem


def test_event_data_that_is_not_an_object_is_an_error() -> None:
    with pytest.raises(UsageError, match="not a JSON object"):
        read([b"event: message_start\ndata: [1, 2]\n\n"])


def test_content_events_are_not_parsed() -> None:
    # a content delta is counted, not parsed: garbage there is the client's business, not the bill's
    report = read([b"event: content_block_delta\ndata: {garbage\n\n" + stream()])
    assert report.complete and report.events == 10


def test_no_newline_ever_is_refused_with_bounded_memory() -> None:
    limit = 64 << 10
    reader = UsageReader(stream=True, max_event_bytes=limit)
    piece = b"x" * 4096
    tracemalloc.start()
    fed = 0
    try:
        with pytest.raises(UsageError, match="SSE line of more than"):
            for _ in range(10_000):  # 40 MiB if nothing stopped it
                reader.feed(piece)
                fed += len(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert fed <= limit
    assert peak < 4 * limit
    assert not reader.finish().complete


def test_a_huge_event_is_refused_even_when_not_parsed() -> None:
    limit = 64 << 10
    line = b"data: " + b"y" * 1000 + b"\n"
    body = b"event: content_block_delta\n" + line * 100
    with pytest.raises(UsageError, match="SSE event of more than"):
        read([body], max_event_bytes=limit)


def test_a_huge_single_line_inside_one_chunk_is_refused() -> None:
    with pytest.raises(UsageError, match="SSE line"):
        read([b"data: " + b"z" * 5000 + b"\n\n"], max_event_bytes=1000)


MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "hi"}],
           "stop_reason": "end_turn", "usage": {**START_USAGE, "output_tokens": 12}}


def test_json_message() -> None:
    body = json.dumps(MESSAGE).encode()
    expected = UsageReport(FINAL, complete=True)
    for cut in range(len(body) + 1):
        assert read([body[:cut], body[cut:]], stream_mode=False) == expected


def test_json_error_body() -> None:
    body = json.dumps({"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}).encode()
    assert read([body], stream_mode=False) == UsageReport(Usage(), complete=False, error_type="rate_limit_error")


@pytest.mark.parametrize("body", [json.dumps(MESSAGE).encode()[:-1], b"", b"[]", b"{\"type\": \"other\"}"])
def test_json_cut_or_not_a_message_is_incomplete(body: bytes) -> None:
    report = read([body], stream_mode=False)
    assert not report.complete and report.usage == Usage()


def test_json_body_over_its_cap_is_refused() -> None:
    reader = UsageReader(stream=False, max_json_bytes=100)
    reader.feed(b"x" * 100)
    with pytest.raises(UsageError, match="over 100 bytes"):
        reader.feed(b"x")


def test_json_bad_usage_is_a_problem() -> None:
    body = json.dumps({**MESSAGE, "usage": "many"}).encode()
    report = read([body], stream_mode=False)
    assert not report.complete and report.problem == "an event's usage is not an object"
