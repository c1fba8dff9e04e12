"""The CONNECT exchange with an upstream proxy, sans I/O: what the door sends, how it reads the reply."""

from __future__ import annotations

import ipaddress

import pytest

from doors.net._host import Host
from doors.net._via_proxy import UpstreamProxy, asked_authority, connect_head, parse_upstream_proxy, read_reply


def test_the_connect_head_names_the_authority_and_carries_the_credential_only_when_given() -> None:
    _, head = connect_head("203.0.113.80:443", b"user:pw")
    assert head == (b"CONNECT 203.0.113.80:443 HTTP/1.1\r\nhost: 203.0.113.80:443\r\n"
                    b"proxy-authorization: Basic dXNlcjpwdw==\r\n\r\n")
    _, bare = connect_head("[2001:db8::7]:443", None)
    assert bare == b"CONNECT [2001:db8::7]:443 HTTP/1.1\r\nhost: [2001:db8::7]:443\r\n\r\n"


@pytest.mark.parametrize(("chunks", "result"), [
    ([b"HTTP/1.1 200 Connection established\r\n\r\n"], 200),
    ([b"HTTP/1.1 200 OK\r\n", b"Via: corp\r\n\r\n"], 200),
    ([b"HTTP/1.0 200 OK\r\n\r\n"], 200),
    ([b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"], 407),
    ([b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"], 200),
    ([b"HTTP/1.1 200 OK\r\n\r\n\x16\x03\x01"], "the upstream proxy sent bytes before the client spoke"),
    ([b"SSH-2.0-OpenSSH\r\n\r\n"], "not HTTP/1.1"),
    ([b"HTTP/1.1 200 OK\r\n", b""], "closed before its reply"),
    ([b""], "closed before its reply"),
])
def test_the_reply_is_a_status_or_why_not(chunks: list[bytes], result: int | str) -> None:
    conn, _ = connect_head("h.example:443", None)
    found: int | str | None = None
    for chunk in chunks:
        found = read_reply(conn, chunk)
        if found is not None:
            break
    assert found == result if isinstance(result, int) else (isinstance(found, str) and result in found), found


def test_the_row_is_read_and_refused_naming_itself() -> None:
    proxy = parse_upstream_proxy({"address": "Proxy.Corp.Example:3128", "secret": "corp", "resolve": "proxy"})
    assert proxy == UpstreamProxy(Host("proxy.corp.example"), 3128, True, "corp")
    assert parse_upstream_proxy(None) is None
    for bad in ({"address": "proxy.corp.example"}, {"address": 7}, {"address": "p.example:1", "resolve": "x"}):
        with pytest.raises(ValueError, match=r"doors\.net\.upstream_proxy"):
            parse_upstream_proxy(bad)


def test_what_the_door_asks_for() -> None:
    host = Host("pypi.org")
    assert asked_authority(host, 443, ipaddress.ip_address("203.0.113.80")) == "203.0.113.80:443"
    assert asked_authority(host, 443, ipaddress.ip_address("2001:db8::7")) == "[2001:db8::7]:443"
    assert asked_authority(host, 443, None) == "pypi.org:443"
