"""Read the SNI from a TLS ClientHello in accumulated bytes. Pure, no I/O.

The hello may span several TLS records and several TCP segments: call again with more bytes until
the answer is not `NEED_MORE`. Nothing is decrypted; only the plaintext first flight is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

RECORD_HANDSHAKE: Final = 0x16
HANDSHAKE_CLIENT_HELLO: Final = 0x01
EXT_SERVER_NAME: Final = 0x0000
EXT_ECH: Final = 0xFE0D
EXT_ECH_OUTER: Final = 0xFD00
MAX_RECORD: Final = 1 << 14
DEFAULT_MAX_HELLO: Final = 1 << 14


@dataclass(frozen=True)
class NeedMore:
    """Not enough bytes yet."""


NEED_MORE: Final = NeedMore()


@dataclass(frozen=True)
class Hello:
    """A well-formed ClientHello; `sni` is the host_name entry (None when absent)."""

    sni: str | None


@dataclass(frozen=True)
class Refused:
    """Bytes the door will not pass; `reason` is a short stable token."""

    reason: str
    detail: str


Result = NeedMore | Hello | Refused


class _Malformed(Exception):
    pass


class _Reader:
    """A cursor over bytes that raises _Malformed on any overrun."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise _Malformed("a length runs past its container")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def uint(self, n: int) -> int:
        return int.from_bytes(self.take(n), "big")

    def vector(self, len_bytes: int) -> _Reader:
        return _Reader(self.take(self.uint(len_bytes)))

    def done(self) -> bool:
        return self.pos == len(self.data)


def _handshake_bytes(buf: bytes, max_hello: int) -> bytes | Result:
    """Concatenate handshake record payloads until the ClientHello is whole."""
    if buf and buf[0] != RECORD_HANDSHAKE:
        return Refused("not-tls", f"the first byte is 0x{buf[0]:02x}, not a TLS handshake record")
    payload = bytearray()
    pos = 0
    while True:
        if len(buf) - pos < 5:
            return NEED_MORE
        rtype, major, length = buf[pos], buf[pos + 1], int.from_bytes(buf[pos + 3 : pos + 5], "big")
        if rtype != RECORD_HANDSHAKE or major != 3:
            return Refused("malformed-hello", "a non-handshake record came before the ClientHello ended")
        if length == 0 or length > MAX_RECORD:
            return Refused("malformed-hello", f"a TLS record of {length} bytes")
        if len(buf) - pos - 5 < length:
            return NEED_MORE
        payload += buf[pos + 5 : pos + 5 + length]
        pos += 5 + length
        if len(payload) >= 4:
            if payload[0] != HANDSHAKE_CLIENT_HELLO:
                return Refused("malformed-hello", f"handshake type {payload[0]} is not a ClientHello")
            need = 4 + int.from_bytes(payload[1:4], "big")
            if need > max_hello:
                return Refused("oversized-hello", f"a ClientHello of {need} bytes exceeds {max_hello}")
            if len(payload) >= need:
                return bytes(payload[4:need])


def _server_name(ext: _Reader) -> str:
    names = ext.vector(2)
    if names.done():
        raise _Malformed("an empty server_name list")
    found: str | None = None
    while not names.done():
        name_type = names.uint(1)
        name = names.vector(2).data
        if name_type != 0:
            continue
        if found is not None:
            raise _Malformed("two host_name entries in server_name")
        if not name or not name.isascii():
            raise _Malformed("a server_name that is empty or not ASCII")
        found = name.decode("ascii")
    if not ext.done() or found is None:
        raise _Malformed("a server_name extension without exactly one host_name")
    return found


def _parse_body(body: bytes) -> Result:
    r = _Reader(body)
    r.take(2 + 32)
    if len(r.vector(1).data) > 32:
        raise _Malformed("a session id longer than 32 bytes")
    suites = r.vector(2).data
    if not suites or len(suites) % 2:
        raise _Malformed("an empty or odd cipher suite list")
    if not r.vector(1).data:
        raise _Malformed("an empty compression method list")
    if r.done():
        return Hello(sni=None)
    exts = r.vector(2)
    if not r.done():
        raise _Malformed("bytes after the extensions")
    seen: set[int] = set()
    sni: str | None = None
    while not exts.done():
        ext_type = exts.uint(2)
        ext = exts.vector(2)
        if ext_type in seen:
            raise _Malformed(f"extension {ext_type} appears twice")
        seen.add(ext_type)
        if ext_type in (EXT_ECH, EXT_ECH_OUTER):
            return Refused("ech", "the ClientHello offers Encrypted ClientHello, which hides the host")
        if ext_type == EXT_SERVER_NAME:
            sni = _server_name(ext)
    return Hello(sni=sni)


def parse_client_hello(buf: bytes, max_hello: int = DEFAULT_MAX_HELLO) -> Result:
    """NEED_MORE, the Hello with its SNI, or a refusal (not TLS, malformed, oversized, ECH)."""
    whole = _handshake_bytes(buf, max_hello)
    if not isinstance(whole, bytes):
        return whole
    try:
        return _parse_body(whole)
    except _Malformed as exc:
        return Refused("malformed-hello", str(exc))
