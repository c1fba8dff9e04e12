"""Bound credentials: which request to a bound host gets which secret, in which header. Pure, no I/O.

A rule is one `doors.net.inject[i]` row: `{"host": "git.example.org:443", "path_prefix": "/org/", "secret": "gh",
"format": "bearer" | "token" | "basic" | "raw", "header": "authorization", "username": "x-access-token"}`. For a
host:port with any rule the door terminates the app's TLS (doors/net/_terminate.py); every credential the app
sends to it is dropped, and the longest prefix that matches the request's path decides what is injected.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import h11

from doors.net._framing import authority_text, strip_hop_by_hop
from doors.net._host import Host, HostError, parse_authority
from pki.vocabulary import INJECT_FORMATS

INJECT_ROW = "doors.net.inject"
# What a client may carry a credential in, whatever the rules name: never forwarded to a bound host.
CREDENTIAL_HEADERS = frozenset({b"authorization", b"proxy-authorization"})
REDACTED = b"*"  # a redacted form becomes as many of these: lengths and framing stay what they were
_HEADER_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
# A path that a server may read as another (dot segments, encoded dots, slashes or backslashes) matches no
# narrower prefix: the upstream would normalise it out from under the rule.
# `;`: an upstream that drops path parameters (Tomcat, Spring) reads `/org/..;/x` as `/x`
_AMBIGUOUS_PATH = re.compile(r"(^|/)\.\.?(/|;|$)|%2e|%2f|%5c|\\|//", re.IGNORECASE)

Headers = list[tuple[bytes, bytes]]


class InjectError(ValueError):
    """A `doors.net.inject` row the door cannot read; names the row, and the field as `field`."""

    def __init__(self, index: int, field: str, detail: str) -> None:
        super().__init__(f"{INJECT_ROW}[{index}].{field}: {detail}")
        self.index, self.field, self.detail = index, field, detail


@dataclass(frozen=True)
class InjectRule:
    """One injection row, normalised (the header name in lowercase)."""

    index: int
    host: Host
    port: int
    path_prefix: str
    secret: str
    format: str
    header: bytes
    username: str = ""

    @property
    def row(self) -> str:
        """Where this rule lives in the manifest."""
        return f"{INJECT_ROW}[{self.index}]"

    def covers(self, path: str) -> bool:
        """Whether a request for `path` (without its query) gets this rule's credential."""
        if self.path_prefix == "/":
            return True
        return path.startswith(self.path_prefix) and _AMBIGUOUS_PATH.search(path) is None

    def header_value(self, secret: bytes) -> bytes:
        """The header's value carrying `secret`."""
        if self.format == "bearer":
            return b"Bearer " + secret
        if self.format == "token":
            return b"token " + secret
        if self.format == "basic":
            return b"Basic " + base64.b64encode(self.username.encode() + b":" + secret)
        return secret

    def forms(self, secret: bytes) -> tuple[bytes, ...]:
        """Every form of `secret` an echo could carry back: the value, the header's value, its base64 part."""
        value = self.header_value(secret)
        found = {secret, value, value.split(b" ", 1)[-1]}
        return tuple(sorted((form for form in found if form), key=len, reverse=True))


def parse_rule(index: int, raw: Mapping[str, Any]) -> InjectRule:
    """Normalise one row; raise InjectError naming it."""
    try:
        host, port = parse_authority(str(raw["host"]))
    except (KeyError, HostError) as exc:
        raise InjectError(index, "host", "write host:port, e.g. 'git.example.org:443'") from exc
    if host.ip is not None or "." not in host.name:
        raise InjectError(index, "host", "a bound host is a DNS name of two labels or more, not an IP literal")
    fmt = str(raw.get("format", "bearer"))
    header = str(raw.get("header", "authorization")).lower()
    prefix = str(raw.get("path_prefix", "/"))
    if fmt not in INJECT_FORMATS:
        raise InjectError(index, "format", f"one of {', '.join(INJECT_FORMATS)}, not {fmt!r}")
    if not _HEADER_NAME.fullmatch(header) or header in ("proxy-authorization", "host", "cookie"):
        raise InjectError(index, "header", "a lowercase field name such as 'authorization' or 'private-token'")
    if fmt != "raw" and header != "authorization":
        raise InjectError(index, "header", f"format {fmt!r} goes in 'authorization'; use 'raw' for another header")
    if not prefix.startswith("/") or _AMBIGUOUS_PATH.search(prefix):
        raise InjectError(index, "path_prefix", "an absolute path without '.', '..', '//' or escapes")
    username = str(raw.get("username", "x-access-token" if fmt == "basic" else ""))
    if ":" in username:
        raise InjectError(index, "username", "a basic-auth user name has no ':'")
    return InjectRule(index, host, port, prefix, str(raw["secret"]), fmt, header.encode(), username)


@dataclass(frozen=True)
class Injection:
    """Every injection rule; a host:port with none stays a plain tunnel."""

    rules: tuple[InjectRule, ...] = ()

    @classmethod
    def from_rows(cls, rows: Sequence[Mapping[str, Any]]) -> Injection:
        """Build from the manifest's `doors.net.inject` list."""
        return cls(tuple(parse_rule(index, raw) for index, raw in enumerate(rows)))

    def bound(self, host: Host, port: int) -> bool:
        """True when the door terminates TLS for `host:port` (some rule names it)."""
        return any(rule.host == host and rule.port == port for rule in self.rules)

    def hosts(self) -> tuple[str, ...]:
        """The bound hosts' names (what the egress CA is minted for), sorted."""
        return tuple(sorted({rule.host.name for rule in self.rules}))

    def match(self, host: Host, port: int, path: str) -> InjectRule | None:
        """The rule whose prefix is the longest that covers `path` on `host:port`, or None."""
        found = [rule for rule in self.rules if rule.host == host and rule.port == port and rule.covers(path)]
        return max(found, key=lambda rule: len(rule.path_prefix), default=None)

    def stripped(self, host: Host, port: int) -> frozenset[bytes]:
        """The fields dropped from every request to `host:port`: credentials, and every header a rule injects."""
        return CREDENTIAL_HEADERS | {rule.header for rule in self.rules if rule.host == host and rule.port == port}


def strip_credentials(headers: Iterable[tuple[bytes, bytes]], names: frozenset[bytes]) -> Headers:
    """`headers` without any field in `names` (compared in lowercase)."""
    return [(name, value) for name, value in headers if name.lower() not in names]


def upstream_request(request: h11.Request, host: Host, port: int, stripped: frozenset[bytes],
                     credential: tuple[bytes, bytes] | None) -> h11.Request:
    """What goes to the bound host: Host from the CONNECT, no hop-by-hop field, none of `stripped`, the injected
    `credential` field, and an identity body (an echo the door cannot read is one it cannot redact)."""
    dropped = stripped | {b"host", b"accept-encoding"}
    headers = [(name, value) for name, value in strip_hop_by_hop(request.headers) if name not in dropped]
    if any(name.lower() == b"transfer-encoding" for name, _ in request.headers):
        headers.append((b"transfer-encoding", b"chunked"))
    if credential is not None:
        headers.append(credential)
    headers = [(b"host", authority_text(host, port, 443)), *headers, (b"accept-encoding", b"identity")]
    return h11.Request(method=request.method, target=request.target, headers=headers)


def redact(data: bytes, forms: Sequence[bytes]) -> bytes:
    """`data` with every occurrence of each form replaced by as many REDACTED bytes (longest forms first)."""
    for form in forms:
        data = data.replace(form, REDACTED * len(form))
    return data


class Redactor:
    """Redacts a body as it streams: holds back the last `longest - 1` bytes until the next piece, so a form split
    across two pieces is whole when scanned and none of its bytes has gone to the client by then."""

    def __init__(self, forms: Sequence[bytes]) -> None:
        self._forms = tuple(forms)
        self._carry = max((len(form) for form in forms), default=1) - 1
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        """What of the held bytes and `data` may go to the client now."""
        if not self._forms:
            return data
        window = self._held + data
        if any(form in window for form in self._forms):  # rare: scanning is cheap, replacing copies
            window = redact(window, self._forms)
        cut = max(0, len(window) - self._carry)
        self._held = window[cut:]
        return window[:cut]

    def rest(self) -> bytes:
        """What was held back, at the body's end."""
        held, self._held = self._held, b""
        return held
