"""`sharness-launch demo`: a real agent session on the sample project, then what it did, told by its audit log."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from pki.vocabulary import AUDIT_ROOT, EXIT_FAILED, EXIT_NO_INPUT, EXIT_NOT_ROOT, EXIT_OK, EXIT_UNHELD


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="run the shipped agent on the sample project in a real session")
    parser.add_argument("--json", action="store_true", help="print the session summary as JSON on stdout")
    parser.add_argument("--audit-dir", metavar="DIR", default=None,
                        help=f"where the session's audit log goes (default {AUDIT_ROOT})")
    parser.set_defaults(func=run)


def _err(text: str) -> None:
    print(f"sharness-launch: {text}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Run the demo session and print its summary; 0 when the agent did all it should, was refused all it
    should be, the audit log is intact and nothing was left behind."""
    if os.geteuid() != 0:
        _err("demo starts a real session and must run as root: use sudo; nothing was created")
        return EXIT_NOT_ROOT
    from launcher.demo import TEMPLATE, run_demo

    if not TEMPLATE.is_file():
        _err(f"demo runs the sample in the source tree, and {TEMPLATE} is not there: run it from a clone "
             "(`sudo make run`); nothing was created")
        return EXIT_NO_INPUT
    from launcher.kernel.probe import probe_kernel
    from launcher.lifecycle import sweep
    from launcher.lifecycle.preflight import PreflightError

    sweep.collect(wait=False)  # a session being created now: its sweep is the next start's
    try:
        demo = run_demo(probe_kernel(), audit_root=args.audit_dir or AUDIT_ROOT, progress=_err,
                        summary_on_stdout=args.json)
    except PreflightError as refusal:
        _err(f"{refusal.message}; nothing was created\n  hint: {refusal.hint} (manifest row: {refusal.row})")
        return EXIT_UNHELD
    report = demo_report(demo)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print("\n".join(report_lines(report)))
    return EXIT_OK if report["ok"] else EXIT_FAILED


def demo_report(demo: Any) -> dict[str, Any]:
    """The summary of a finished DemoRun as data: the audit log verified with the key the session printed."""
    from launcher.lifecycle.audit_verify import PUB_NAME, SIG_NAME, verify_audit
    from launcher.policy.session_summary import summarize

    result = demo.result
    with open(f"{result.audit_dir}/{SIG_NAME}", "rb") as sig, open(f"{result.audit_dir}/{PUB_NAME}", "rb") as pub:
        verdict = verify_audit(b"\n".join(demo.audit_lines) + b"\n", sig.read(), pub.read(),
                               trusted_pub_pem=result.audit_public_key.encode(), anchor="the launcher",
                               expected_sid=result.sid)
    summary = summarize(json.loads(line) for line in demo.audit_lines)
    ok = result.app_exit_code == 0 and verdict.intact and not result.teardown_errors
    return {
        "ok": ok, "sid": result.sid, "manifest": demo.manifest.sha256, "exit_code": result.exit_code,
        "app_exit_code": result.app_exit_code, "reason": result.reason, **summary.as_dict(),
        "model_spend": result.model_spend.as_dict() if result.model_spend is not None else None,
        "spend_words": result.model_spend.words() if result.model_spend is not None else "",
        "audit": {"dir": result.audit_dir, "intact": verdict.intact, "verdict": verdict.describe(),
                  "lines": verdict.lines},
        "teardown_errors": result.teardown_errors, "timings_ms": result.timings_ms,
    }


def report_lines(report: dict[str, Any]) -> list[str]:
    """The summary for a person: acts, refusals and who refused, spend against budget, the audit verdict."""
    from launcher.policy.session_summary import Act, SessionSummary, render_summary

    summary = SessionSummary([Act(**act) for act in report["did"]], [Act(**act) for act in report["refused"]])
    seconds = report["timings_ms"].get("torn_down", 0) / 1000
    lines = [f"demo session {report['sid']} ({seconds:.1f} s): {report['reason']}", *render_summary(summary)]
    if report["spend_words"]:
        lines.append(report["spend_words"])
    lines.append(f"audit log {report['audit']['dir']}: {report['audit']['verdict']}")
    left = report["teardown_errors"]
    lines.append(f"left behind: {', '.join(left)} (run `sharness-launch gc`)" if left else "left behind: nothing")
    lines.append("demo: " + ("ok" if report["ok"] else "FAILED (the agent's steps above say which)"))
    return lines
