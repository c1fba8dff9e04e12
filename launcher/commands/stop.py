"""`sharness-launch stop SID`: end one of your sessions that sharness-launchd runs, in order (root: any)."""

from __future__ import annotations

import argparse
import sys

from launcher.commands.daemon_client import DaemonUnavailable, ask, say_refusal
from pki.vocabulary import EXIT_UNAVAILABLE


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("stop", help="end one of your daemon's sessions (its teardown runs as usual)")
    parser.add_argument("sid", help="the session id (`sharness-launch ps`)")
    parser.set_defaults(func=stop)


def stop(args: argparse.Namespace) -> int:
    try:
        frames = ask({"op": "stop", "sid": args.sid})
    except DaemonUnavailable as exc:
        print(f"sharness-launch: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    answer = frames[0] if frames else {"type": "refused", "reason": "the daemon gave no answer"}
    if answer.get("type") != "stopped":
        return say_refusal(answer)
    print(f"sharness-launch: session {args.sid} is ending", file=sys.stderr)
    return 0
