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


def command_name(module: str) -> str:
    """The command module `module` registers: its name with dashes (verify_audit registers verify-audit)."""
    return module.replace("_", "-")


def _command_modules(only: str | None = None) -> list[ModuleType]:
    modules = []
    for name in COMMAND_MODULES if only is None else [m for m in COMMAND_MODULES if command_name(m) == only]:
        qualified = f"launcher.commands.{name}"
        try:
            modules.append(importlib.import_module(qualified))
        except ModuleNotFoundError as exc:
            if exc.name != qualified:  # a missing dependency inside a built command is a real error
                raise
    return modules


def build_parser(only: str | None = None) -> tuple[argparse.ArgumentParser, set[str]]:
    """The parser with every built command registered (or only the command `only`), and their names."""
    parser = argparse.ArgumentParser(
        prog="sharness-launch",
        description="Run an AI agent with what the person allowed held by the kernel and by separate doors.",
        epilog=f"`sharness-launch MANIFEST ...` is `sharness-launch run MANIFEST ...`.\n\nexit codes:\n"
               f"{exit_codes_help()}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules(only):
        module.register(subparsers)
    return parser, set(subparsers.choices)


def with_default_command(argv: list[str], commands: set[str]) -> list[str] | None:
    """`argv` with DEFAULT_COMMAND in front when it starts with neither a command nor an option;
    None when that is needed but the default command is not built."""
    if not argv or argv[0] in commands or argv[0].startswith("-"):
        return argv
    return [DEFAULT_COMMAND, *argv] if DEFAULT_COMMAND in commands else None


def _the_one_command(given: list[str]) -> str | None:
    """The command `given` names, or the default one for a bare manifest: only its module need be imported (the
    others cost `run` ~20 ms before its session; docs/decisions/bench.md, "launcher"). None when an option
    comes first (help, version): every command is registered then."""
    if not given or given[0].startswith("-"):
        return None
    names = {command_name(module) for module in COMMAND_MODULES}
    return given[0] if given[0] in names else DEFAULT_COMMAND


def main(argv: list[str] | None = None) -> int:
    """Parse `argv` (default sys.argv[1:]), run the command, return its exit code."""
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["sh"]:  # the in-session client: no launcher import (docs/decisions/bench.md, "sh")
        from doors.shell.cli import program as sh_main

        return sh_main(given[1:])
    only = _the_one_command(given)
    parser, commands = build_parser(only)
    if only is not None and only not in commands:  # not built in this installation: the full parser says so
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
