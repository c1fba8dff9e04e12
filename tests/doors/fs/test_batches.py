"""A body gathered into batches: every byte reaches the sink once, in order, whatever the pieces; a key stops it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from doors.fs._batches import BatchKeeper
from doors.fs._secrets import SecretScanner

KEY = b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n"


def _pieces(content: bytes, sizes: list[int]) -> list[bytes]:
    pieces, offset, index = [], 0, 0
    while offset < len(content):
        size = sizes[index % len(sizes)]
        pieces.append(content[offset:offset + size])
        offset, index = offset + size, index + 1
    return pieces


@given(st.binary(max_size=2000), st.lists(st.integers(1, 300), min_size=1, max_size=20), st.integers(1, 700))
def test_every_byte_reaches_the_sink_once_in_order(content: bytes, sizes: list[int], batch: int) -> None:
    kept: list[bytes] = []
    keeper = BatchKeeper(SecretScanner(), lambda data: kept.append(bytes(data)), batch)
    for piece in _pieces(content, sizes):
        assert not keeper.add(piece)
    assert not keeper.finish()
    assert b"".join(kept) == content
    assert all(len(data) == batch for data in kept[:-1])  # one write per full batch
    assert keeper.tail == content[-15:]


@given(st.binary(max_size=600), st.binary(max_size=600), st.lists(st.integers(1, 90), min_size=1, max_size=9),
       st.integers(1, 400))
def test_a_key_in_any_batch_is_found_and_its_batch_never_kept(before: bytes, after: bytes, sizes: list[int],
                                                              batch: int) -> None:
    content = before + KEY + after
    kept: list[bytes] = []
    keeper = BatchKeeper(SecretScanner(), lambda data: kept.append(bytes(data)), batch)
    stopped = any(keeper.add(piece) for piece in _pieces(content, sizes))
    assert keeper.finish()
    assert stopped or keeper.found
    assert KEY not in b"".join(kept)  # the batch holding its end, and everything after, is dropped
    assert len(b"".join(kept)) < len(before) + len(KEY)


def test_without_a_scanner_everything_is_kept() -> None:
    kept: list[bytes] = []
    keeper = BatchKeeper(None, lambda data: kept.append(bytes(data)), 4)
    assert not keeper.add(KEY) and not keeper.finish()
    assert b"".join(kept) == KEY
