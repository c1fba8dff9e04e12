"""The CLI's commands, one module each with `register(subparsers)`; the shared refusal and manifest reading."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from launcher.manifest import MAX_BYTES, Manifest, ManifestError, load_manifest
from pki.vocabulary import EXIT_BAD_MANIFEST, EXIT_NO_INPUT, EXIT_USAGE, escaped

_HASH = re.compile(r"^sha256:[0-9a-f]{64}$")


class CommandError(Exception):
    """A command refuses: exit code, what went wrong, what to change, and JSON details."""

    def __init__(self, exit_code: int, message: str, hint: str = "", **details: Any) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.message = message
        self.hint = hint
        self.details = details


def read_manifest(path: str) -> Manifest:
    """Read and load the manifest at `path` ('-' is stdin); raise CommandError (65 or 66) on refusal."""
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(MAX_BYTES + 1)
        else:
            with open(path, "rb") as handle:
                raw = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise CommandError(EXIT_NO_INPUT, f"cannot read {escaped(path)}: {exc.strerror or exc}",
                           "check the path and that you may read it", error="unreadable", file=path) from None
    try:
        return load_manifest(raw)
    except ManifestError as exc:
        raise CommandError(EXIT_BAD_MANIFEST, f"{escaped(path)}: {exc}", exc.hint, error="bad_manifest",
                           pointer=exc.pointer, file=path) from None


def expected_hash(text: str) -> str:
    """Normalise a hash given on the command line; raise CommandError (usage) when it is not sha256:<hex>."""
    normal = text.strip().lower()
    if not _HASH.match(normal):
        raise CommandError(EXIT_USAGE, f"--expect-hash {text!r} is not sha256:<64 hex digits>",
                           "copy the hash that `sharness-launch hash FILE` prints", error="usage")
    return normal


def fail(args: argparse.Namespace, error: CommandError) -> int:
    """Report a refusal (JSON on stdout with --json, else text on stderr) and return its exit code."""
    if getattr(args, "json", False):
        payload = {"ok": False, "error": "refused", "message": error.message, "hint": error.hint}
        payload.update(error.details)
        print(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        print(f"sharness-launch: {error.message}", file=sys.stderr)
        if error.hint:
            print(f"  hint: {error.hint}", file=sys.stderr)
    return error.exit_code
