"""`sharness-launch logs SID`: the audit log of one of your sessions that sharness-launchd ran (root: any)."""

from __future__ import annotations

import argparse
import sys

from launcher.commands.daemon_client import NO_ANSWER, ask_or_say, say_refusal
from pki.vocabulary import EXIT_UNAVAILABLE


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("logs", help="print the audit log of one of your daemon's sessions")
    parser.add_argument("sid", help="the session id (`sharness-launch ps`, or the one the session printed)")
    parser.set_defaults(func=logs)


def logs(args: argparse.Namespace) -> int:
    frames = ask_or_say({"op": "logs", "sid": args.sid})
    if frames is None:
        return EXIT_UNAVAILABLE
    if not frames or frames[0].get("type") != "log":
        return say_refusal(frames[0] if frames else NO_ANSWER)
    for frame in frames:
        for line in frame.get("lines", []):
            print(line)
        if frame.get("note"):
            print(f"sharness-launch: {frame['note']}", file=sys.stderr)
    return 0
