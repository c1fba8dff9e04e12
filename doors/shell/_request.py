"""The run request's wire form: a JSON body in, a RunRequest (or a 400 naming the field) out. Pure: no I/O.

A command is `argv` (run as given, no shell) or `script` (run as `<shell> -c <script>`, the shell `/bin/sh`
unless named). `cwd` is relative to the workspace: it is checked here for its form (no absolute path, no
`..`), and resolved by the door with openat2 RESOLVE_BENEATH, so a symlink cannot lead it out either.
stdin is none by default (the command reads EOF at once), or the bytes given.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from doors._refusal import DoorRefused, Refusal
from doors.shell._env import check_env

WHO = "shell"
FIELDS = ("argv", "script", "shell", "cwd", "env", "stdin", "timeout_ms", "max_output_bytes", "tty", "apply")
MAX_ARGS = 4096
MAX_ARGV_BYTES = 256 * 1024
MAX_SCRIPT_BYTES = 256 * 1024
MAX_STDIN_BYTES = 1024 * 1024
MAX_BODY_BYTES = MAX_ARGV_BYTES + MAX_SCRIPT_BYTES + 2 * MAX_STDIN_BYTES + 64 * 1024
DEFAULT_SHELL = "/bin/sh"
DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 24 * 3600 * 1000
DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024  # per stream
MIN_MAX_OUTPUT_BYTES = 256
MAX_MAX_OUTPUT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class RunRequest:
    """One command as the door runs it: what to execute, where, with what, and its bounds."""

    argv: tuple[str, ...]  # what is executed: the argv given, or (shell, "-c", script)
    script: bool  # whether argv came from a script (the audit then shows its hash, not its text)
    cwd: str  # relative to the workspace, normalised ("." for the root)
    env: tuple[tuple[str, str], ...]
    stdin: bytes | None
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    tty: bool = False
    stdin_pipe: bool = False  # start only: stdin stays open for write(id) until closed or the command ends
    apply: bool = False  # run only, overlay mode: apply the overlay through the fs door once it exited 0

    def audit_command(self) -> dict[str, Any]:
        """What the audit shows of the command: argv, or the script's sha256 and length (never its text)."""
        if not self.script:
            return {"argv": list(self.argv)}
        text = self.argv[-1].encode()
        return {"shell": self.argv[0], "script_sha256": hashlib.sha256(text).hexdigest(), "script_bytes": len(text)}


def bad(field: str, detail: str, row: str | None = None, status: int = 400) -> DoorRefused:
    """A refusal of one field of the request."""
    return DoorRefused(Refusal(status, row or f"shell.request.{field}", WHO, detail,
                               "send {argv | script [+ shell], cwd, env, stdin, timeout_ms, max_output_bytes, tty} "
                               "as doors/shell/client.py does"))


def _strings(value: Any, field: str, max_items: int, max_bytes: int) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or len(value) > max_items:
        raise bad(field, f"{field} must be a list of 1 to {max_items} strings")
    if not all(isinstance(item, str) for item in value):
        raise bad(field, f"every item of {field} must be a string")
    if any("\0" in item for item in value):
        raise bad(field, f"an item of {field} holds a NUL byte")
    if sum(len(item.encode()) for item in value) > max_bytes:
        raise bad(field, f"{field} is larger than {max_bytes} bytes")
    return tuple(value)


def _command(body: Mapping[str, Any]) -> tuple[tuple[str, ...], bool]:
    has_argv, has_script = "argv" in body, "script" in body
    if has_argv == has_script:
        raise bad("argv", "give exactly one of argv (a list of strings) or script (a string)")
    if has_argv:
        if "shell" in body:
            raise bad("shell", "shell names the interpreter of a script: with argv, put it in argv[0]")
        return _strings(body["argv"], "argv", MAX_ARGS, MAX_ARGV_BYTES), False
    script = body["script"]
    if not isinstance(script, str) or "\0" in script or len(script.encode()) > MAX_SCRIPT_BYTES:
        raise bad("script", f"script must be a string of at most {MAX_SCRIPT_BYTES} bytes with no NUL")
    shell = body.get("shell", DEFAULT_SHELL)
    if not isinstance(shell, str) or not shell or "\0" in shell or len(shell) > 4096:
        raise bad("shell", "shell must be a program name or path, such as /bin/bash")
    return (shell, "-c", script), True


def normalise_cwd(value: Any) -> str:
    """The relative directory `value` names, normalised; DoorRefused 403 (row shell.cwd) when it could leave
    the workspace by its form (absolute, `..`)."""
    if value is None:
        return "."
    if not isinstance(value, str) or "\0" in value or len(value) > 4096:
        raise bad("cwd", "cwd must be a path of at most 4096 characters with no NUL")
    if value.startswith("/"):
        raise bad("cwd", f"cwd {value[:200]!r} is absolute: it is relative to the workspace", "shell.cwd", 403)
    parts = [part for part in value.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise bad("cwd", f"cwd {value[:200]!r} climbs with '..': it must stay inside the workspace", "shell.cwd",
                  403)
    return "/".join(parts) or "."


def _stdin(value: Any) -> bytes | None:
    if value is None or value in ("none", "pipe"):
        return None
    if isinstance(value, str):
        data = value.encode()
    elif isinstance(value, dict) and set(value) == {"base64"} and isinstance(value["base64"], str):
        try:
            data = base64.b64decode(value["base64"], validate=True)
        except (binascii.Error, ValueError):
            raise bad("stdin", "stdin.base64 is not valid base64") from None
    else:
        raise bad("stdin", 'stdin must be "none" (the default: EOF at once), a string, {"base64": ...}, or "pipe" '
                  "(start only: written with write)")
    if len(data) > MAX_STDIN_BYTES:
        raise bad("stdin", f"stdin is larger than {MAX_STDIN_BYTES} bytes", status=413)
    return data


def _integer(body: Mapping[str, Any], field: str, default: int, low: int, high: int) -> int:
    value = body.get(field, default)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise bad(field, f"{field} must be an integer from {low} to {high}")
    return value


def parse_run(body: Any, *, started: bool = False) -> RunRequest:
    """The RunRequest a JSON body asks for (`started`: by start, which may keep stdin open), or DoorRefused
    naming the field (400) or the row (403)."""
    if not isinstance(body, dict):
        raise bad("body", "the body must be a JSON object")
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise bad("body", f"unknown field(s): {unknown[:5]}")
    argv, script = _command(body)
    tty = body.get("tty", False)
    if not isinstance(tty, bool):
        raise bad("tty", "tty must be true or false")
    if body.get("stdin") == "pipe" and not started:
        raise bad("stdin", 'stdin "pipe" is for start (then write to it); run takes "none", a string or base64')
    apply = body.get("apply", False)
    if not isinstance(apply, bool) or (apply and started):
        raise bad("apply", "apply must be true or false, and only on run (after start, call apply)")
    return RunRequest(
        argv=argv, script=script, cwd=normalise_cwd(body.get("cwd")), env=check_env(body.get("env")),
        stdin=_stdin(body.get("stdin")),
        timeout_ms=_integer(body, "timeout_ms", DEFAULT_TIMEOUT_MS, 1, MAX_TIMEOUT_MS),
        max_output_bytes=_integer(body, "max_output_bytes", DEFAULT_MAX_OUTPUT_BYTES, MIN_MAX_OUTPUT_BYTES,
                                  MAX_MAX_OUTPUT_BYTES),
        tty=tty, stdin_pipe=body.get("stdin") == "pipe", apply=apply,
    )
