"""The injection rules: parsing, which rule a request gets, what is stripped, and redaction. Pure."""

from __future__ import annotations

import base64

import h11
import pytest

from doors.net._host import parse_authority
from doors.net._inject import REDACTED, InjectError, Injection, Redactor, parse_rule, redact, upstream_request

SECRET = b"s3cr3t-token"
ROWS = [
    {"host": "git.example.org:443", "secret": "gh", "format": "basic"},
    {"host": "git.example.org:443", "path_prefix": "/org/", "secret": "org", "format": "token"},
    {"host": "api.example.org:443", "secret": "key", "format": "raw", "header": "PRIVATE-TOKEN"},
    {"host": "api.example.org:8443", "secret": "b", "format": "bearer"},
]
INJECTION = Injection.from_rows(ROWS)


@pytest.mark.parametrize(("authority", "path", "secret"), [
    ("git.example.org:443", "/other/repo.git/info/refs", "gh"),
    ("git.example.org:443", "/org/repo.git/info/refs", "org"),  # the longest prefix wins
    ("git.example.org:443", "/org", "gh"),  # a prefix is a string prefix of the path: '/org/' does not cover '/org'
    ("git.example.org:443", "/org/../other/x", "gh"),  # dot segments match no narrower prefix
    ("git.example.org:443", "/org/%2e%2e/other", "gh"),
    ("git.example.org:443", "/org/..;/other", "gh"),  # an upstream dropping ;params resolves it to /other
    ("git.example.org:443", "/org//x", "gh"),
    ("api.example.org:443", "/v4/projects", "key"),
    ("api.example.org:8443", "/", "b"),
    ("api.example.org:80", "/", None),
    ("example.org:443", "/", None),
])
def test_the_longest_covering_prefix_decides(authority: str, path: str, secret: str | None) -> None:
    host, port = parse_authority(authority)
    rule = INJECTION.match(host, port, path)
    assert (rule.secret if rule else None) == secret


@pytest.mark.parametrize(("index", "value"), [
    (0, b"Basic " + base64.b64encode(b"x-access-token:" + SECRET)),
    (1, b"token " + SECRET),
    (2, SECRET),
    (3, b"Bearer " + SECRET),
])
def test_header_values(index: int, value: bytes) -> None:
    rule = INJECTION.rules[index]
    assert rule.header_value(SECRET) == value
    assert SECRET in rule.forms(SECRET) and value in rule.forms(SECRET)


@pytest.mark.parametrize(("row", "problem"), [
    ({"host": "git.example.org", "secret": "s"}, None),  # no port: host:port is required
    ({"host": "192.0.2.1:443", "secret": "s"}, "IP literal"),
    ({"host": "a.example:443", "secret": "s", "format": "digest"}, "format"),
    ({"host": "a.example:443", "secret": "s", "format": "bearer", "header": "x-token"}, "use 'raw'"),
    ({"host": "a.example:443", "secret": "s", "format": "raw", "header": "proxy-authorization"}, "header"),
    ({"host": "a.example:443", "secret": "s", "path_prefix": "org/"}, "path_prefix"),
    ({"host": "a.example:443", "secret": "s", "path_prefix": "/a/../b"}, "path_prefix"),
    ({"host": "a.example:443", "secret": "s", "format": "basic", "username": "a:b"}, "username"),
])
def test_rows_that_are_refused(row: dict[str, object], problem: str | None) -> None:
    if problem is None:
        with pytest.raises(InjectError, match="host"):
            parse_rule(0, row)
        return
    with pytest.raises(InjectError, match=problem):
        parse_rule(0, row)


def test_every_credential_the_app_sends_is_stripped_and_the_bound_one_added() -> None:
    host, port = parse_authority("api.example.org:443")
    request = h11.Request(method="GET", target="/v4?x=1", headers=[
        ("Host", "api.example.org"), ("Authorization", "Bearer app"), ("Proxy-Authorization", "Basic eA=="),
        ("Private-Token", "app-own"), ("Accept-Encoding", "gzip"), ("Connection", "keep-alive, x-drop"),
        ("X-Drop", "1"), ("User-Agent", "curl")])
    rule = INJECTION.match(host, port, "/v4")
    assert rule is not None
    out = upstream_request(request, host, port, INJECTION.stripped(host, port), (rule.header, SECRET))
    assert out.target == b"/v4?x=1"
    assert [(n, v) for n, v in out.headers] == [(b"host", b"api.example.org"), (b"user-agent", b"curl"),
                                                (b"private-token", SECRET), (b"accept-encoding", b"identity")]


@pytest.mark.parametrize("cut", range(1, 30))
def test_a_form_split_across_pieces_is_redacted(cut: int) -> None:
    forms = INJECTION.rules[3].forms(SECRET)
    body = b"before Bearer " + SECRET + b" after " + SECRET + b"!"
    redactor = Redactor(forms)
    out = redactor.feed(body[:cut]) + redactor.feed(body[cut:]) + redactor.rest()
    assert out == redact(body, forms) and SECRET not in out and len(out) == len(body)
    assert REDACTED * len(SECRET) in out


def test_nothing_to_redact_passes_through() -> None:
    redactor = Redactor(())
    assert redactor.feed(b"abc") + redactor.rest() == b"abc"
