"""`sharness-launch fs get|put|append|ls|rm|stat|mkdir|mv PATH`: the fs door from a shell inside a session.

Everything after `fs` goes to `doors.fs.cli.main`, which parses it (its own --help), talks to the door with
the app's SVID and returns the exit code: 0 done, 1 refused, 2 usage, 69 the door cannot be reached.
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `fs` subcommand; its arguments are left whole for the fs door's own CLI."""
    # No prefix character and no -h here, so `fs --help` and `fs ls --json` reach doors.fs.cli untouched.
    parser = subparsers.add_parser("fs", help="the fs door from a shell inside a session (fs --help for more)",
                                   add_help=False, prefix_chars="\0")
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Delegate to the fs door's CLI (imported here, so other commands do not load the door client)."""
    from doors.fs.cli import main

    return main(list(args.argv))
