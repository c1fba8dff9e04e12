"""`sharness-launch [run] MANIFEST --expect-hash sha256:…`: run a confined session from a verified manifest."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from pki.vocabulary import AUDIT_ROOT, EXIT_HASH_MISMATCH, EXIT_NOT_ROOT, EXIT_UNHELD

if TYPE_CHECKING:
    from launcher.kernel.probe_facts import KernelFacts
    from launcher.lifecycle.session import SessionResult
    from launcher.manifest import Manifest
    from launcher.policy.approval import Confirm, Refusal
    from launcher.policy.plan import Plan, PlanRow



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
    parser.add_argument("--via-daemon", action="store_true",
                        help="ask sharness-launchd even as root (as any other user, its socket's presence is enough)")
    parser.set_defaults(func=run)


def _err(text: str) -> None:
    print(f"sharness-launch: {text}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """The gate, then the act: nothing is created unless the gate lets the manifest through."""
    from launcher.commands import CommandError, expected_hash, fail, read_manifest

    if args.via_daemon or os.geteuid() != 0:
        from launcher.commands.daemon_client import daemon_present

        if args.via_daemon or daemon_present():
            return _through_daemon(args)
        _err("the launcher must run as root (it creates users, namespaces and cgroups): use sudo; nothing was created")
        return EXIT_NOT_ROOT
    try:
        manifest = read_manifest(args.manifest)
        want = expected_hash(args.expect_hash) if args.expect_hash is not None else None
    except CommandError as error:
        return fail(args, error)

    from launcher.kernel.probe import probe_kernel
    from launcher.policy.approval import unheld_rows
    from launcher.policy.plan import build_plan

    facts = probe_kernel()
    plan = build_plan(manifest, facts)
    refusal = _gate(args, manifest, want, plan)
    if refusal is not None:
        for line in refusal.lines:
            _err(line)
        return EXIT_HASH_MISMATCH if refusal.gate == "hash" else EXIT_UNHELD
    return _act(args, manifest, facts, unheld_rows(plan.rows))


def _through_daemon(args: argparse.Namespace) -> int:
    """Not root (or --via-daemon): the same session, created by sharness-launchd within its policy."""
    from launcher.commands import CommandError, expected_hash, fail, read_manifest
    from launcher.commands.daemon_client import run_through_daemon

    try:
        manifest = read_manifest(args.manifest)
        if args.expect_hash is None:
            raise CommandError(EXIT_HASH_MISMATCH, "sharness-launchd runs only a manifest whose hash you pass",
                               f"approve it, then pass --expect-hash {manifest.sha256} (`sharness-launch hash FILE`);"
                               " nothing was created", error="no_hash")
        want = expected_hash(args.expect_hash)
    except CommandError as error:
        return fail(args, error)
    return run_through_daemon(manifest.canonical, want, best_effort=args.best_effort, summary_json=args.json)


def _gate(args: argparse.Namespace, manifest: Manifest, want: str | None, plan: Plan) -> Refusal | None:
    """The approval (hash or terminal confirmation), then the rows this machine cannot hold."""
    from launcher.policy.approval import Confirm, confirmation_gate, hash_gate, rows_gate

    verdict = hash_gate(want, manifest.sha256, terminal=want is None and sys.stdin.isatty(),
                        manifest_path=args.manifest)
    if isinstance(verdict, Confirm):
        verdict = confirmation_gate(verdict, _ask(verdict, plan))
    return verdict or rows_gate(plan.rows, best_effort=args.best_effort)


def _ask(confirm: Confirm, plan: Plan) -> str | None:
    """Show the plan and the hash on stderr, read the person's answer; None when the terminal closes."""
    from launcher.policy.plan_render import render_plan

    print(render_plan(plan), file=sys.stderr)
    print(confirm.shown, file=sys.stderr)
    try:
        return input(confirm.prompt)
    except EOFError:
        return None


def _act(args: argparse.Namespace, manifest: Manifest, facts: KernelFacts, unheld: tuple[PlanRow, ...]) -> int:
    """Sweep what dead sessions left, run the session, report it; its exit code is the app's, unless that is one
    of the launcher's own (launcher/policy/verdict.py)."""
    from launcher.lifecycle import sweep
    from launcher.lifecycle.preflight import PreflightError
    from launcher.lifecycle.session import RunOptions, Session

    sweep.collect(wait=False)  # a session being created now: its sweep is the next start's
    options = RunOptions(audit_root=args.audit_dir or AUDIT_ROOT, progress=_err, summary_on_stdout=args.json,
                         on_journaled=getattr(args, "on_journaled", None),  # set by sharness-launchd's runner
                         caller_uid=getattr(args, "caller_uid", None))
    try:
        result = Session(manifest, facts, options).run()
    except PreflightError as refusal:
        _err(f"{refusal.message}; nothing was created")
        _err(f"  hint: {refusal.hint}" + (f" (manifest row: {refusal.row})" if refusal.row else ""))
        return EXIT_UNHELD
    _report(args, result, unheld)
    return result.exit_code


def _report(args: argparse.Namespace, result: SessionResult, unheld: tuple[PlanRow, ...]) -> None:
    from launcher.policy.approval import row_names

    _err(f"session {result.sid} ended: {result.reason}")
    _err(f"audit log {result.audit_dir}; session public key:\n{result.audit_public_key.strip()}")
    if unheld:
        _err(f"{len(unheld)} row(s) ran unheld (--best-effort): {', '.join(row_names(unheld))}")
    if result.model_spend is not None:
        _err(result.model_spend.words())
    for leftover in result.teardown_errors:
        _err(f"teardown could not remove: {leftover} (run `sharness-launch gc`)")
    if args.json:
        summary = {
            "sid": result.sid,
            "exit_code": result.exit_code,
            "app_exit_code": result.app_exit_code,
            "reason": result.reason,
            "unheld_rows": row_names(unheld),
            "audit_dir": result.audit_dir,
            "audit_public_key": result.audit_public_key,
            "timings_ms": result.timings_ms,
            "teardown_errors": result.teardown_errors,
            **({"model_spend": result.model_spend.as_dict()} if result.model_spend is not None else {}),
        }
        print(json.dumps(summary, indent=2))
