"""The app's blocking client sends a large body SEND_PIECE at a time (the door starts on the first piece while
the rest is encrypted); the bytes arrive whole both ways."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from doors._http import Limits
from doors._transport import _pyossl_socket
from doors._transport._pyossl_socket import SEND_PIECE, BlockingTls
from doors._transport.testing import Session, doors_in_thread, scratch_dir
from doors.client import DoorClient
from pki.testing import SessionPKI


@pytest.fixture
def s() -> Iterator[Session]:
    with scratch_dir() as directory:
        yield Session(SessionPKI.create(), directory)


def test_a_large_body_goes_out_in_pieces_and_comes_back_whole(s: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    flushes: list[int] = []
    real_flush = BlockingTls._flush

    def counting_flush(self: BlockingTls) -> None:
        flushes.append(1)
        real_flush(self)

    monkeypatch.setattr(_pyossl_socket.BlockingTls, "_flush", counting_flush)
    body = os.urandom(3 * SEND_PIECE + 5)
    bundle = s.pem_path("bundle", s.pki.bundle_pem())
    with doors_in_thread(s, {"fs": "fs"}, limits=Limits(max_body_bytes=4 * SEND_PIECE)) as doors, \
            DoorClient.from_files("fs", doors["fs"], s.svid_path("app"), bundle, s.pki.trust_domain,
                                  s.pki.session_id) as client:
        flushes.clear()
        assert client.request("POST", "/v0/echo", body=body).body == body
    assert len(flushes) >= 4, flushes  # one per piece of the request, not one for the whole
