"""Host and authority normalisation: one spelling per destination, or a refusal. Pure, no I/O."""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from dataclasses import dataclass

import idna

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_NAME = 253
# UTS-46 maps these to "." before anything else sees them.
_UNICODE_DOTS = frozenset("\u3002\uff0e\uff61")
_HEX_LABEL = re.compile(r"0[xX][0-9a-fA-F]*")
_QUAD_LABEL = re.compile(r"0|[1-9][0-9]{0,2}")
_PORT = re.compile(r"[1-9][0-9]{0,4}")


class HostError(ValueError):
    """A host or authority the door will not interpret; `reason` is a short stable token."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Host:
    """A normalised destination: an A-label name (lowercase, no trailing dot) or an IP literal."""

    name: str
    ip: IPAddress | None = None

    def __str__(self) -> str:
        if isinstance(self.ip, ipaddress.IPv6Address):
            return f"[{self.name}]"
        return self.name


def _looks_numeric(label: str) -> bool:
    """True when a resolver could read this last label as part of an IPv4 number (WHATWG rule)."""
    return label.isascii() and (label.isdigit() or _HEX_LABEL.fullmatch(label) is not None)


def _canonical_quad(text: str) -> ipaddress.IPv4Address | None:
    """The address when `text` is exactly a canonical dotted quad, else None."""
    labels = text.split(".")
    if len(labels) != 4 or not all(_QUAD_LABEL.fullmatch(label) for label in labels):
        return None
    if any(int(label) > 255 for label in labels):
        return None
    return ipaddress.IPv4Address(text)


def _refuse_unicode_numerals(raw: str) -> None:
    for char in raw:
        if char.isascii():
            continue
        if char in _UNICODE_DOTS or unicodedata.numeric(char, None) is not None:
            raise HostError(
                "non-canonical-number",
                f"host {raw!r} holds the non-ASCII digit or dot U+{ord(char):04X}; write it in ASCII",
            )


def _parse_ipv6(inner: str) -> Host:
    if "%" in inner:
        raise HostError("ipv6-zone", f"IPv6 literal [{inner}] carries a zone id; zones are refused")
    try:
        ip = ipaddress.IPv6Address(inner)
    except ValueError as exc:
        raise HostError("bad-ipv6", f"[{inner}] is not an IPv6 address") from exc
    return Host(name=ip.compressed, ip=ip)


def normalise_host(raw: str) -> Host:
    """Lowercase, drop one trailing dot, IDNA (UTS-46) to A-labels; refuse non-canonical numbers."""
    if not raw:
        raise HostError("empty-host", "the host is empty")
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise HostError("bad-ipv6", f"{raw!r} opens a bracket it does not close")
        return _parse_ipv6(raw[1:-1])
    _refuse_unicode_numerals(raw)
    had_dot = raw.endswith(".")
    text = raw[:-1] if had_dot else raw
    if not text or text.endswith(".") or text.startswith("."):
        raise HostError("empty-label", f"host {raw!r} has an empty label")
    if _looks_numeric(text.rsplit(".", 1)[-1]):
        quad = _canonical_quad(text)
        if quad is None or had_dot:
            raise HostError(
                "non-canonical-number",
                f"host {raw!r} is a number but not a canonical dotted quad (like 192.0.2.1)",
            )
        return Host(name=str(quad), ip=quad)
    if ":" in text:
        raise HostError("bad-ipv6", f"host {raw!r}: an IPv6 literal goes in brackets")
    try:
        name = idna.encode(text, uts46=True, std3_rules=True, transitional=False).decode("ascii")
    except (idna.IDNAError, UnicodeError) as exc:
        raise HostError("bad-name", f"host {raw!r} is not a valid domain name: {exc}") from exc
    if len(name) > MAX_NAME:
        raise HostError("bad-name", f"host {raw!r} is longer than {MAX_NAME} characters")
    if _looks_numeric(name.rsplit(".", 1)[-1]):
        raise HostError("non-canonical-number", f"host {raw!r} maps to a number")
    return Host(name=name)


def parse_port(text: str) -> int:
    """A port in canonical decimal, 1..65535."""
    if not _PORT.fullmatch(text) or int(text) > 65535:
        raise HostError("bad-port", f"port {text!r} is not a decimal number from 1 to 65535")
    return int(text)


def split_authority(authority: str) -> tuple[str, str | None]:
    """Split `host:port` (IPv6 in brackets) into its raw host and raw port (None if absent)."""
    if "@" in authority:
        raise HostError("userinfo", "an authority with user information (user@host) is refused")
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise HostError("bad-ipv6", f"{authority!r} opens a bracket it does not close")
        rest = authority[close + 1 :]
        if rest and not rest.startswith(":"):
            raise HostError("bad-authority", f"{authority!r}: junk after the IPv6 literal")
        return authority[: close + 1], (rest[1:] if rest else None)
    host, sep, port = authority.rpartition(":")
    if not sep:
        return authority, None
    if ":" in host:
        raise HostError("bad-ipv6", f"{authority!r}: an IPv6 literal goes in brackets")
    return host, port


def parse_authority(authority: str, default_port: int | None = None) -> tuple[Host, int]:
    """Normalise `host[:port]`; the port is required when there is no default."""
    raw_host, raw_port = split_authority(authority)
    if raw_port is None:
        if default_port is None:
            raise HostError("missing-port", f"{authority!r} names no port (write host:port)")
        return normalise_host(raw_host), default_port
    return normalise_host(raw_host), parse_port(raw_port)
