"""`sharness-launch stop SID`: end one of your sessions that sharness-launchd runs, in order (root: any)."""

from __future__ import annotations

import argparse
import sys

from launcher.commands.daemon_client import NO_ANSWER, ask_or_say, say_refusal
from pki.vocabulary import EXIT_UNAVAILABLE


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("stop", help="end one of your daemon's sessions (its teardown runs as usual)")
    parser.add_argument("sid", help="the session id (`sharness-launch ps`)")
    parser.set_defaults(func=stop)


def stop(args: argparse.Namespace) -> int:
    frames = ask_or_say({"op": "stop", "sid": args.sid})
    if frames is None:
        return EXIT_UNAVAILABLE
    answer = frames[0] if frames else NO_ANSWER
    if answer.get("type") != "stopped":
        return say_refusal(answer)
    print(f"sharness-launch: session {args.sid} is ending", file=sys.stderr)
    return 0
