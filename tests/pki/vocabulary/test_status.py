"""pki/vocabulary/status.py: the status fd's codec, shared by the door's sender and the launcher's reader."""

from __future__ import annotations

import json

import pytest

from pki.vocabulary import (
    AUDIT,
    FATAL,
    MAX_FATAL_DETAIL_CHARS,
    MAX_STATUS_BYTES,
    READY,
    audit_message,
    decode_status,
    encode_status,
    fatal_message,
    ready_message,
)


@pytest.mark.parametrize("message", [
    ready_message(),
    audit_message({"kind": "http.request", "path": "/v0/hello", "status": 200}),
    fatal_message("the fs door failed: OSError: boom"),
])
def test_each_message_round_trips_compactly(message: dict[str, object]) -> None:
    data = encode_status(message)
    assert decode_status(data) == message
    assert data == json.dumps(message, separators=(",", ":")).encode()


def test_the_builders_name_the_types() -> None:
    assert ready_message()["type"] == READY
    assert audit_message({})["type"] == AUDIT
    assert fatal_message("x")["type"] == FATAL


def test_a_fatal_detail_is_cut() -> None:
    assert len(fatal_message("x" * (MAX_FATAL_DETAIL_CHARS + 10))["detail"]) == MAX_FATAL_DETAIL_CHARS


@pytest.mark.parametrize("size", [MAX_STATUS_BYTES, MAX_STATUS_BYTES + 1, 10 * MAX_STATUS_BYTES])
def test_an_oversized_audit_event_becomes_a_marker_within_the_limit(size: int) -> None:
    message = audit_message({"kind": "http.request", "path": "x" * size})
    data = encode_status(message)
    assert len(data) <= MAX_STATUS_BYTES
    decoded = decode_status(data)
    assert decoded is not None and decoded["type"] == AUDIT
    assert decoded["event"] == {"kind": "http.request", "truncated": True, "bytes": len(json.dumps(
        message, separators=(",", ":")).encode())}


def test_a_message_that_fits_is_unchanged() -> None:
    event = {"kind": "k", "path": "x" * (MAX_STATUS_BYTES - 100)}
    assert decode_status(encode_status(audit_message(event))) == audit_message(event)


@pytest.mark.parametrize("data", [b"", b"not json", b"[1, 2]", b'"ready"', b"42", b"null", b"\xff\xfe", b'{"a": 1',
                                  b"[" * MAX_STATUS_BYTES, b'{"a":' * 20000 + b"1" + b"}" * 20000])
def test_anything_but_one_json_object_decodes_to_none(data: bytes) -> None:
    assert decode_status(data) is None
