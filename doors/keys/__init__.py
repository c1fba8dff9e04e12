"""The keys door: every secret of the session in one process, released only sealed to an edge-listed door.

The pure parts (at rest, policy, request, seal) load with the package; the client and the server, which need the
door runtime (trio, the transport: ~100 ms), load on first use of one of their names (PEP 562), so the launcher's
preflight and `sharness-launch secret` do not pay for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from doors.keys._at_rest import (
    KEY_HEADER_BYTES,
    MAX_SEALED_BYTES,
    MAX_VALUE_BYTES,
    MachineKey,
    SealedFileError,
    SealedHeader,
    check_sealed,
    key_id_of_header,
    machine_key_file,
    machine_key_of,
    open_value,
    read_header,
    seal_value,
    sealed_file,
    sealed_name,
    secret_value,
    valid_name,
)
from doors.keys._policy import Ask, Grant, Ledger, SecretRow, decide, secret_rows
from doors.keys._request import RELEASE_PATH, parse_ask
from doors.keys._seal import SUITE_NAME, Binding, OneTimeKey, public_key_from, seal

if TYPE_CHECKING:
    from doors.keys.client import new_request_id, release
    from doors.keys.server import KeysDoor, build, read_secret_fd, read_secrets

_HOME_OF = {"new_request_id": "doors.keys.client", "release": "doors.keys.client", "KeysDoor": "doors.keys.server",
            "build": "doors.keys.server", "read_secret_fd": "doors.keys.server", "read_secrets": "doors.keys.server"}

__all__ = [
    "KEY_HEADER_BYTES",
    "MAX_SEALED_BYTES",
    "MAX_VALUE_BYTES",
    "RELEASE_PATH",
    "SUITE_NAME",
    "Ask",
    "Binding",
    "Grant",
    "KeysDoor",
    "Ledger",
    "MachineKey",
    "OneTimeKey",
    "SealedFileError",
    "SealedHeader",
    "SecretRow",
    "build",
    "check_sealed",
    "decide",
    "key_id_of_header",
    "machine_key_file",
    "machine_key_of",
    "new_request_id",
    "open_value",
    "parse_ask",
    "public_key_from",
    "read_header",
    "read_secret_fd",
    "read_secrets",
    "release",
    "seal",
    "seal_value",
    "sealed_file",
    "sealed_name",
    "secret_rows",
    "secret_value",
    "valid_name",
]


def __getattr__(name: str) -> Any:
    """Import the client or the server module that holds `name` (once) and hand back its value."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'doors.keys' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
