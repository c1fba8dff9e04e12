"""The ClientHello reader: SNI from whole, split and fragmented hellos; refusals for the rest."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doors.net._clienthello import NEED_MORE, Hello, Refused, parse_client_hello

from . import hellos as h


@pytest.mark.parametrize("name", ["example.org", "files.pythonhosted.org", "xn--bcher-kva.example"])
def test_real_hello_from_ssl(name: str) -> None:
    assert parse_client_hello(h.real_client_hello(name)) == Hello(sni=name)


def test_real_hello_without_sni() -> None:
    assert parse_client_hello(h.real_client_hello(None)) == Hello(sni=None)


def test_every_prefix_needs_more() -> None:
    wire = h.real_client_hello("example.org")
    for cut in range(len(wire)):
        assert parse_client_hello(wire[:cut]) is NEED_MORE


@given(st.integers(min_value=1, max_value=300))
def test_hello_spread_over_records(size: int) -> None:
    wire = h.client_hello(b"split.example", size=size)
    assert parse_client_hello(wire) == Hello(sni="split.example")


def test_trailing_bytes_after_hello_ignored() -> None:
    wire = h.client_hello(b"example.org") + b"\x17\x03\x03\x00\x01X"
    assert parse_client_hello(wire) == Hello(sni="example.org")


def refused(wire: bytes, **kwargs: int) -> str:
    result = parse_client_hello(wire, **kwargs)
    assert isinstance(result, Refused), result
    return result.reason


ECH_BODY = b"\x00" + b"\x00\x01\x00\x01" + b"\x07" + h.vec(b"k" * 32, 2) + h.vec(b"p" * 16, 2)


@pytest.mark.parametrize(
    ("wire", "reason"),
    [
        (b"GET / HTTP/1.1\r\n\r\n", "not-tls"),
        (b"SSH-2.0-OpenSSH_9.6\r\n", "not-tls"),
        (b"\x80\x2e\x01\x03\x01", "not-tls"),  # SSLv2-compatible hello
        (h.client_hello(extra=[h.extension(0xFE0D, ECH_BODY)]), "ech"),
        (h.client_hello(extra=[h.extension(0xFD00, b"\x02\x00\x0a")]), "ech"),
        (h.records(h.handshake(h.hello_body([]), msg_type=2)), "malformed-hello"),
        (h.client_hello(extra=[h.sni_extension(b"again.org")]), "malformed-hello"),  # duplicate extension
        (h.records(h.handshake(h.hello_body([h.sni_extension(b"a.org", b"b.org")]))), "malformed-hello"),
        (h.records(h.handshake(h.hello_body([h.sni_extension(b"")]))), "malformed-hello"),
        (h.records(h.handshake(h.hello_body([h.sni_extension("é.org".encode())]))), "malformed-hello"),
        (h.records(h.handshake(h.hello_body([h.extension(0, h.vec(b"", 2))]))), "malformed-hello"),
        (h.records(h.handshake(h.hello_body([h.extension(0, b"\x00\x09\x00\x00\x05a.org")]))), "malformed-hello"),
        (h.records(h.handshake(h.hello_body([], suites=b""))), "malformed-hello"),
        (h.records(h.handshake(h.hello_body([], suites=b"\x13"))), "malformed-hello"),
        (h.records(h.handshake(h.hello_body([], compression=b""))), "malformed-hello"),
        (h.records(h.handshake(h.hello_body([], session_id=b"s" * 33))), "malformed-hello"),
        (h.records(h.handshake(h.hello_body([]) + b"junk")), "malformed-hello"),
        (h.records(h.handshake(b"\x03\x03")), "malformed-hello"),
        (b"\x16\x03\x01\x00\x00", "malformed-hello"),  # empty record
        (b"\x16\x03\x01\x40\x01" + b"\x00" * 5, "malformed-hello"),  # record over 2^14
        (b"\x16\x02\x00\x00\x04\x01\x00\x00\x00", "malformed-hello"),  # not TLS 1.x record version
        (h.records(h.handshake(h.hello_body([]))[:2]) + b"\x15\x03\x03\x00\x02\x02\x28", "malformed-hello"),
        (b"\x16\x03\x01\x00\x04\x01\x01\x00\x00", "oversized-hello"),  # declares 64 KiB
    ],
)
def test_refusals(wire: bytes, reason: str) -> None:
    assert refused(wire) == reason


def test_size_limit_is_a_parameter() -> None:
    wire = h.client_hello(b"example.org", extra=[h.extension(21, b"\x00" * 3000)])
    assert parse_client_hello(wire) == Hello(sni="example.org")
    assert refused(wire, max_hello=2048) == "oversized-hello"


def test_hello_without_extensions_has_no_sni() -> None:
    assert parse_client_hello(h.records(h.handshake(h.hello_body(None)))) == Hello(sni=None)


def test_other_name_types_are_skipped() -> None:
    body = h.hello_body([h.extension(0, h.vec(b"\x01" + h.vec(b"x", 2) + b"\x00" + h.vec(b"a.org", 2), 2))])
    assert parse_client_hello(h.records(h.handshake(body))) == Hello(sni="a.org")


@given(st.binary(max_size=600))
def test_random_bytes_never_raise(data: bytes) -> None:
    assert parse_client_hello(data) is NEED_MORE or isinstance(parse_client_hello(data), Hello | Refused)


@given(st.binary(max_size=200), st.integers(min_value=0, max_value=400))
def test_random_bytes_after_a_record_header_never_raise(data: bytes, cut: int) -> None:
    wire = h.client_hello(b"example.org")
    mutated = wire[:cut] + data + wire[cut + len(data):]
    result = parse_client_hello(mutated)
    assert result is NEED_MORE or isinstance(result, Hello | Refused)
