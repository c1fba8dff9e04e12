"""`sharness-launch hello`: the acceptance test a newcomer runs — a real session with a probe app."""

from __future__ import annotations

import argparse
import json
import os
import sys

from pki.vocabulary import AUDIT_ROOT, EXIT_FAILED, EXIT_NOT_ROOT, EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("hello", help="run a real session whose app tries what it must not do")
    parser.add_argument("--json", action="store_true", help="print the probes as JSON")
    parser.add_argument("--audit-dir", metavar="DIR", default=None)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        print("sharness-launch: hello starts a real session and must run as root: use sudo", file=sys.stderr)
        return EXIT_NOT_ROOT
    from launcher.commands.run import EXIT_UNHELD
    from launcher.hello import render, run_hello
    from launcher.kernel.probe import probe_kernel
    from launcher.lifecycle import sweep
    from launcher.lifecycle.preflight import PreflightError

    sweep.collect(wait=False)  # a session being created now: its sweep is the next start's
    try:
        report = run_hello(probe_kernel(), audit_root=args.audit_dir or AUDIT_ROOT)
    except PreflightError as refusal:
        print(f"sharness-launch: {refusal.message}; nothing was created\n  hint: {refusal.hint}", file=sys.stderr)
        return EXIT_UNHELD
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(render(report))
    return EXIT_OK if report.ok else EXIT_FAILED
