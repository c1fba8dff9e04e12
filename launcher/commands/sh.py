"""`sharness-launch sh [--timeout S] [--cwd DIR] [--json] -- CMD ARGS...`: a command through the shell door,
from inside a session. Everything after `sh` goes to `doors.shell.cli.main` (it needs no root and no launcher
internals): its output streams live and it exits with the command's status (124 on timeout, 128+N on signal N).
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `sh` subcommand; its arguments are left whole for the shell door's own CLI."""
    parser = subparsers.add_parser("sh", help="a command through the shell door, inside a session (sh --help)",
                                   add_help=False, prefix_chars="\0")
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Delegate to the shell door's CLI. `sharness-launch sh ...` reaches it before this parser is built
    (launcher/cli.py: no command module is imported on that path); this is the same hand-over for a parsed argv."""
    from doors.shell.cli import main

    return main(list(args.argv))
