"""pyOpenSSL's error tuples as the ssl errors the transport's words are keyed by. Pure: tuples in, errors out.

pyOpenSSL reports OpenSSL's queue as (library, function, reason text), e.g. "tlsv1 alert unknown ca";
the stdlib names the same reason TLSV1_ALERT_UNKNOWN_CA. `_alerts` reads the stdlib names, so a refused
peer gets the same words whichever library ran the handshake.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence

VERIFY_FAILED = "CERTIFICATE_VERIFY_FAILED"
UNEXPECTED_EOF = "UNEXPECTED_EOF_WHILE_READING"


# OpenSSL 4 names every received alert TLS_ALERT_*; OpenSSL 3.0 (and so the stdlib) kept the protocol version
# that defined it: SSLV3_ALERT_*, TLSV1_ALERT_* or TLSV13_ALERT_*.
_SSLV3_ALERTS = frozenset({
    "UNEXPECTED_MESSAGE", "BAD_RECORD_MAC", "DECOMPRESSION_FAILURE", "HANDSHAKE_FAILURE", "NO_CERTIFICATE",
    "BAD_CERTIFICATE", "UNSUPPORTED_CERTIFICATE", "CERTIFICATE_REVOKED", "CERTIFICATE_EXPIRED",
    "CERTIFICATE_UNKNOWN", "ILLEGAL_PARAMETER"})
_TLSV13_ALERTS = frozenset({"CERTIFICATE_REQUIRED", "MISSING_EXTENSION"})
_ALERT_PREFIX = "TLS_ALERT_"


def reason_name(text: str) -> str:
    """OpenSSL's reason text ("tlsv1 alert unknown ca") as the stdlib's name for it (TLSV1_ALERT_UNKNOWN_CA)."""
    name = text.strip().upper().replace(" ", "_")
    if not name.startswith(_ALERT_PREFIX):
        return name
    alert = name.removeprefix(_ALERT_PREFIX)
    if alert in _SSLV3_ALERTS:
        return f"SSLV3_ALERT_{alert}"
    if alert in _TLSV13_ALERTS:
        return f"TLSV13_ALERT_{alert}"
    return f"TLSV1_ALERT_{alert}"


def _last(errors: Sequence[object]) -> tuple[str, str]:
    """The library and reason of the queue's last error, as the stdlib reports (ERR_peek_last_error)."""
    for entry in reversed(errors):
        if isinstance(entry, tuple) and len(entry) == 3:
            return str(entry[0] or ""), str(entry[2] or "")
    return "", ""


def as_ssl_error(errors: Sequence[object], verify_message: str | None) -> ssl.SSLError:
    """The ssl error the stdlib would raise for this queue (reason, library, verify message when verifying)."""
    library, text = _last(errors)
    name = reason_name(text)
    if name == UNEXPECTED_EOF:
        return eof_error()
    message = f"[{library.upper() or 'SSL'}: {name}] {text}" if name else "TLS failed"
    error: ssl.SSLError
    if name == VERIFY_FAILED:
        error = ssl.SSLCertVerificationError(1, f"{message} ({verify_message or 'verification failed'})")
        error.verify_message = verify_message or "verification failed"
    else:
        error = ssl.SSLError(1, message)
    error.reason = name
    error.library = library.upper().replace(" ", "_") or "SSL"
    return error


def eof_error() -> ssl.SSLEOFError:
    """The peer closed without close_notify (a reset or an end of stream), as the stdlib reports it."""
    error = ssl.SSLEOFError(8, "EOF occurred in violation of protocol")
    error.reason = UNEXPECTED_EOF
    error.library = "SSL"
    return error
