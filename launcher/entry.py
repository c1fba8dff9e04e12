"""`sharness-launch`, the console script: `sh` goes to the in-session client before anything else is loaded.

launcher.cli imports argparse and the command table, 3-5 ms of CPU that every `sharness-launch sh` paid for a
parser it never used (docs/decisions/bench.md, "Shell door"); every other command is launcher.cli's, unchanged.

The script `make` installs is this project's, not pip's (`python -m launcher.entry --write-script PATH`): its
interpreter runs with -S, so `sh` does not run site (the venv's .pth files, setuptools' distutils shim, the
system's sitecustomize: ~2.5 ms of CPU per call here, docs/decisions/bench.md, "shquick") and finds this
project by the directory the script names; it hands `sh` to the client itself, as main() does, so not even
launcher/ is imported (each module is ~0.25 ms here). Every other command runs site first, so it sees the
interpreter pip's script gave it. Installed without make, pip's script works as before, with site.
"""

from __future__ import annotations

import os
import sys

SCRIPT = """#!{python} -S
# sharness-launch, written by `python -m launcher.entry --write-script` (launcher/entry.py): -S, so that
# `sharness-launch sh` does not run site, and goes to the shell client as main() would (no launcher import).
import sys
sys.path.append({root!r})
if sys.argv[1:2] == ["sh"]:
    from doors.shell.cli import program
    sys.exit(program(sys.argv[2:]))
from launcher.entry import main
sys.exit(main())
"""


def main() -> int:
    """Run `sharness-launch` on sys.argv: `sh ...` by the shell door's client, anything else by launcher.cli."""
    if sys.argv[1:2] == ["sh"]:
        from doors.shell.cli import program

        return program(sys.argv[2:])
    if sys.flags.no_site:  # started by the -S script: what site does for any other start, before anything loads
        import site

        site.main()
    from launcher.cli import main as cli_main

    return cli_main()


def script_text(python: str, root: str) -> str:
    """The console script: `python` with -S, this project's directory (`root`, where launcher/ is) on its path."""
    if not os.path.isabs(python) or any(char.isspace() for char in python):
        raise ValueError(f"the interpreter must be an absolute path without spaces (a shebang line): {python!r}")
    return SCRIPT.format(python=python, root=root)


def write_script(path: str) -> None:
    """Replace the console script at `path` (pip's) with this project's, for this interpreter and tree."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = script_text(sys.executable, root)
    partial = f"{path}.partial"
    with open(partial, "w") as script:
        script.write(text)
    os.chmod(partial, 0o755)
    os.replace(partial, path)


if __name__ == "__main__":
    if sys.argv[1:2] != ["--write-script"] or len(sys.argv) != 3:
        raise SystemExit("usage: python -m launcher.entry --write-script PATH")
    write_script(sys.argv[2])
