"""The keys door: every secret of the session in one process, released only sealed to an edge-listed door."""

from doors.keys._policy import Ask, Grant, Ledger, SecretRow, decide, secret_rows
from doors.keys._request import RELEASE_PATH, parse_ask
from doors.keys._seal import SUITE_NAME, Binding, OneTimeKey, public_key_from, seal
from doors.keys.client import new_request_id, release
from doors.keys.server import KeysDoor, build, read_secret_fd, read_secrets

__all__ = [
    "RELEASE_PATH",
    "SUITE_NAME",
    "Ask",
    "Binding",
    "Grant",
    "KeysDoor",
    "Ledger",
    "OneTimeKey",
    "SecretRow",
    "build",
    "decide",
    "new_request_id",
    "parse_ask",
    "public_key_from",
    "read_secret_fd",
    "read_secrets",
    "release",
    "seal",
    "secret_rows",
]
