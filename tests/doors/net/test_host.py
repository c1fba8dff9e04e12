"""Host normalisation: one spelling per destination, every non-canonical number refused."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doors.net._host import Host, HostError, normalise_host, parse_authority, parse_port, split_authority


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("example.org", "example.org"),
        ("EXAMPLE.Org", "example.org"),
        ("example.org.", "example.org"),
        ("Bücher.example", "xn--bcher-kva.example"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("ＥＸＡＭＰＬＥ.org", "example.org"),  # fullwidth letters map to ASCII under UTS-46
        ("a-b.example", "a-b.example"),
        ("0x7f.example", "0x7f.example"),  # only the last label decides "numeric"
        ("1.2.3.example", "1.2.3.example"),
    ],
)
def test_names_normalise(raw: str, name: str) -> None:
    assert normalise_host(raw) == Host(name)


@pytest.mark.parametrize(
    "raw",
    [
        "2130706433",  # decimal
        "0x7f000001",  # hex
        "0177.0.0.1",  # octal
        "0x7f.0.0.1",
        "127.1",  # short forms
        "127.0.1",
        "127.000.0.1",
        "127.0.0.01",
        "256.0.0.1",
        "1.2.3.4.5",
        "127.0.0.1.",  # a trailing dot on a number is not canonical
        "example.123",
        "example.0x1f",
        "0x",
        "１２７.0.0.1",  # fullwidth digits
        "127。0.0.1",  # ideographic full stop
        "127．0．0．1",  # fullwidth full stop
        "127｡0.0.1",  # halfwidth ideographic full stop
        "١٢٧.0.0.1",  # Arabic-Indic digits
        "exa①mple.org",  # circled digit maps to "1"
    ],
)
def test_non_canonical_numbers_refused(raw: str) -> None:
    with pytest.raises(HostError) as info:
        normalise_host(raw)
    assert info.value.reason == "non-canonical-number"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty-host"),
        (".", "empty-label"),
        ("example.org..", "empty-label"),
        (".example.org", "empty-label"),
        ("a..b", "bad-name"),
        ("exa mple.org", "bad-name"),
        ("a_b.example", "bad-name"),
        ("%31.example", "bad-name"),
        ("-a.example", "bad-name"),
        ("x" * 64 + ".example", "bad-name"),
        (".".join(["a" * 60] * 5), "bad-name"),
        ("::1", "bad-ipv6"),
        ("[::1", "bad-ipv6"),
        ("[fe80::1%eth0]", "ipv6-zone"),
        ("[1.2.3.4]", "bad-ipv6"),
        ("[example.org]", "bad-ipv6"),
    ],
)
def test_bad_hosts_refused(raw: str, reason: str) -> None:
    with pytest.raises(HostError) as info:
        normalise_host(raw)
    assert info.value.reason == reason


def test_ip_literals() -> None:
    assert normalise_host("192.0.2.1") == Host("192.0.2.1", ipaddress.IPv4Address("192.0.2.1"))
    v6 = normalise_host("[2001:DB8:0:0::1]")
    assert v6 == Host("2001:db8::1", ipaddress.IPv6Address("2001:db8::1"))
    assert str(v6) == "[2001:db8::1]"


@given(st.ip_addresses(v=4))
def test_every_canonical_quad_is_a_literal(ip: ipaddress.IPv4Address) -> None:
    assert normalise_host(str(ip)).ip == ip


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_every_decimal_spelling_refused(number: int) -> None:
    for spelling in (str(number), hex(number), "0" + oct(number)[2:]):
        with pytest.raises(HostError):
            normalise_host(spelling)


@given(st.lists(st.integers(min_value=0, max_value=255), min_size=4, max_size=4), st.integers(0, 3))
def test_octal_or_padded_label_refused(octets: list[int], which: int) -> None:
    labels = [str(o) for o in octets]
    labels[which] = "0" + labels[which]
    with pytest.raises(HostError):
        normalise_host(".".join(labels))


_LABEL = st.from_regex(r"[a-z]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True).filter(lambda s: s[2:4] != "--")


@given(st.lists(_LABEL, min_size=1, max_size=4), _LABEL, st.booleans())
def test_names_idempotent_and_case_blind(labels: list[str], tld: str, dot: bool) -> None:
    name = ".".join([*labels, tld])
    once = normalise_host(name.upper() + ("." if dot else ""))
    assert once == Host(name)
    assert normalise_host(once.name) == once


def test_authority() -> None:
    assert parse_authority("Example.org:443") == (Host("example.org"), 443)
    assert parse_authority("example.org", 80) == (Host("example.org"), 80)
    assert parse_authority("[2001:db8::1]:8443")[1] == 8443
    assert split_authority("[2001:db8::1]") == ("[2001:db8::1]", None)


@pytest.mark.parametrize(
    ("authority", "reason"),
    [
        ("example.org", "missing-port"),
        ("user@example.org:443", "userinfo"),
        ("allowed.org:443@evil.org:443", "userinfo"),
        ("2001:db8::1:443", "bad-ipv6"),
        ("[2001:db8::1]x:443", "bad-authority"),
        ("[2001:db8::1:443", "bad-ipv6"),
        ("example.org:", "bad-port"),
    ],
)
def test_bad_authority(authority: str, reason: str) -> None:
    with pytest.raises(HostError) as info:
        parse_authority(authority)
    assert info.value.reason == reason


@pytest.mark.parametrize("port", ["0", "65536", "0443", "+443", "44 3", "4.4", "０"])
def test_bad_ports(port: str) -> None:
    with pytest.raises(HostError):
        parse_port(port)


@given(st.integers(min_value=1, max_value=65535))
def test_every_port(port: int) -> None:
    assert parse_port(str(port)) == port


@given(st.text(max_size=80))
def test_any_text_is_a_host_or_a_host_error(raw: str) -> None:
    try:
        host = normalise_host(raw)
    except HostError:
        return
    assert host.name.isascii() and host.name == host.name.lower() and not host.name.endswith(".")
    assert normalise_host(str(host)) == host  # the normal form is a fixed point


@given(st.text(alphabet="0123456789xX.abcdef:[]%@", max_size=30))
def test_numeric_looking_authorities_never_slip_through(raw: str) -> None:
    try:
        host, _ = parse_authority(raw, 443)
    except HostError:
        return
    if host.ip is None:
        last = host.name.rsplit(".", 1)[-1]
        # WHATWG "ends in a number": all digits, or 0x followed by hex digits only ("0xx" is a name)
        assert not last.isdigit()
        assert not (last.startswith("0x") and all(c in "0123456789abcdef" for c in last[2:]))
    elif host.ip.version == 4:
        assert raw.split(":")[0] == str(host.ip)  # only the canonical quad itself
