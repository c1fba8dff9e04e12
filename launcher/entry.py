"""`sharness-launch`, the console script: `sh` goes to the in-session client before anything else is loaded.

launcher.cli imports argparse and the command table, 3-5 ms of CPU that every `sharness-launch sh` paid for a
parser it never used (docs/decisions/bench.md, "Shell door"); every other command is launcher.cli's, unchanged.
"""

from __future__ import annotations

import sys


def main() -> int:
    """Run `sharness-launch` on sys.argv: `sh ...` by the shell door's client, anything else by launcher.cli."""
    if sys.argv[1:2] == ["sh"]:
        from doors.shell.cli import program

        return program(sys.argv[2:])
    from launcher.cli import main as cli_main

    return cli_main()
