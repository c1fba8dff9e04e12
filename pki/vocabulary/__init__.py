"""The project's vocabulary, declared once: roles, barrier kinds, the door fd contract and status codec, the
session id, the host paths, the exit codes, and the characters a person cannot read (legible). Pure, and
imports nothing of the project (tests/test_fence.py), so the launcher, every door and pki share it without
importing each other.

Each name loads its module on first use (PEP 562): every process imports this package, and all of it costs
~8 ms (typing, json, the legible tables) that the in-session `sharness-launch sh` needs two names of
(docs/decisions/bench.md, "Shell door").
"""

from __future__ import annotations

import sys

# Not `from typing import TYPE_CHECKING`: typing is ~15 ms of CPU on this VM (docs/decisions/bench.md,
# "shquick"), and mypy treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pki.vocabulary.addresses import EMBEDDED_V4, NEVER_INTERNAL, internal_range_problem
    from pki.vocabulary.barriers import BARRIER_KINDS, BOUNDARY, EXPECTATION, SETTING, UNHELD
    from pki.vocabulary.client_env import (
        COMMAND_PROXY_USER_PREFIX,
        MODEL_VARIABLES,
        NO_PROXY_VARIABLES,
        PROXY_VARIABLES,
        TRUST_VARIABLES,
    )
    from pki.vocabulary.exits import (
        CHILD_EXITS,
        EXIT_BAD_MANIFEST,
        EXIT_CONFINEMENT_FAILED,
        EXIT_DOOR_CRASHED,
        EXIT_EXEC_FAILED,
        EXIT_FAIL_CLOSED,
        EXIT_FAILED,
        EXIT_HASH_MISMATCH,
        EXIT_NO_INPUT,
        EXIT_NOT_ROOT,
        EXIT_OK,
        EXIT_PARENT_GONE,
        EXIT_SIGNAL_BASE,
        EXIT_STEP_BASE,
        EXIT_TTL,
        EXIT_UNAVAILABLE,
        EXIT_UNHELD,
        EXIT_USAGE,
        LAUNCHER_EXITS,
        ExitMeaning,
        child_exit_meaning,
        exit_codes_help,
    )
    from pki.vocabulary.fds import (
        DOOR_LISTENER,
        EGRESS_CA_ROW,
        FIRST_LISTENER_FD,
        MODEL_LISTENER_PREFIX,
        MOUNT_FD_ROW,
        MOUNT_OWNER_ROW,
        PROXY_LISTENER_PREFIX,
        STATUS_FD,
        SVID_FD,
    )
    from pki.vocabulary.json_text import json_of, lone_surrogate
    from pki.vocabulary.legible import Unreadable, escaped, unreadable, unreadable_char
    from pki.vocabulary.names import INJECT_FORMATS, SECRET_NAME_PATTERN, valid_secret_name
    from pki.vocabulary.paths import (
        AUDIT_ROOT,
        DEMO_ROOT,
        HELLO_ROOT,
        LAUNCHD_POLICY,
        LAUNCHD_SOCKET,
        LAUNCHD_STATE_ROOT,
        MACHINE_KEY_NAME,
        NETNS_ROOT,
        REMOVABLE_ROOTS,
        RUN_ROOT,
        SEALED_PREFIX,
        SEALED_ROOT,
        SEALED_SUFFIX,
        SESSIONS_ROOT,
        STATE_ROOT,
    )
    from pki.vocabulary.roles import DEFAULT_EDGES, DOOR_ORDER, ROLES
    from pki.vocabulary.sid import SID_BYTES, SID_LENGTH, SID_PATTERN, new_sid, valid_sid
    from pki.vocabulary.status import (
        AUDIT,
        DROPPED_BEFORE,
        FATAL,
        FINGERPRINT,
        FORBID,
        LOST,
        MAX_FATAL_DETAIL_CHARS,
        MAX_STATUS_BYTES,
        READY,
        STATUS_TYPES,
        audit_message,
        decode_status,
        encode_status,
        fatal_message,
        fingerprint_message,
        forbid_message,
        lost_message,
        ready_message,
    )

_HOMES = {
    "pki.vocabulary.addresses": ("EMBEDDED_V4", "NEVER_INTERNAL", "internal_range_problem"),
    "pki.vocabulary.barriers": ("BARRIER_KINDS", "BOUNDARY", "EXPECTATION", "SETTING", "UNHELD"),
    "pki.vocabulary.client_env": ("COMMAND_PROXY_USER_PREFIX", "MODEL_VARIABLES", "NO_PROXY_VARIABLES",
                                  "PROXY_VARIABLES", "TRUST_VARIABLES"),
    "pki.vocabulary.exits": ("CHILD_EXITS", "EXIT_BAD_MANIFEST", "EXIT_CONFINEMENT_FAILED", "EXIT_DOOR_CRASHED",
                             "EXIT_EXEC_FAILED", "EXIT_FAIL_CLOSED", "EXIT_FAILED", "EXIT_HASH_MISMATCH",
                             "EXIT_NO_INPUT", "EXIT_NOT_ROOT", "EXIT_OK", "EXIT_PARENT_GONE", "EXIT_SIGNAL_BASE",
                             "EXIT_STEP_BASE", "EXIT_TTL", "EXIT_UNAVAILABLE", "EXIT_UNHELD", "EXIT_USAGE",
                             "LAUNCHER_EXITS", "ExitMeaning", "child_exit_meaning", "exit_codes_help"),
    "pki.vocabulary.fds": ("DOOR_LISTENER", "EGRESS_CA_ROW", "FIRST_LISTENER_FD", "MODEL_LISTENER_PREFIX",
                           "MOUNT_FD_ROW", "MOUNT_OWNER_ROW", "PROXY_LISTENER_PREFIX", "STATUS_FD", "SVID_FD"),
    "pki.vocabulary.json_text": ("json_of", "lone_surrogate"),
    "pki.vocabulary.legible": ("Unreadable", "escaped", "unreadable", "unreadable_char"),
    "pki.vocabulary.names": ("INJECT_FORMATS", "SECRET_NAME_PATTERN", "valid_secret_name"),
    "pki.vocabulary.paths": ("AUDIT_ROOT", "DEMO_ROOT", "HELLO_ROOT", "LAUNCHD_POLICY", "LAUNCHD_SOCKET",
                             "LAUNCHD_STATE_ROOT", "MACHINE_KEY_NAME", "NETNS_ROOT", "REMOVABLE_ROOTS", "RUN_ROOT",
                             "SEALED_PREFIX", "SEALED_ROOT", "SEALED_SUFFIX", "SESSIONS_ROOT", "STATE_ROOT"),
    "pki.vocabulary.roles": ("DEFAULT_EDGES", "DOOR_ORDER", "ROLES"),
    "pki.vocabulary.sid": ("SID_BYTES", "SID_LENGTH", "SID_PATTERN", "new_sid", "valid_sid"),
    "pki.vocabulary.status": ("AUDIT", "DROPPED_BEFORE", "FATAL", "FINGERPRINT", "FORBID", "LOST",
                              "MAX_FATAL_DETAIL_CHARS", "MAX_STATUS_BYTES", "READY", "STATUS_TYPES", "audit_message",
                              "decode_status", "encode_status", "fatal_message", "fingerprint_message",
                              "forbid_message", "lost_message", "ready_message"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "AUDIT",
    "AUDIT_ROOT",
    "BARRIER_KINDS",
    "BOUNDARY",
    "CHILD_EXITS",
    "COMMAND_PROXY_USER_PREFIX",
    "DEFAULT_EDGES",
    "DEMO_ROOT",
    "DOOR_LISTENER",
    "DOOR_ORDER",
    "DROPPED_BEFORE",
    "EGRESS_CA_ROW",
    "EMBEDDED_V4",
    "EXIT_BAD_MANIFEST",
    "EXIT_CONFINEMENT_FAILED",
    "EXIT_DOOR_CRASHED",
    "EXIT_EXEC_FAILED",
    "EXIT_FAILED",
    "EXIT_FAIL_CLOSED",
    "EXIT_HASH_MISMATCH",
    "EXIT_NOT_ROOT",
    "EXIT_NO_INPUT",
    "EXIT_OK",
    "EXIT_PARENT_GONE",
    "EXIT_SIGNAL_BASE",
    "EXIT_STEP_BASE",
    "EXIT_TTL",
    "EXIT_UNAVAILABLE",
    "EXIT_UNHELD",
    "EXIT_USAGE",
    "EXPECTATION",
    "FATAL",
    "FINGERPRINT",
    "FIRST_LISTENER_FD",
    "FORBID",
    "HELLO_ROOT",
    "INJECT_FORMATS",
    "LAUNCHD_POLICY",
    "LAUNCHD_SOCKET",
    "LAUNCHD_STATE_ROOT",
    "LAUNCHER_EXITS",
    "LOST",
    "MACHINE_KEY_NAME",
    "MAX_FATAL_DETAIL_CHARS",
    "MAX_STATUS_BYTES",
    "MODEL_LISTENER_PREFIX",
    "MODEL_VARIABLES",
    "MOUNT_FD_ROW",
    "MOUNT_OWNER_ROW",
    "NETNS_ROOT",
    "NEVER_INTERNAL",
    "NO_PROXY_VARIABLES",
    "PROXY_LISTENER_PREFIX",
    "PROXY_VARIABLES",
    "READY",
    "REMOVABLE_ROOTS",
    "ROLES",
    "RUN_ROOT",
    "SEALED_PREFIX",
    "SEALED_ROOT",
    "SEALED_SUFFIX",
    "SECRET_NAME_PATTERN",
    "SESSIONS_ROOT",
    "SETTING",
    "SID_BYTES",
    "SID_LENGTH",
    "SID_PATTERN",
    "STATE_ROOT",
    "STATUS_FD",
    "STATUS_TYPES",
    "SVID_FD",
    "TRUST_VARIABLES",
    "UNHELD",
    "ExitMeaning",
    "Unreadable",
    "audit_message",
    "child_exit_meaning",
    "decode_status",
    "encode_status",
    "escaped",
    "exit_codes_help",
    "fatal_message",
    "fingerprint_message",
    "forbid_message",
    "internal_range_problem",
    "json_of",
    "lone_surrogate",
    "lost_message",
    "new_sid",
    "ready_message",
    "unreadable",
    "unreadable_char",
    "valid_secret_name",
    "valid_sid",
]


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'pki.vocabulary' has no attribute {name!r}")
    __import__(module)  # not importlib.import_module: importlib loads warnings, ~0.6 ms of CPU per `sh` call
    value = getattr(sys.modules[module], name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
