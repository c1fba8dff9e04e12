"""`sharness-launch fs get|put|append|ls|rm|stat|mkdir|mv PATH` inside a session (the launcher's CLI delegates).

Content goes through stdin/stdout as bytes; refusals go to stderr with who refused and what to change.
Exit 0 done, 1 refused, 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from doors.client import DoorRefused, TransportError
from doors.fs.client import FsClient


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sharness-launch fs", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (("get", "write the file to stdout"), ("put", "replace the file with stdin"),
                            ("append", "append stdin to the file"), ("ls", "list a directory"),
                            ("rm", "delete a file or an empty directory"), ("stat", "show kind, size, etag"),
                            ("mkdir", "create a directory")):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("path", nargs="?" if name == "ls" else None, default="")
    move = commands.add_parser("mv", help="rename within the workspace")
    move.add_argument("source")
    move.add_argument("dest")
    return parser


def _run(fs: FsClient, args: argparse.Namespace, stdin: BinaryIO, stdout: BinaryIO) -> None:
    actions: dict[str, Callable[[], Any]] = {
        "get": lambda: stdout.write(fs.read(args.path)),
        "put": lambda: fs.write(args.path, stdin.read()),
        "append": lambda: fs.append(args.path, stdin.read()),
        "ls": lambda: stdout.write("".join(f"{e['name']}{'/' if e['kind'] == 'dir' else ''}\n"
                                           for e in fs.list(args.path)).encode()),
        "rm": lambda: fs.delete(args.path),
        "stat": lambda: stdout.write((json.dumps(fs.stat(args.path)) + "\n").encode()),
        "mkdir": lambda: fs.mkdir(args.path),
        "mv": lambda: fs.rename(args.source, args.dest),
    }
    actions[args.command]()


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run one fs command against this session's fs door."""
    args = _parser().parse_args(argv)
    try:
        with FsClient.from_env(environ) as fs:
            _run(fs, args, sys.stdin.buffer, sys.stdout.buffer)
    except DoorRefused as refused:
        print(f"sharness-launch fs: refused by {refused.who}: {refused.reason} (hint: {refused.hint})",
              file=sys.stderr)
        return 1
    except TransportError as failed:
        print(f"sharness-launch fs: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
