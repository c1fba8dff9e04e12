"""`sh`'s command line, read by hand: six options, then the command. Pure.

argparse (with gettext) cost each `sharness-launch sh` 3-5 ms of CPU here (docs/decisions/bench.md, "Shell
door"), more than the line it read. Options are exact (`--timeout 5` or `--timeout=5`), the first word that is
not one starts the command, and `--` may end the options (what follows is the command even if it starts with -).
"""

from __future__ import annotations

USAGE = "usage: sharness-launch sh [-h] [--timeout S] [--cwd DIR] [--json] [--script] [--tty] [--apply] -- CMD ARGS..."
HELP = f"""{USAGE}

Run a command through this session's shell door.

options:
  -h, --help   show this help message and exit
  --timeout S  seconds before it is killed
  --cwd DIR    directory relative to the workspace
  --json       print every frame as a JSON line on stdout
  --script     CMD is one string run by /bin/sh -c
  --tty        run it on a pty (both streams on stdout)
  --apply      overlay mode: once it exits 0, apply the overlay through fs (refusals on stderr)

Exit: the command's code; 128+N on signal N; 124 on timeout; 1 refused; 127 not found; 69 no shell door.
Needs the SHARNESS_* variables a session sets.
"""
FLAGS = frozenset({"--json", "--script", "--tty", "--apply"})
VALUED = frozenset({"--timeout", "--cwd"})


class Usage(ValueError):
    """The command line is not one `sh` takes; the message says why."""


class Args:
    """What the line asked: the options and the command."""

    def __init__(self) -> None:
        self.timeout: float | None = None
        self.cwd: str | None = None
        self.json = self.script = self.tty = self.apply = False
        self.help = False
        self.command: list[str] = []


def parse_args(argv: list[str]) -> Args:
    """The options and command of `argv` (what follows `sh`); Usage when it cannot be read."""
    args, at = Args(), 0
    while at < len(argv):
        word = argv[at]
        if word == "--":
            args.command = argv[at + 1:]
            return args
        if word in ("-h", "--help"):
            args.help = True
            return args
        name, equals, value = word.partition("=")
        if name in FLAGS and not equals:
            setattr(args, name[2:], True)
        elif name in VALUED:
            if not equals:
                at += 1
                if at == len(argv):
                    raise Usage(f"{name} needs a value")
                value = argv[at]
            _set_value(args, name, value)
        elif word.startswith("-"):
            raise Usage(f"unknown option {word!r} (put the command after --)")
        else:
            args.command = argv[at:]
            return args
        at += 1
    return args


def _set_value(args: Args, name: str, value: str) -> None:
    if name == "--cwd":
        args.cwd = value
        return
    try:
        args.timeout = float(value)
    except ValueError:
        raise Usage(f"--timeout takes seconds, not {value!r}") from None
