"""The streaming private-key detector: every format, split at every byte, and across two appends."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doors.fs._secrets import CARRY, FIND_WINDOW, MEMMEM_FROM, SecretScanner, scan

MARKERS = [
    (b"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n", "PEM private key"),
    (b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n", "PEM private key"),
    (b"-----BEGIN DSA PRIVATE KEY-----\nMIIBuwIBAAKBgQ\n", "PEM private key"),
    (b"-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMG\n", "PEM private key"),
    (b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkq\n", "PEM private key"),
    (b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n", "PEM private key"),
    (b"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF\n", "PEM private key"),
    (b"---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: x\n", "PEM private key"),
    (b"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n", "PuTTY private key"),
    (b"PuTTY-User-Key-File-2: ssh-rsa\n", "PuTTY private key"),
    (b"key = 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ'", "OpenSSH private key"),
]
HARMLESS = [
    b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    b"-----BEGIN PUBLIC KEY-----\nMFkwEwYH\n",
    b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI user@host\n",
    b"the words private key in prose, and BEGIN too\n",
    b"-----END RSA PRIVATE KEY-----\n",
    b"PuTTY-User-Key-File-: no version\n",
]


@pytest.mark.parametrize(("content", "kind"), MARKERS)
def test_every_format_found(content: bytes, kind: str) -> None:
    finding = scan(b"some text before\n" + content)
    assert finding is not None and finding.kind == kind


@pytest.mark.parametrize("content", HARMLESS)
def test_harmless_content_passes(content: bytes) -> None:
    assert scan(content) is None


@pytest.mark.parametrize(("content", "kind"), MARKERS)
def test_split_across_two_chunks_at_every_byte(content: bytes, kind: str) -> None:
    for cut in range(len(content) + 1):
        scanner = SecretScanner()
        scanner.feed(content[:cut])
        assert scanner.feed(content[cut:]) is not None or scanner.finding is not None, cut


@pytest.mark.parametrize(("content", "kind"), MARKERS)
def test_fed_one_byte_at_a_time(content: bytes, kind: str) -> None:
    scanner = SecretScanner()
    for byte in content:
        scanner.feed(bytes([byte]))
    assert scanner.finding is not None and scanner.finding.kind == kind


def test_split_across_two_appends_via_history() -> None:
    key = b"-----BEGIN OPENSSH PRIVATE KEY-----"
    marker_end = len(b"-----BEGIN OPENSSH PRIVATE KEY")
    for cut in range(1, marker_end):
        stored = b"x" * 1000 + key[:cut]  # what the first append left in the file: no whole marker yet
        assert scan(stored) is None, cut
        assert scan(key[cut:], history=stored) is not None, cut


def test_marker_wholly_in_history_is_not_blamed_on_new_bytes() -> None:
    stored = b"-----BEGIN RSA PRIVATE KEY-----\n"
    assert scan(b"harmless line\n", history=stored) is None


def test_finding_sticks_and_reports_offset() -> None:
    scanner = SecretScanner()
    scanner.feed(b"0123456789")
    finding = scanner.feed(b"PuTTY-User-Key-File-2")
    assert finding is not None and finding.end == 10 + len(b"PuTTY-User-Key-File-2")
    assert scanner.feed(b"more") is finding


def test_carry_is_long_enough_for_the_longest_marker() -> None:
    longest = b"----- BEGIN " + b"A" * 40 + b"PRIVATE KEY"
    assert len(longest) == CARRY + 1
    assert scan(longest) is not None
    scanner = SecretScanner()
    scanner.feed(longest[:1])
    assert scanner.feed(longest[1:]) is not None


@given(st.binary(max_size=300), st.binary(max_size=300), st.sampled_from([m for m, _ in MARKERS]),
       st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=30))
def test_any_chunking_finds_an_embedded_key(before: bytes, after: bytes, key: bytes, sizes: list[int]) -> None:
    content = before + key + after
    scanner = SecretScanner()
    offset, index = 0, 0
    while offset < len(content):
        size = sizes[index % len(sizes)]
        scanner.feed(content[offset:offset + size])
        offset, index = offset + size, index + 1
    assert scanner.finding is not None


@pytest.mark.parametrize(("content", "kind"), MARKERS)
def test_a_marker_across_a_search_window_boundary_is_found(content: bytes, kind: str) -> None:
    """A chunk is searched FIND_WINDOW bytes at a time: a marker starting at any byte around a boundary is found,
    in one chunk, and in a chunk that follows history."""
    filler = b"x" * (3 * FIND_WINDOW)
    for boundary in (FIND_WINDOW, 2 * FIND_WINDOW):
        for start in range(boundary - len(content), boundary + 2):
            chunk = filler[:start] + content + filler[start:]
            found = scan(chunk)
            assert found is not None and found.kind == kind, start
            assert scan(chunk, history=b"y" * CARRY) is not None, start


def test_a_large_chunk_without_a_marker_passes() -> None:
    assert scan(b"PRIVATE KE" * (FIND_WINDOW // 3) + b"PuTTY-User-Key-File" * 2000) is None


@pytest.mark.parametrize(("content", "kind"), MARKERS)
def test_found_anywhere_in_a_large_piece(content: bytes, kind: str) -> None:
    # Pieces of MEMMEM_FROM bytes and more are searched with glibc's memmem, smaller ones with bytes.find.
    size = 2 * MEMMEM_FROM
    alone = scan(content)
    assert alone is not None
    for at in (0, 1, MEMMEM_FROM - 7, size - len(content)):
        piece = b"s" * at + content + b"s" * (size - at - len(content))
        for chunk in (piece, bytearray(piece)):  # the HTTP path hands in a reused bytearray
            finding = SecretScanner().feed(chunk)
            assert finding is not None and finding.kind == kind and finding.end == at + alone.end, at
    for cut in (1, len(content) // 2, len(content) - 1):  # split across two large pieces
        scanner = SecretScanner()
        scanner.feed(b"s" * size + content[:cut])
        assert scanner.feed(content[cut:] + b"s" * size) is not None, cut


def test_a_large_piece_without_a_marker_passes() -> None:
    assert scan(b"".join(HARMLESS) * (2 * MEMMEM_FROM // len(b"".join(HARMLESS)))) is None
