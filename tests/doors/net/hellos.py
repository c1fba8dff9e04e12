"""Build ClientHellos for tests: real ones from the ssl module, and hand-shaped ones to break."""

from __future__ import annotations

import contextlib
import ssl
import struct


def real_client_hello(server_hostname: str | None) -> bytes:
    """The first flight the stdlib TLS client sends (records as they go on the wire)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=server_hostname)
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def vec(data: bytes, len_bytes: int) -> bytes:
    return len(data).to_bytes(len_bytes, "big") + data


def extension(ext_type: int, body: bytes) -> bytes:
    return struct.pack("!H", ext_type) + vec(body, 2)


def sni_extension(*names: bytes, name_type: int = 0) -> bytes:
    entries = b"".join(bytes([name_type]) + vec(name, 2) for name in names)
    return extension(0, vec(entries, 2))


def hello_body(extensions: list[bytes] | None, session_id: bytes = b"\x00" * 32,
               suites: bytes = b"\x13\x01", compression: bytes = b"\x00") -> bytes:
    body = b"\x03\x03" + b"\x11" * 32 + vec(session_id, 1) + vec(suites, 2) + vec(compression, 1)
    if extensions is not None:
        body += vec(b"".join(extensions), 2)
    return body


def handshake(body: bytes, msg_type: int = 1) -> bytes:
    return bytes([msg_type]) + vec(body, 3)


def records(message: bytes, size: int = 1 << 14, rtype: int = 0x16, version: bytes = b"\x03\x01") -> bytes:
    """Cut a handshake message into TLS records of at most `size` payload bytes."""
    out = bytearray()
    for start in range(0, len(message), size):
        chunk = message[start : start + size]
        out += bytes([rtype]) + version + vec(chunk, 2)
    return bytes(out)


def client_hello(sni: bytes | None = b"example.org", extra: list[bytes] | None = None, size: int = 1 << 14) -> bytes:
    exts = [sni_extension(sni)] if sni is not None else []
    exts += extra or []
    return records(handshake(hello_body(exts)), size)
