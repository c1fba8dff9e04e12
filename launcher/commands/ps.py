"""`sharness-launch ps [--json]`: the sessions sharness-launchd runs for you (root: all of them)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from launcher.commands.daemon_client import NO_ANSWER, ask_or_say, say_refusal
from pki.vocabulary import EXIT_UNAVAILABLE


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("ps", help="list your sessions that sharness-launchd runs (root: all)")
    parser.add_argument("--json", action="store_true", help="print them as JSON on stdout")
    parser.set_defaults(func=ps)


def ps(args: argparse.Namespace) -> int:
    frames = ask_or_say({"op": "ps"})
    if frames is None:
        return EXIT_UNAVAILABLE
    answer: dict[str, Any] = frames[0] if frames else NO_ANSWER
    if answer.get("type") != "sessions":
        return say_refusal(answer)
    sessions: list[dict[str, Any]] = answer.get("sessions", [])
    if args.json:
        print(json.dumps(sessions, indent=2))
        return 0
    print(f"{'SID':<9} {'USER':<12} {'PID':>7} {'STATE':<9} {'AGE':>6}  NAME")
    for session in sessions:
        age = int(time.time()) - int(session.get("started", 0))
        print(f"{session.get('sid') or '-':<9} {session.get('user', '?')!s:<12.12} {session.get('pid', 0):>7} "
              f"{session.get('state', '?'):<9} {age:>5}s  {session.get('name', '')}")
    return 0
