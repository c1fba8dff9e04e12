"""`sharness-launch verify-audit DIR`: says whether a session's audit log is intact (and how many events its
`audit.lost` lines count), or where it breaks."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

from launcher.lifecycle.audit_keys import registered_key
from launcher.lifecycle.audit_verify import DIRECTORY_ANCHOR, LOG_NAME, PUB_NAME, SIG_NAME, log_sid, verify_audit
from pki.vocabulary import EXIT_FAILED, EXIT_NO_INPUT, EXIT_OK, valid_sid


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `verify-audit` subcommand."""
    parser = subparsers.add_parser("verify-audit",
                                   help="check an audit log: intact (N events lost), or broken at line N")
    parser.add_argument("directory", metavar="DIR", help=f"the audit dir ({LOG_NAME}, {SIG_NAME}, {PUB_NAME})")
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")
    parser.add_argument(
        "--pubkey",
        metavar="FILE",
        help="the session's public key as the launcher printed it (without it the launcher's key registry "
        "beside the audit root is trusted; with neither, DIR/audit.pub, said as an unverified key)",
    )
    parser.set_defaults(func=run)


def _read(path: str, *, required: bool) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        if required:
            raise
        return None


def run(args: argparse.Namespace) -> int:
    """Print the verdict; exit 0 intact, 1 broken, 66 when the log or the key file cannot be read."""
    try:
        log_bytes = _read(os.path.join(args.directory, LOG_NAME), required=True)
        trusted = _read(args.pubkey, required=True) if args.pubkey else None
        sig_bytes = _read(os.path.join(args.directory, SIG_NAME), required=False)
        pub_pem = _read(os.path.join(args.directory, PUB_NAME), required=False)
    except OSError as exc:
        print(f"sharness-launch verify-audit: cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        print(f"  hint: DIR is the session's audit directory, holding {LOG_NAME}", file=sys.stderr)
        return EXIT_NO_INPUT
    assert log_bytes is not None
    named = os.path.basename(os.path.normpath(args.directory))
    expected = named if valid_sid(named) else None
    anchor = "--pubkey"
    if trusted is None:
        trusted, why = registered_key(args.directory, expected or log_sid(log_bytes) or "")
        anchor = "the registry" if trusted is not None else DIRECTORY_ANCHOR
        if trusted is None and not args.json:
            print(f"sharness-launch verify-audit: {why}", file=sys.stderr)
    verdict = verify_audit(log_bytes, sig_bytes, pub_pem, trusted_pub_pem=trusted, anchor=anchor,
                           expected_sid=expected)
    if args.json:
        print(json.dumps(dataclasses.asdict(verdict), indent=2))
    else:
        print(verdict.describe())
    return EXIT_OK if verdict.intact else EXIT_FAILED
