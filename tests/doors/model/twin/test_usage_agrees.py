"""What the twin reports is what the door's usage reader (doors.model._usage) reads: every split of the bytes,
streamed or not, whole or cut or ended by an error event."""

from __future__ import annotations

import json
from typing import Any

import pytest

from doors.model._usage import Usage, UsageReader
from doors.model.twin import Twin, TwinScript

VERSION = ((b"anthropic-version", b"2023-06-01"),)
SYSTEM = [{"type": "text", "text": "s" * 400, "cache_control": {"type": "ephemeral", "ttl": "1h"}},
          {"type": "text", "text": "t" * 80, "cache_control": {"type": "ephemeral"}}]


def _answer(twin: Twin, text: str, *, stream: bool, **fields: Any) -> Any:
    body = {"model": "m", "max_tokens": 1000, "stream": stream, "system": SYSTEM,
            "messages": [{"role": "user", "content": text}], **fields}
    return twin.answer(b"POST", b"/v1/messages", VERSION, json.dumps(body).encode())


def _read(pieces: tuple[bytes, ...], *, stream: bool, split: int) -> Any:
    reader = UsageReader(stream=stream)
    data = b"".join(pieces)
    for start in range(0, len(data), split):
        reader.feed(data[start:start + split])
    return reader.finish()


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("split", [1, 7, 1 << 20])
@pytest.mark.parametrize("delta_usage", ["full", "output"])
def test_the_reader_reads_the_twins_usage(stream: bool, split: int, delta_usage: str) -> None:
    twin = Twin(TwinScript.parse({"twin": "twin-script/v0", "message_delta_usage": delta_usage}))
    _answer(twin, "warm the cache", stream=stream)
    answer = _answer(twin, "[twin:tokens=37] again", stream=stream)
    report = _read(answer.pieces, stream=stream, split=split)
    assert report.complete and report.error_type is None
    assert report.usage == Usage(input_tokens=6, cache_creation_5m=0, cache_creation_1h=0, cache_read=120,
                                 output_tokens=37)


def test_first_call_writes_both_ttls() -> None:
    report = _read(_answer(Twin(), "hello", stream=True).pieces, stream=True, split=3)
    assert report.usage == Usage(input_tokens=2, cache_creation_5m=20, cache_creation_1h=100, cache_read=0,
                                 output_tokens=3)


@pytest.mark.parametrize(("marker", "complete", "error_type"), [
    ("[twin:cut=6]", False, None),
    ("[twin:error=6]", False, "overloaded_error"),
])
def test_a_cut_or_errored_stream_is_not_complete(marker: str, complete: bool, error_type: str | None) -> None:
    report = _read(_answer(Twin(), "hello " + marker, stream=True).pieces, stream=True, split=5)
    assert (report.complete, report.error_type) == (complete, error_type)


def test_a_cut_json_reply_is_not_complete() -> None:
    assert not _read(_answer(Twin(), "[twin:cut=1]", stream=False).pieces, stream=False, split=9).complete
