"""`sharness-launch gc`: remove what dead sessions left, from their journals."""

from __future__ import annotations

import argparse
import json
import os
import sys

from launcher.lifecycle.sweep import GcReport, collect
from pki.vocabulary import EXIT_FAILED, EXIT_NOT_ROOT, EXIT_OK, REMOVABLE_ROOTS, RUN_ROOT, SESSIONS_ROOT


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `gc` subcommand."""
    parser = subparsers.add_parser("gc", help="remove what dead sessions left (users, netns, cgroups, files)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--sessions-dir", default=SESSIONS_ROOT, help="the journals (default: %(default)s)")
    parser.add_argument("--runtime-dir", default=RUN_ROOT, help="runtime dirs (default: %(default)s)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Collect; exit 0 when everything of every dead session is gone, 1 naming what is left."""
    if os.geteuid() != 0:
        print("sharness-launch gc: needs root (the journals are root's, 0700)", file=sys.stderr)
        print("  hint: run `sudo sharness-launch gc`", file=sys.stderr)
        return EXIT_NOT_ROOT
    roots = REMOVABLE_ROOTS if args.runtime_dir in REMOVABLE_ROOTS else (*REMOVABLE_ROOTS, args.runtime_dir)
    report = collect(args.sessions_dir, runtime_root=args.runtime_dir, allowed_roots=roots)
    if report.ok:
        from launcher.lifecycle.create import remove_empty_roots

        remove_empty_roots(args.sessions_dir, args.runtime_dir)
    if args.json:
        print(json.dumps({"ok": report.ok, **report.to_json()}, indent=2))
    else:
        print(render_text(report))
        for error in report.errors:
            print(f"sharness-launch gc: could not remove {error}", file=sys.stderr)
        if report.errors:
            hint = "fix the cause, then run `sharness-launch gc` again: the journal keeps what is left"
            print(f"  hint: {hint}", file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_FAILED


def render_text(report: GcReport) -> str:
    """The report for a person: sessions removed, what was removed per kind, live sessions left alone."""
    lines = []
    if report.sessions_removed:
        lines.append(f"gc: removed {len(report.sessions_removed)} dead session(s): "
                     + ", ".join(report.sessions_removed))
    for kind, names in report.removed_per_kind().items():
        lines.append(f"  {kind}: {', '.join(names)}")
    if report.sessions_live:
        lines.append(f"gc: left {len(report.sessions_live)} live session(s) alone: "
                     + ", ".join(report.sessions_live))
    if not lines:
        lines.append("gc: nothing to remove")
    return "\n".join(lines)
