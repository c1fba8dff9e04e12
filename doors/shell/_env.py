"""A command's environment: built from nothing, plus what the caller asked for and the rules allow. Pure.

A name the caller gives is refused (row `shell.env`) when it
- makes a program load or run code before its own: the dynamic loader's `LD_*`, a shell's start-up files
  and hooks (`BASH_ENV`, `ENV`, `PROMPT_COMMAND`, exported functions `BASH_FUNC_*`), an interpreter's
  start-up code or options (`PYTHONSTARTUP`, `PYTHONINSPECT`, `PERL5OPT`, `PERL5DB`, `RUBYOPT`,
  `NODE_OPTIONS`, `JAVA_TOOL_OPTIONS`, `_JAVA_OPTIONS`), git's injected configuration (`GIT_CONFIG_*`);
- or replaces what the door sets itself (HOME, TMPDIR, the proxy variables, `GIT_TERMINAL_PROMPT`,
  `DEBIAN_FRONTEND`, anything `SHARNESS_*`).
A value is refused when it holds a private key (the fs door's detector, doors/fs/_secrets.py) or a token's
shape (pki/secret_shapes.py, the audit guard's: `ghp_…`, `sk-ant-…`, `AKIA…`, JWTs, a password in a URL, …),
so a credential the agent was tricked into pasting does not reach a command that could send it out.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from doors._refusal import DoorRefused, Refusal
from doors.fs import scan
from pki.bundle import system_store
from pki.secret_shapes import secret_shape
from pki.vocabulary import (
    COMMAND_PROXY_USER_PREFIX,
    MODEL_VARIABLES,
    NO_PROXY_VARIABLES,
    PROXY_VARIABLES,
    TRUST_VARIABLES,
)

MAX_VARIABLES = 256
MAX_VALUE_BYTES = 32 * 1024
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
FIXED = (("GIT_TERMINAL_PROMPT", "0"), ("DEBIAN_FRONTEND", "noninteractive"), ("LANG", "C.UTF-8"),
         ("PAGER", "cat"), ("GIT_PAGER", "cat"))
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
TRUST_BUNDLE_NAME = ".sharness-egress-bundle.pem"  # in HOME: the system store plus the egress CA
# (the rule, the names it refuses exactly, the prefixes it refuses)
DENY: tuple[tuple[str, frozenset[str], tuple[str, ...]], ...] = (
    ("the dynamic loader would load code it names", frozenset(), ("LD_",)),
    ("a shell would run code it names before the command",
     frozenset({"BASH_ENV", "ENV", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PS4", "IFS"}), ("BASH_FUNC_",)),
    ("an interpreter would run code or options it names before the program",
     frozenset({"PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONHOME", "PERL5OPT", "PERL5DB", "PERLLIB", "RUBYOPT",
                "NODE_OPTIONS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS"}), ()),
    ("git would take configuration it injects", frozenset({"GIT_CONFIG", "GIT_EXEC_PATH"}), ("GIT_CONFIG_",)),
    ("the door sets it itself",
     frozenset({"HOME", "TMPDIR", *NO_PROXY_VARIABLES, *PROXY_VARIABLES, *MODEL_VARIABLES,
                *(name for name, _ in FIXED)}),
     ("SHARNESS_",)),
)


def denied_because(name: str) -> str | None:
    """Why a variable named `name` may not be set by the caller, or None."""
    for reason, names, prefixes in DENY:
        if name in names or name.startswith(prefixes):
            return reason
    return None


def _refused(name: str, detail: str, status: int = 403) -> DoorRefused:
    return DoorRefused(Refusal(status, "shell.env", "shell", detail,
                               f"leave {name[:128]} out of env: the shell door's env rules are fixed "
                               "(doors/shell/README.md)"))


def _refuse_secret(name: str, text: str) -> None:
    finding = scan(text.encode())
    shape = finding.kind if finding is not None else secret_shape(text)
    if shape is not None:
        raise DoorRefused(Refusal(
            403, "shell.env", "shell", f"env {name} is refused: its value looks like a secret ({shape}; not shown)",
            f"leave {name[:128]} out of env: a credential reaches a command only through the keys door "
            "(doors.keys.secrets.<name> with its hosts; the net door injects it), never as a value"))


def check_env(value: Any) -> tuple[tuple[str, str], ...]:
    """The caller's variables, sorted by name, or DoorRefused (row shell.env) naming the first one refused.
    The refusal never holds a value."""
    if value is None:
        return ()
    if not isinstance(value, dict) or len(value) > MAX_VARIABLES:
        raise _refused("env", f"env must be an object of at most {MAX_VARIABLES} names and string values", 400)
    checked = []
    for name, text in sorted(value.items()):
        if not isinstance(name, str) or _NAME.fullmatch(name) is None:
            raise _refused(str(name), f"env name {str(name)[:128]!r} is not [A-Za-z_][A-Za-z0-9_]*", 400)
        if not isinstance(text, str) or "\0" in text or len(text.encode()) > MAX_VALUE_BYTES:
            raise _refused(name, f"env {name}: the value must be a string of at most {MAX_VALUE_BYTES} bytes "
                           "with no NUL", 400)
        reason = denied_because(name)
        if reason is not None:
            raise _refused(name, f"env {name} is refused: {reason}")
        _refuse_secret(name, text)
        checked.append((name, text))
    return tuple(checked)


def command_env(asked: tuple[tuple[str, str], ...], home: str, tmpdir: str, proxy: str | None,
                tty: bool, model: Mapping[str, str] | None = None, trust: str | None = None) -> dict[str, str]:
    """The whole environment of one command: the fixed variables, HOME and TMPDIR on the shell's scratch,
    the proxy (when the edge shell→net exists), the trust variables (`trust`: the bundle holding the egress CA,
    when a host has a bound credential), the model door's listener (edge shell→model: what the launcher gives
    the app, its NO_PROXY included), then what the caller asked for (already checked)."""
    env: dict[str, str] = {"PATH": DEFAULT_PATH, "HOME": home, "TMPDIR": tmpdir, **dict(FIXED),
                           "TERM": "xterm-256color" if tty else "dumb"}
    if proxy is not None:
        env.update(dict.fromkeys(PROXY_VARIABLES, proxy))
        env.update(dict.fromkeys(NO_PROXY_VARIABLES, "localhost,127.0.0.1,::1"))  # the namespace's own loopback
        if trust is not None:
            env.update(dict.fromkeys(TRUST_VARIABLES, trust))
    if model is not None:
        env.update(model)
    env.update(asked)
    return env


def write_trust_bundle(home: str, egress_ca_pem: object) -> str | None:
    """Write what commands trust for TLS when a host has a bound credential (the net door answers for it with a
    leaf of the session's egress CA): this machine's store plus that CA, read-only in HOME. None without one."""
    if not isinstance(egress_ca_pem, str):
        return None
    path = os.path.join(home, TRUST_BUNDLE_NAME)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444)
    try:
        os.write(fd, system_store() + egress_ca_pem.encode())
    finally:
        os.close(fd)
    return path


def command_proxy(proxy: str | None, command_id: str) -> str | None:
    """The proxy URL one command gets: the shell's, its user the command's label (`http://cmd-c5@127.0.0.1:3128`),
    which clients send as Proxy-Authorization and the net door writes into its events (a label the command could
    change: docs/decisions/net.md, "Command label")."""
    if proxy is None:
        return None
    scheme, sep, rest = proxy.partition("://")
    return f"{scheme}{sep}{COMMAND_PROXY_USER_PREFIX}{command_id}@{rest}" if sep and "@" not in rest else proxy


def env_names(env: Mapping[str, str]) -> list[str]:
    """The names only (what an audit event may show of an environment)."""
    return sorted(env)
