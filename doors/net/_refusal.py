"""Refusals the proxy answers with: the error shape, a stable reason token, and when to retry. Pure."""

from __future__ import annotations

import json
from dataclasses import dataclass

from doors._refusal import Refusal

ROW_ALLOW = "doors.net.allow"
ROW_ADDRESSES = "doors.net.public_addresses"
ROW_TLS = "doors.net.tls_sni"
ROW_FRAMING = "doors.net.framing"
ROW_LIMITS = "doors.net.limits"
ROW_UPSTREAM = "doors.net.upstream"
ROW_UPSTREAM_PROXY = "doors.net.upstream_proxy"
ROW_INJECT = "doors.net.inject"
ROW_WILDCARD_NAMES = "doors.net.max_wildcard_names"

REFUSAL_HEADER = b"x-sharness-refusal"
WHO = "net"


@dataclass(frozen=True)
class ProxyRefusal:
    """One refused proxy request: the refusal (status, row, who, detail, hint), a stable reason token, and
    the Retry-After of a 429."""

    refusal: Refusal
    reason: str
    retry_after_s: int | None = None

    def body(self) -> bytes:
        """The JSON error body (the contract's error shape plus `reason`)."""
        doc = {**self.refusal.shape(), "reason": self.reason}
        return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode() + b"\n"

    def headers(self, body_length: int) -> list[tuple[bytes, bytes]]:
        """Response fields: JSON type, length, X-Sharness-Refusal, Retry-After when it applies."""
        fields = [
            (b"content-type", b"application/json"),
            (b"content-length", str(body_length).encode()),
            (REFUSAL_HEADER, f"{self.reason}; row={self.refusal.row}".encode()),
        ]
        if self.retry_after_s is not None:
            fields.append((b"retry-after", str(self.retry_after_s).encode()))
        return fields


def _refused(status: int, reason: str, row: str, detail: str, hint: str,
             retry_after_s: int | None = None) -> ProxyRefusal:
    return ProxyRefusal(Refusal(status, row, WHO, detail, hint), reason, retry_after_s)


def bad_request(reason: str, detail: str) -> ProxyRefusal:
    """400: the request itself is ambiguous or not a proxy request."""
    return _refused(400, reason, ROW_FRAMING, detail, "send one unambiguous HTTP/1.1 proxy request")


def not_allowed(reason: str, detail: str, role: str, wanted: str) -> ProxyRefusal:
    """403 by the allowlist."""
    hint = f"add {wanted!r} to {ROW_ALLOW}.{role} in the manifest if this role should reach it"
    return _refused(403, reason, ROW_ALLOW, detail, hint)


def not_public(reason: str, detail: str) -> ProxyRefusal:
    """403 because an answer or literal is not a public address; no manifest row switches this off."""
    hint = "the net door dials public addresses only; nothing in the manifest changes that"
    return _refused(403, reason, ROW_ADDRESSES, detail, hint)


def outside_internal(reason: str, detail: str, row: str) -> ProxyRefusal:
    """403 because a name with internal ranges resolved outside them."""
    hint = f"add the range its answers are in to {row} if that is where the host lives"
    return _refused(403, reason, row, detail, hint)


def bad_tls(reason: str, detail: str) -> ProxyRefusal:
    """Refused ClientHello (the tunnel is already up, so this is audited and the tunnel closed)."""
    hint = "send TLS with SNI equal to the CONNECT host and no Encrypted ClientHello"
    return _refused(403, reason, ROW_TLS, detail, hint)


def kept_secret(secret_row: str, host: str, hosts: list[str]) -> ProxyRefusal:
    """403: the request carries a secret the keys door keeps (under `secret_row`), to a host the row does not
    bind it to."""
    row = f"{secret_row}.hosts"
    detail = f"the request carries the secret kept as {secret_row}, which is bound to {hosts}, not to {host}"
    return _refused(403, "kept-secret", row, detail, f"add {host!r} to {row} if the secret is meant for it")


def too_many(detail: str, retry_after_s: int = 1) -> ProxyRefusal:
    """429: the role's tunnel limit is reached."""
    return _refused(429, "too-many-tunnels", ROW_LIMITS, detail, "close a tunnel or retry later", retry_after_s)


def upstream_proxy_failed(status: int, detail: str, reason: str = "upstream-proxy-refused") -> ProxyRefusal:
    """502 (or the proxy's own 502/503/504): the upstream proxy did not open the tunnel, or was not reached."""
    hint = f"check {ROW_UPSTREAM_PROXY} (its address, its credential) and that the proxy lets this destination through"
    return _refused(status, reason, ROW_UPSTREAM_PROXY, detail, hint)


def too_many_names(detail: str) -> ProxyRefusal:
    """403: the role's distinct names under wildcard rows are used up (each is a DNS query the app chose)."""
    hint = f"raise {ROW_WILDCARD_NAMES} or name the hosts in doors.net.allow instead of a wildcard"
    return _refused(403, "wildcard-names-exhausted", ROW_WILDCARD_NAMES, detail, hint)


def audit_backpressure(refused: Refusal) -> ProxyRefusal:
    """503: the door could not queue the request's `net.open` event, so it neither resolved nor dialled."""
    return ProxyRefusal(refused, "audit-backpressure", 1)


def upstream_failed(status: int, reason: str, detail: str) -> ProxyRefusal:
    """502 (resolution or connection failed) or 504 (dial timed out)."""
    return _refused(status, reason, ROW_UPSTREAM, detail, "check the host name and that it is reachable")


def misdirected(detail: str) -> ProxyRefusal:
    """421: inside a terminated tunnel, a request for another host than the CONNECT's (and its SNI)."""
    return _refused(421, "host-mismatch", ROW_TLS, detail, "send requests for the CONNECT host on its tunnel")


def credential_refused(refused: Refusal) -> ProxyRefusal:
    """The keys door's refusal to release a bound credential, passed on as it came (status, row, who)."""
    return ProxyRefusal(refused, "credential-refused")


def no_credential_source(secret: str) -> ProxyRefusal:
    """502: a rule binds a credential but the door has no way to the keys door."""
    return _refused(502, "no-keys-door", ROW_INJECT, f"no edge to the keys door to release {secret!r}",
                    'add ["net", "keys"] to edges')
