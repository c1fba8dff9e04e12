"""SPIFFE ID parsing and formatting, and session identities."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pki.spiffe import (
    SessionIdentity,
    SpiffeId,
    SpiffeIdError,
    parse_spiffe_id,
    validate_trust_domain,
)
from pki.vocabulary import ROLES

trust_domains = st.text(string.ascii_lowercase + string.digits + ".-_", min_size=1, max_size=60)
segments = st.text(string.ascii_letters + string.digits + ".-_", min_size=1, max_size=20).filter(
    lambda s: s not in (".", "..")
)
paths = st.lists(segments, max_size=6).map(lambda segs: "".join("/" + s for s in segs))


@given(trust_domains, paths)
def test_round_trip(td: str, path: str) -> None:
    sid = SpiffeId(td, path)
    assert parse_spiffe_id(str(sid)) == sid
    assert str(parse_spiffe_id(str(sid))) == str(sid)


@given(st.text(max_size=80))
def test_parse_never_raises_anything_but_spiffe_id_error(text: str) -> None:
    try:
        sid = parse_spiffe_id(text)
    except SpiffeIdError:
        return
    assert str(sid) == text


@pytest.mark.parametrize(
    "text",
    [
        "spiffe://example.org",
        "spiffe://example.org/a",
        "spiffe://example.org/A/b-c/d_e/f.g/1",
        "spiffe://a_b-c.0/...x/.a",
        "spiffe://" + "a" * 255,
    ],
)
def test_valid(text: str) -> None:
    assert str(parse_spiffe_id(text)) == text


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "must start with 'spiffe://'"),
        ("http://example.org/a", "must start with 'spiffe://'"),
        ("spiffe:/example.org/a", "must start with 'spiffe://'"),
        ("SPIFFE://example.org/a", "scheme must be lowercase"),
        ("Spiffe://example.org/a", "scheme must be lowercase"),
        ("spiffe://", "trust domain is empty"),
        ("spiffe:///a", "trust domain is empty"),
        ("spiffe://Example.org/a", "trust domain has character(s) 'E'"),
        ("spiffe://exa mple.org", "trust domain has character(s) ' '"),
        ("spiffe://example.org:8080/a", "must not carry a port"),
        ("spiffe://user@example.org/a", "must not carry userinfo"),
        ("spiffe://example.org/a?x=1", "must not carry a query"),
        ("spiffe://example.org/a#frag", "must not carry a fragment"),
        ("spiffe://example.org/a%20b", "percent-encoding"),
        ("spiffe://example.org/", "must not end with '/'"),
        ("spiffe://example.org/a/", "must not end with '/'"),
        ("spiffe://example.org//a", "empty segment"),
        ("spiffe://example.org/a/./b", "segment '.' is not allowed"),
        ("spiffe://example.org/a/../b", "segment '..' is not allowed"),
        ("spiffe://example.org/a b", "path segment has character(s) ' '"),
        ("spiffe://example.org/a:b", "path segment has character(s) ':'"),
        ("spiffe://example.org/é", "must be ASCII"),
        ("spiffe://" + "a" * 256, "at most 255"),
        ("spiffe://example.org/" + "a" * 2040, "longer than 2048 bytes"),
    ],
)
def test_invalid(text: str, reason: str) -> None:
    with pytest.raises(SpiffeIdError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        parse_spiffe_id(text)


def test_parse_refuses_non_str() -> None:
    with pytest.raises(SpiffeIdError, match="must be a str"):
        parse_spiffe_id(b"spiffe://a/b")  # type: ignore[arg-type]


def test_exactly_2048_bytes_is_allowed() -> None:
    text = "spiffe://example.org/" + "a" * (2048 - len("spiffe://example.org/"))
    assert len(parse_spiffe_id(text).path) == 2048 - len("spiffe://example.org")


def test_constructor_validates() -> None:
    with pytest.raises(SpiffeIdError):
        SpiffeId("example.org", "a")
    with pytest.raises(SpiffeIdError):
        SpiffeId("Example.org", "/a")
    with pytest.raises(SpiffeIdError, match="longer than 2048"):
        SpiffeId("a", "/" + "b" * 2048)


def test_validate_trust_domain_returns_it() -> None:
    assert validate_trust_domain("sharness.test") == "sharness.test"


@pytest.mark.parametrize("role", ROLES)
def test_session_identity_round_trip(role: str) -> None:
    ident = SessionIdentity("td.test", "0123abcd", role)
    assert ident.uri() == f"spiffe://td.test/session/0123abcd/{role}"
    assert SessionIdentity.from_spiffe_id(parse_spiffe_id(ident.uri())) == ident
    assert ident.spiffe_id() == SpiffeId("td.test", f"/session/0123abcd/{role}")


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", "is not /session/<sid>/<role>"),
        ("/session/0123abcd", "is not /session/<sid>/<role>"),
        ("/session/0123abcd/app/x", "is not /session/<sid>/<role>"),
        ("/sessions/0123abcd/app", "is not /session/<sid>/<role>"),
        ("/session/0123ABCD/app", "is not 8 lowercase hex"),
        ("/session/0123abc/app", "is not 8 lowercase hex"),
        ("/session/0123abcde/app", "is not 8 lowercase hex"),
        ("/session/0123abcg/app", "is not 8 lowercase hex"),
        ("/session/0123abcd/root", "role 'root' is not one of"),
        ("/session/0123abcd/App", "role 'App' is not one of"),
    ],
)
def test_from_spiffe_id_refuses(path: str, reason: str) -> None:
    with pytest.raises(SpiffeIdError, match=reason):
        SessionIdentity.from_spiffe_id(SpiffeId("td.test", path))


def test_session_identity_validates_fields() -> None:
    with pytest.raises(SpiffeIdError, match="trust domain"):
        SessionIdentity("TD", "0123abcd", "app")
    with pytest.raises(SpiffeIdError, match="session id"):
        SessionIdentity("td", "xyz", "app")
    with pytest.raises(SpiffeIdError, match="role"):
        SessionIdentity("td", "0123abcd", "launcher")
