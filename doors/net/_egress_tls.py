"""The TLS contexts of the terminating path: one server context per bound host (its egress leaf, from the memfd
the CA child wrote), and the client context that verifies the real upstream.

Both offer only `http/1.1` in ALPN: the door relays HTTP/1.1 with its framing checks, so a client that asks for
HTTP/2 falls back (or, offering nothing else, gets no protocol and speaks HTTP/1.1 or fails).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from doors.net._inject import Injection
from pki.egress import split_leaves

ALPN = ["http/1.1"]
MAX_LEAVES_BYTES = 1 << 20
CredentialSource = Callable[[str, str], Awaitable[bytes]]  # (secret name, host) → its value, for one request


@dataclass(frozen=True)
class EgressConfig:
    """What the terminating path holds: the injection rules, each bound host's server context, the upstream's."""

    injection: Injection
    server_contexts: Mapping[str, ssl.SSLContext] = field(default_factory=dict)
    upstream_context: ssl.SSLContext = field(default_factory=lambda: upstream_context(None))


def _read_fd(fd: int) -> bytes:
    data = os.pread(fd, MAX_LEAVES_BYTES + 1, 0)
    if len(data) > MAX_LEAVES_BYTES:
        raise ValueError(f"the egress leaves' memfd {fd} holds more than {MAX_LEAVES_BYTES} bytes")
    return data


def _server_context(pem: bytes) -> ssl.SSLContext:
    """A server context holding one key+leaf, loaded through a memfd of the door's own (never a file)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(ALPN)
    fd = os.memfd_create("sh-egress-leaf", os.MFD_CLOEXEC)
    try:
        os.write(fd, pem)
        context.load_cert_chain(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)
    return context


def server_contexts(fd: int) -> dict[str, ssl.SSLContext]:
    """{bound host: its server context} from the egress memfd `fd` (closed here: the door keeps only contexts)."""
    try:
        leaves = split_leaves(_read_fd(fd))
    finally:
        os.close(fd)
    return {host: _server_context(pem) for host, pem in leaves.items()}


def contexts_from_pems(leaves: Mapping[str, bytes]) -> dict[str, ssl.SSLContext]:
    """The same from {host: key+leaf PEM} (tests and the bench, which mint in process)."""
    return {host: _server_context(pem) for host, pem in leaves.items()}


def upstream_context(ca_bundle: str | None) -> ssl.SSLContext:
    """Verified TLS (1.2 or later) to the real upstream: the system store, or `ca_bundle` alone when the manifest
    names one (doors.net.ca_bundle)."""
    context = ssl.create_default_context(cafile=ca_bundle) if ca_bundle else ssl.create_default_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(ALPN)
    return context
