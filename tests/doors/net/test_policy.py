"""The allowlist: exact hosts, `*.suffix` for subdomains only, ports, IP literals, raw TCP rows."""

from __future__ import annotations

import pytest

from doors.net._host import normalise_host
from doors.net._policy import Allowlist, AllowlistError, parse_rule

ROWS = {
    "app": ["pypi.org:443", "*.pythonhosted.org:443", "Bücher.example:443", "192.0.2.7:443",
            "[2001:db8::7]:443", "tcp://git.example.org:22", "plain.example:80"],
    "shell": ["pypi.org:443"],
}
allowlist = Allowlist.from_rows(ROWS)


def match(role: str, host: str, port: int) -> str | None:
    rule = allowlist.match(role, normalise_host(host), port)
    return None if rule is None else rule.text


@pytest.mark.parametrize(
    ("role", "host", "port", "row"),
    [
        ("app", "pypi.org", 443, "pypi.org:443"),
        ("app", "PYPI.org.", 443, "pypi.org:443"),
        ("app", "files.pythonhosted.org", 443, "*.pythonhosted.org:443"),
        ("app", "a.b.pythonhosted.org", 443, "*.pythonhosted.org:443"),
        ("app", "xn--bcher-kva.example", 443, "Bücher.example:443"),
        ("app", "BÜCHER.example", 443, "Bücher.example:443"),
        ("app", "192.0.2.7", 443, "192.0.2.7:443"),
        ("app", "[2001:db8:0::7]", 443, "[2001:db8::7]:443"),
        ("app", "git.example.org", 22, "tcp://git.example.org:22"),
        ("shell", "pypi.org", 443, "pypi.org:443"),
    ],
)
def test_allowed(role: str, host: str, port: int, row: str) -> None:
    assert match(role, host, port) == row


@pytest.mark.parametrize(
    ("role", "host", "port"),
    [
        ("app", "pythonhosted.org", 443),  # the apex is never covered by *.
        ("app", "evilpythonhosted.org", 443),
        ("app", "pythonhosted.org.evil.com", 443),
        ("app", "pypi.org", 80),
        ("app", "pypi.org.evil.com", 443),
        ("app", "evil-pypi.org", 443),
        ("app", "192.0.2.8", 443),
        ("app", "192.0.2.7", 80),
        ("shell", "files.pythonhosted.org", 443),
        ("model", "pypi.org", 443),  # a role with no row is allowed nothing
        ("nobody", "pypi.org", 443),
    ],
)
def test_refused(role: str, host: str, port: int) -> None:
    assert match(role, host, port) is None


def test_rule_fields() -> None:
    rule = allowlist.match("app", normalise_host("git.example.org"), 22)
    assert rule is not None and rule.raw_tcp and rule.row == "doors.net.allow.app[5]"
    tls_rule = allowlist.match("app", normalise_host("pypi.org"), 443)
    assert tls_rule is not None and not tls_rule.raw_tcp


@pytest.mark.parametrize(
    "text",
    ["pypi.org", "*.192.0.2.1:443", "*.com:443", "*:443", "pypi.org:0", "2130706433:443", "a_b.org:443",
     "user@pypi.org:443", "*.*.example.org:443", "[::1:443"],
)
def test_bad_rows_named(text: str) -> None:
    with pytest.raises(AllowlistError) as info:
        parse_rule("app", 3, text)
    assert "doors.net.allow.app[3]" in str(info.value)
