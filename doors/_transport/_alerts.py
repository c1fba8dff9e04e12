"""OpenSSL errors in words a person can act on. Pure: error names in, sentences out."""

from __future__ import annotations

import ssl

from doors._refusal import DoorRefused, Refusal
from doors._transport._errors import DoorNotTrusted, DoorUnavailable, TransportError
from doors._transport._identity import EDGE_ROW, SVID_ROW

_SESSION_SVID = "use this session's SVID (SHARNESS_SVID for the app, the SVID memfd for a door)"

# Alerts a client receives from a door that refused its certificate during the TLS 1.3 handshake.
_ALERTS: dict[str, tuple[str, str]] = {
    "TLSV1_ALERT_UNKNOWN_CA": (
        "the door does not trust the CA that signed your certificate (not this session's CA, "
        "or self-signed)", _SESSION_SVID),
    "TLSV13_ALERT_CERTIFICATE_REQUIRED": (
        "you presented no client certificate; the door requires one", _SESSION_SVID),
    "SSLV3_ALERT_CERTIFICATE_EXPIRED": (
        "your certificate has expired", "start a new session: SVIDs live as long as their session"),
    "SSLV3_ALERT_BAD_CERTIFICATE": (
        "the door rejected your certificate (not yet valid, or outside the session's trust domain)",
        _SESSION_SVID),
    "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE": (
        "your certificate is not allowed for TLS client use (wrong key usage or extended key usage)",
        _SESSION_SVID),
    "SSLV3_ALERT_CERTIFICATE_UNKNOWN": (
        "the door could not accept your certificate (outside the session CA's name constraints, or not "
        "a conformant leaf)", _SESSION_SVID),
    "SSLV3_ALERT_CERTIFICATE_REVOKED": ("your certificate is revoked", _SESSION_SVID),
    "TLSV1_ALERT_ACCESS_DENIED": ("the door denied access", "check the manifest row `edges`"),
    "TLSV1_ALERT_PROTOCOL_VERSION": ("the door speaks TLS 1.3 only", "use a TLS 1.3 client"),
    "SSLV3_ALERT_HANDSHAKE_FAILURE": (
        "no common TLS 1.3 parameters with the door", "use a TLS 1.3 client with default ciphers"),
    # OpenSSL sends decrypt_error both for a chain signature that fails (X509_V_ERR_CERT_SIGNATURE_FAILURE) and
    # for a CertificateVerify that fails: the client cannot tell which, so the words name both.
    "TLSV1_ALERT_DECRYPT_ERROR": (
        "a signature did not verify: your certificate names this session's CA but was not signed by it "
        "(forged or altered), or it does not match your private key", _SESSION_SVID),
}


def describe_local(ssl_error: ssl.SSLError | None, detail: str) -> str:
    """Words for why a door's handshake with a client failed, for its refusal event."""
    if ssl_error is None:
        return detail
    verify = getattr(ssl_error, "verify_message", None)
    if verify:
        return f"client certificate refused by TLS: {verify}"
    if ssl_error.reason == "PEER_DID_NOT_RETURN_A_CERTIFICATE":
        return "client presented no certificate"
    return f"TLS handshake failed: {(ssl_error.reason or detail).lower().replace('_', ' ')}"


def client_error(ssl_error: ssl.SSLError | None, detail: str, dialled: str) -> TransportError | DoorRefused:
    """The exception a client raises for a TLS failure while talking to door `dialled`: an alert from the
    door refused it, the door's certificate failed our verification, or the connection broke."""
    name = getattr(ssl_error, "reason", None) or ""
    if name in _ALERTS:  # the door's TLS refused us: the 403 `svid` refusal, sent before any HTTP
        reason, hint = _ALERTS[name]
        return DoorRefused(Refusal(403, SVID_ROW, dialled, reason, hint))
    if ssl_error is not None and ssl_error.reason == "CERTIFICATE_VERIFY_FAILED":
        verify = getattr(ssl_error, "verify_message", "") or "verification failed"
        return DoorNotTrusted(dialled, f"the door's certificate is not one of this session's SVIDs ({verify})")
    return DoorUnavailable(f"door {dialled!r}: the TLS connection failed "
                           f"({name.lower().replace('_', ' ') or detail})")


def connect_error(exc: OSError, address: str, dialled: str,
                  client_role: str | None) -> TransportError | DoorRefused:
    """The exception a client raises when connecting to a door's socket fails."""
    if isinstance(exc, PermissionError):
        edge = f"{client_role or 'your role'}->{dialled}"
        return DoorRefused(Refusal(
            403, EDGE_ROW, "kernel", f"the socket {address} does not admit this process's uid ({exc.strerror})",
            f"only edge-listed clients may connect: the manifest row `edges` must list {edge}"))
    return DoorUnavailable(f"door {dialled!r} at {address} cannot be reached: {exc.strerror or exc}")


def closed_in_handshake(dialled: str, address: str, detail: str) -> DoorUnavailable:
    """The door closed (or reset) the connection before the TLS handshake finished: usually it is full."""
    return DoorUnavailable(
        f"door {dialled!r} at {address} closed the connection during the TLS handshake ({detail}); a door "
        "closes new connections at once while it serves its maximum number of connections: retry shortly, "
        "or close clients that hold idle connections to it")


def handshake_error(ssl_error: ssl.SSLError | None, detail: str, dialled: str,
                    address: str) -> TransportError | DoorRefused:
    """The exception a client raises when its handshake with door `dialled` fails."""
    if ssl_error is None or isinstance(ssl_error, ssl.SSLEOFError):
        return closed_in_handshake(dialled, address, detail)  # a reset or an end of stream, not an alert
    return client_error(ssl_error, detail, dialled)
