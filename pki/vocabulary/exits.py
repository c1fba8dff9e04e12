"""Exit codes: what `sharness-launch` returns, and what a confined child's code means before its own code ran.

The meaning of each is data (LAUNCHER_EXITS, CHILD_EXITS), so the CLI's help and the docs list them from here.
The sysexits.h names are noted where a code follows them.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1  # the command's answer is no (gc left something, the log is broken, fs refused, hello unheld)
EXIT_USAGE = 2  # argparse's code
EXIT_BAD_MANIFEST = 65  # EX_DATAERR
EXIT_NO_INPUT = 66  # EX_NOINPUT
EXIT_UNAVAILABLE = 69  # EX_UNAVAILABLE
EXIT_FAIL_CLOSED = 70  # EX_SOFTWARE
EXIT_NOT_ROOT = 77  # EX_NOPERM
EXIT_UNHELD = 78  # EX_CONFIG
EXIT_TTL = 124  # timeout(1)'s code
EXIT_HASH_MISMATCH = 125
EXIT_SIGNAL_BASE = 128  # + the signal's number, the shell's convention

# A forked component's own codes, before it runs the door's code or execs the app.
EXIT_DOOR_CRASHED = 122
EXIT_EXEC_FAILED = 127  # the shell's "command not found"
EXIT_PARENT_GONE = 199
EXIT_STEP_BASE = 200  # + the index of the confinement step that failed (launcher/kernel/confine.py STEPS)
EXIT_CONFINEMENT_FAILED = 240  # past the step codes (room for 40 steps): a failure outside any named step


class ExitMeaning:
    """One code (or the first of a range, shown as `label`) and what it tells a person.

    A plain class, not a NamedTuple: `typing` (with re, collections and contextlib) is ~15 ms of CPU on this VM
    that `sharness-launch sh` would pay to read two exit codes (docs/decisions/bench.md, "shquick")."""

    __slots__ = ("code", "label", "meaning")

    def __init__(self, code: int, label: str, meaning: str) -> None:
        self.code = code
        self.label = label
        self.meaning = meaning

    def __repr__(self) -> str:
        return f"ExitMeaning({self.code!r}, {self.label!r}, {self.meaning!r})"


LAUNCHER_EXITS: tuple[ExitMeaning, ...] = (
    ExitMeaning(EXIT_OK, "0", "done; `run` passes the app's own exit code through, but 65, 66, 70, 77, "
                "78, 124 and 125, the launcher's own, become 1 (and are said)"),
    ExitMeaning(EXIT_FAILED, "1", "the command's answer is no: `gc` left something, `verify-audit` found the log "
                "broken, `fs` was refused, `hello` saw a row not held, `secret list` found a sealed file that "
                "does not match (or a manifest naming one the store lacks), `secret add` found the name taken"),
    ExitMeaning(EXIT_USAGE, "2", "usage: a malformed option or argument"),
    ExitMeaning(EXIT_BAD_MANIFEST, "65", "the manifest is invalid (the message names the JSON pointer)"),
    ExitMeaning(EXIT_NO_INPUT, "66", "a file (the manifest, the audit log, the key, a sealed secret or the sealed "
                "store) cannot be read"),
    ExitMeaning(EXIT_UNAVAILABLE, "69", "`fs`: no fs door answered; the client: sharness-launchd did not answer"),
    ExitMeaning(EXIT_FAIL_CLOSED, "70", "a door died, the launcher failed, or the audit log reached "
                "`session.max_audit_mb`: the app was stopped (fail closed)"),
    ExitMeaning(EXIT_NOT_ROOT, "77", "not root, or sharness-launchd's policy does not let the caller ask for this: "
                "nothing was created"),
    ExitMeaning(EXIT_UNHELD, "78", "a row this machine or build cannot hold, or a preflight refusal (a root-owned "
                "workspace, a reachable socket): nothing was created; `render --strict`: a row the target cannot hold"),
    ExitMeaning(EXIT_TTL, "124", "the session TTL (session.ttl_s) ran out"),
    ExitMeaning(EXIT_HASH_MISMATCH, "125", "the manifest's hash is not the one approved, or there was none and no "
                "terminal to confirm one: nothing was created"),
    ExitMeaning(EXIT_SIGNAL_BASE, "128+N", "ended by signal N (the launcher's, or the app's)"),
)

CHILD_EXITS: tuple[ExitMeaning, ...] = (
    ExitMeaning(EXIT_DOOR_CRASHED, "122", "the door crashed"),
    ExitMeaning(EXIT_EXEC_FAILED, "127", "its command could not be executed"),
    ExitMeaning(EXIT_PARENT_GONE, "199", "the launcher was gone before the child was confined"),
    ExitMeaning(EXIT_STEP_BASE, "200+i", "confinement step i failed"),
    ExitMeaning(EXIT_CONFINEMENT_FAILED, "240", "its confinement could not be applied"),
)


def child_exit_meaning(code: int) -> str | None:
    """What a component's exit `code` means when it is one of the single child codes (not a step code)."""
    for entry in CHILD_EXITS:
        if entry.code == code and entry.label == str(code):
            return entry.meaning
    return None


def exit_codes_help() -> str:
    """The launcher's exit codes, one per line, for `--help`."""
    return "\n".join(f"  {entry.label:<6} {entry.meaning}" for entry in LAUNCHER_EXITS)
