"""`sharness-launch fs get|put|append|ls|rm|stat|mkdir|mv PATH` inside a session (the launcher's CLI delegates).

Content goes through stdin/stdout as bytes; refusals go to stderr (or stdout with --json) naming who refused
and the row. Exit 0 done, 1 refused, 2 usage, 69 the door cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from doors.client import DoorNotTrusted, DoorRefused, TransportError
from doors.fs.client import FsClient
from pki.vocabulary import EXIT_FAILED, EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE

# name, help, whether it takes --json (get writes the file's bytes, which are the data)
_COMMANDS = (
    ("get", "write the file to stdout", False),
    ("put", "replace the file with stdin", True),
    ("append", "append stdin to the file", True),
    ("ls", "list a directory", True),
    ("rm", "delete a file or an empty directory", True),
    ("stat", "show kind, size, etag", True),
    ("mkdir", "create a directory", True),
)
_JSON_HELP = "print the door's answer (or the refusal) as JSON on stdout"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sharness-launch fs", description="Read and write the workspace through this session's fs door.",
        epilog="Exit codes: 0 done, 1 refused (the message names who refused and the row), 2 usage, "
               "69 the fs door cannot be reached. Needs the SHARNESS_* variables a session sets.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text, takes_json in _COMMANDS:
        command = commands.add_parser(name, help=help_text, description=help_text)
        command.add_argument("path", nargs="?" if name == "ls" else None, default="",
                             help="workspace-relative path" + (" (default: the workspace)" if name == "ls" else ""))
        if takes_json:
            command.add_argument("--json", action="store_true", help=_JSON_HELP)
    move = commands.add_parser("mv", help="rename within the workspace", description="rename within the workspace")
    move.add_argument("source")
    move.add_argument("dest")
    move.add_argument("--json", action="store_true", help=_JSON_HELP)
    return parser


def _act(fs: FsClient, args: argparse.Namespace, stdin: BinaryIO) -> Any:
    """Run the command; return the file's bytes (get) or the door's answer as a dict."""
    actions: dict[str, Callable[[], Any]] = {
        "get": lambda: fs.read(args.path),
        "put": lambda: fs.write(args.path, stdin.read()),
        "append": lambda: fs.append(args.path, stdin.read()),
        "ls": lambda: {"path": args.path or ".", "entries": fs.list(args.path)},
        "rm": lambda: fs.delete(args.path),
        "stat": lambda: fs.stat(args.path),
        "mkdir": lambda: fs.mkdir(args.path),
        "mv": lambda: fs.rename(args.source, args.dest),
    }
    return actions[args.command]()


def _show(args: argparse.Namespace, answer: Any, stdout: BinaryIO) -> None:
    if args.command == "get":
        stdout.write(answer)
    elif getattr(args, "json", False):
        stdout.write((json.dumps({"ok": True, **answer}, ensure_ascii=False) + "\n").encode())
    elif args.command == "ls":
        stdout.write("".join(f"{e['name']}{'/' if e['kind'] == 'dir' else ''}\n" for e in answer["entries"]).encode())
    elif args.command == "stat":
        stdout.write((json.dumps(answer) + "\n").encode())


def _failure(error: TransportError | DoorRefused) -> tuple[int, dict[str, Any]]:
    """The exit code and the words for a failure: who refused, the row, and what to change."""
    if isinstance(error, DoorRefused):
        refusal = error.refusal
        return EXIT_FAILED, {"error": "refused", "who": refusal.who, "row": refusal.row,
                             "message": str(refusal.detail), "hint": refusal.hint, "status": refusal.status}
    if isinstance(error, DoorNotTrusted):
        return EXIT_FAILED, {"error": "refused", "who": "sharness-launch fs", "row": "svid", "message": str(error),
                              "hint": "dial the fs socket this session's launcher named (SHARNESS_DOOR_FS)"}
    return EXIT_UNAVAILABLE, {"error": "unavailable", "who": "fs", "message": str(error),
                              "hint": "check that this session's fs door is running; retry shortly"}


def _report(args: argparse.Namespace, code: int, shape: dict[str, Any]) -> int:
    if getattr(args, "json", False):
        print(json.dumps({"ok": False, **shape}, ensure_ascii=False))
    elif code == EXIT_FAILED:
        print(f"sharness-launch fs: refused by {shape['who']} (row `{shape['row']}`): {shape['message']}\n"
              f"  hint: {shape['hint']}", file=sys.stderr)
    else:
        print(f"sharness-launch fs: {shape['message']}\n  hint: {shape['hint']}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run one fs command against this session's fs door; return the exit code."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse: 2 after a usage error, 0 after --help
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if not (os.environ if environ is None else environ).get("SHARNESS_SESSION"):
        return _report(args, EXIT_UNAVAILABLE, {
            "error": "unavailable", "who": "sharness-launch fs", "message": "not inside a sharness session "
            "(SHARNESS_SESSION is not set), so there is no fs door to reach",
            "hint": "run this from the app inside a session: sharness-launch run MANIFEST --expect-hash HASH"})
    try:
        with FsClient.from_env(environ) as fs:
            answer = _act(fs, args, sys.stdin.buffer)
    except (DoorRefused, TransportError) as error:
        return _report(args, *_failure(error))
    except OSError as error:  # the SVID or bundle named by the session cannot be read
        return _report(args, EXIT_UNAVAILABLE, {
            "error": "unavailable", "who": "sharness-launch fs", "message": f"cannot load this session's SVID or "
            f"bundle: {error}", "hint": "run inside a session; SHARNESS_SVID and SHARNESS_BUNDLE must be readable"})
    _show(args, answer, sys.stdout.buffer)
    sys.stdout.buffer.flush()
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
