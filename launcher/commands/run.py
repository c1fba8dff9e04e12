"""`sharness-launch [run] MANIFEST --expect-hash sha256:…`: run a confined session from a verified manifest."""

from __future__ import annotations

import argparse
import hmac
import json
import os
import sys
from typing import TYPE_CHECKING

from pki.vocabulary import AUDIT_ROOT, EXIT_HASH_MISMATCH, EXIT_NOT_ROOT, EXIT_UNHELD

if TYPE_CHECKING:
    from launcher.manifest import Manifest

CONFIRM_HEX = 12


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run a confined session from a manifest whose hash you supply")
    parser.add_argument("manifest", help="the manifest file (JSON)")
    parser.add_argument("--expect-hash", metavar="sha256:HEX",
                        help="the hash you approved out of band (`sharness-launch hash FILE`)")
    parser.add_argument("--best-effort", action="store_true",
                        help="run even when this machine cannot hold some rows; they are reported unheld")
    parser.add_argument("--audit-dir", metavar="DIR", default=None,
                        help=f"where session audit logs go (default {AUDIT_ROOT})")
    parser.add_argument("--json", action="store_true", help="print the session summary as JSON on stdout")
    parser.set_defaults(func=run)


def _err(text: str) -> None:
    print(f"sharness-launch: {text}", file=sys.stderr)


def _confirm_on_terminal(manifest: Manifest, plan_text: str) -> bool:
    print(plan_text, file=sys.stderr)
    print(f"manifest hash: {manifest.sha256}", file=sys.stderr)
    try:
        typed = input(f"type the first {CONFIRM_HEX} hex characters of the hash to run it: ").strip().lower()
    except EOFError:
        return False
    want = manifest.sha256.removeprefix("sha256:")[:CONFIRM_HEX]
    return hmac.compare_digest(typed.removeprefix("sha256:"), want)


def run(args: argparse.Namespace) -> int:
    from launcher.commands import CommandError, expected_hash, fail, read_manifest

    if os.geteuid() != 0:
        _err("the launcher must run as root (it creates users, namespaces and cgroups): use sudo; nothing was created")
        return EXIT_NOT_ROOT
    try:
        manifest = read_manifest(args.manifest)
        want = expected_hash(args.expect_hash) if args.expect_hash is not None else None
    except CommandError as error:
        return fail(args, error)

    from launcher.kernel.probe import probe_kernel
    from launcher.policy.plan import build_plan, render_plan

    facts = probe_kernel()
    plan = build_plan(manifest, facts)
    if want is None:
        if not sys.stdin.isatty():
            _err("no --expect-hash and stdin is not a terminal: approve the hash from `sharness-launch check "
                 f"{args.manifest}` and pass it with --expect-hash; nothing was created")
            return EXIT_HASH_MISMATCH
        if not _confirm_on_terminal(manifest, render_plan(plan)):
            _err("the typed characters do not match the manifest hash; nothing was created")
            return EXIT_HASH_MISMATCH
    elif not hmac.compare_digest(want, manifest.sha256):
        _err(f"hash mismatch: expected {want}, the manifest is {manifest.sha256}; nothing was created")
        return EXIT_HASH_MISMATCH

    unheld = [row for row in plan.rows if not row.held]
    if unheld and not args.best_effort:
        _err(f"{len(unheld)} row(s) cannot be held here; nothing was created:")
        for row in unheld:
            who = "this kernel cannot hold it" if not row.kernel_can_hold else "not built yet"
            _err(f"  {row.component}: {row.row_id} ({who}): {row.why_unheld}")
        _err("change the manifest, or run with --best-effort to run those rows unheld")
        return EXIT_UNHELD

    from launcher.lifecycle import sweep
    from launcher.lifecycle.preflight import PreflightError
    from launcher.lifecycle.session import RunOptions, Session

    sweep.collect()
    options = RunOptions(audit_root=args.audit_dir or AUDIT_ROOT, progress=_err)
    try:
        result = Session(manifest, facts, options).run()
    except PreflightError as refusal:
        _err(f"{refusal.message}; nothing was created")
        _err(f"  hint: {refusal.hint} (manifest row: {refusal.row})")
        return EXIT_UNHELD
    summary = {
        "sid": result.sid,
        "exit_code": result.exit_code,
        "reason": result.reason,
        "unheld_rows": [f"{row.component}:{row.row_id}" for row in unheld],
        "audit_dir": result.audit_dir,
        "audit_public_key": result.audit_public_key,
        "timings_ms": result.timings_ms,
        "teardown_errors": result.teardown_errors,
    }
    _err(f"session {result.sid} ended: {result.reason}")
    _err(f"audit log {result.audit_dir}; session public key:\n{result.audit_public_key.strip()}")
    if unheld:
        names = ", ".join(f"{row.component}:{row.row_id}" for row in unheld)
        _err(f"{len(unheld)} row(s) ran unheld (--best-effort): {names}")
    for leftover in result.teardown_errors:
        _err(f"teardown could not remove: {leftover} (run `sharness-launch gc`)")
    if args.json:
        print(json.dumps(summary, indent=2))
    return result.exit_code
