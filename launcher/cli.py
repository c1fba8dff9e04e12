"""`sharness-launch`: argparse front door. Each command lives in launcher/commands/<name>.py."""

from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType

from pki.vocabulary import EXIT_USAGE, exit_codes_help

# Command modules, in help order. A listed module that is missing is skipped; nothing else is loaded.
COMMAND_MODULES: tuple[str, ...] = ("run", "check", "hash", "hello", "demo", "gc", "verify_audit", "fs", "secret", "sh",
                                     "ps", "stop", "logs", "render")
DEFAULT_COMMAND = "run"


def _command_modules() -> list[ModuleType]:
    modules = []
    for name in COMMAND_MODULES:
        qualified = f"launcher.commands.{name}"
        try:
            modules.append(importlib.import_module(qualified))
        except ModuleNotFoundError as exc:
            if exc.name != qualified:  # a missing dependency inside a built command is a real error
                raise
    return modules


def build_parser() -> tuple[argparse.ArgumentParser, set[str]]:
    """The parser with every built command registered, and the names of those commands."""
    parser = argparse.ArgumentParser(
        prog="sharness-launch",
        description="Run an AI agent with what the person allowed held by the kernel and by separate doors.",
        epilog=f"`sharness-launch MANIFEST ...` is `sharness-launch run MANIFEST ...`.\n\nexit codes:\n"
               f"{exit_codes_help()}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        module.register(subparsers)
    return parser, set(subparsers.choices)


def with_default_command(argv: list[str], commands: set[str]) -> list[str] | None:
    """`argv` with DEFAULT_COMMAND in front when it starts with neither a command nor an option;
    None when that is needed but the default command is not built."""
    if not argv or argv[0] in commands or argv[0].startswith("-"):
        return argv
    return [DEFAULT_COMMAND, *argv] if DEFAULT_COMMAND in commands else None


def main(argv: list[str] | None = None) -> int:
    """Parse `argv` (default sys.argv[1:]), run the command, return its exit code."""
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["sh"]:  # the in-session client: no launcher import (docs/decisions/bench.md, "sh")
        from doors.shell.cli import program as sh_main

        return sh_main(given[1:])
    parser, commands = build_parser()
    args_in = with_default_command(given, commands)
    if args_in is None:
        print(f"sharness-launch: no command {given[0]!r}, and this installation lacks the default command "
              f"`{DEFAULT_COMMAND}`; name one of: {', '.join(sorted(commands))}", file=sys.stderr)
        return EXIT_USAGE
    try:
        args = parser.parse_args(args_in)
    except SystemExit as exc:  # argparse exits 2 on a usage error and 0 after --help
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    result: int = args.func(args)
    return result
