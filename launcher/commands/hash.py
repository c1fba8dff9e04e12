"""`sharness-launch hash FILE`: the manifest's hash, the value a person approves out of band."""

from __future__ import annotations

import argparse
import json
import sys

from launcher.commands import CommandError, fail, read_manifest
from pki.vocabulary import EXIT_OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `hash` subcommand."""
    parser = subparsers.add_parser("hash", help="validate a manifest and print its sha256:… hash")
    parser.add_argument("manifest", metavar="FILE", help="the manifest (JSON); '-' reads stdin")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print {file, sha256, canonical_bytes} as JSON")
    output.add_argument("--canonical", action="store_true", help="print the RFC 8785 canonical bytes instead")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the hash (or canonical bytes); 65 for a bad manifest, 66 for an unreadable file."""
    try:
        manifest = read_manifest(args.manifest)
    except CommandError as error:
        return fail(args, error)
    if args.canonical:
        sys.stdout.buffer.write(manifest.canonical)
        sys.stdout.buffer.flush()
    elif args.json:
        print(json.dumps({"ok": True, "file": args.manifest, "sha256": manifest.sha256,
                          "canonical_bytes": len(manifest.canonical)}, indent=2))
    else:
        print(manifest.sha256)
    return EXIT_OK
