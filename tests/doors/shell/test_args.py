"""`sh`'s command line (doors/shell/_args.py): each option, the command after it, and the lines it refuses."""

from __future__ import annotations

import pytest

from doors.shell._args import Usage, parse_args


@pytest.mark.parametrize(("argv", "seen"), [
    (["--", "true"], {"command": ["true"]}),
    (["true", "--json"], {"command": ["true", "--json"]}),  # after the command, words are the command's
    (["--", "--json"], {"command": ["--json"]}),
    (["--timeout", "5", "--cwd", "src", "--", "make"], {"timeout": 5.0, "cwd": "src", "command": ["make"]}),
    (["--timeout=0.5", "--cwd=a=b", "ls"], {"timeout": 0.5, "cwd": "a=b", "command": ["ls"]}),
    (["--json", "--script", "--tty", "--apply", "--", "echo hi"],
     {"json": True, "script": True, "tty": True, "apply": True, "command": ["echo hi"]}),
    (["--help"], {"help": True}),
    (["--json", "-h", "--", "x"], {"json": True, "help": True}),
    ([], {}),
])
def test_options_then_the_command(argv: list[str], seen: dict[str, object]) -> None:
    args = parse_args(argv)
    defaults = {"timeout": None, "cwd": None, "json": False, "script": False, "tty": False, "apply": False,
                "help": False, "command": []}
    assert {name: getattr(args, name) for name in defaults} == {**defaults, **seen}


@pytest.mark.parametrize(("argv", "words"), [
    (["--timeout"], "--timeout needs a value"),
    (["--timeout", "soon", "--", "x"], "takes seconds"),
    (["--jsn", "--", "x"], "unknown option '--jsn'"),
    (["--json=yes", "--", "x"], "unknown option '--json=yes'"),
    (["-x"], "unknown option '-x'"),
])
def test_a_line_sh_cannot_read_says_why(argv: list[str], words: str) -> None:
    with pytest.raises(Usage, match=words):
        parse_args(argv)
