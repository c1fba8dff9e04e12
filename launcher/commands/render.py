"""`sharness-launch render FILE --to kubernetes|bwrap|docker [--out DIR] [--json] [--strict]`: the manifest for
another enforcer, then every row with how that target holds it (launcher/render)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from launcher.commands import CommandError, fail, read_manifest
from launcher.render import TARGETS
from pki.vocabulary import EXIT_FAILED, EXIT_OK, EXIT_UNHELD, escaped, new_sid, valid_sid

if TYPE_CHECKING:
    from launcher.render.rendering import Rendering, RenderInput


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `render` subcommand."""
    parser = subparsers.add_parser("render", help="the manifest for Kubernetes, bubblewrap or Docker, with the rows "
                                   "each cannot hold")
    parser.add_argument("manifest", metavar="FILE", help="the manifest (JSON); '-' reads stdin")
    parser.add_argument("--to", required=True, choices=TARGETS, help="the target enforcer")
    parser.add_argument("--out", metavar="DIR", help="write the files (and seccomp profiles or programs) here "
                        "instead of printing the main one")
    parser.add_argument("--json", action="store_true", help="print the matrix as JSON")
    parser.add_argument("--strict", action="store_true", help=f"exit {EXIT_UNHELD} when any row would be unheld")
    parser.add_argument("--sid", metavar="HEX", type=_sid, help="the session id to name objects with (default: "
                        "a fresh one)")
    parser.add_argument("--seccomp-default", action="store_true", help="kubernetes: RuntimeDefault profiles "
                        "instead of the launcher's filters as Localhost profiles")
    parser.set_defaults(func=run)


def _sid(text: str) -> str:
    if not valid_sid(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a session id (8 lowercase hex characters)")
    return text


def host_input(sid: str | None, seccomp_default: bool) -> RenderInput:
    """What a render takes from this machine: its Python paths and prefix, and its root's compatibility links."""
    from launcher.policy.confine_plan import python_paths
    from launcher.render.rendering import RenderInput

    links = tuple((f"/{name}", os.readlink(f"/{name}")) for name in sorted(os.listdir("/"))
                  if os.path.islink(f"/{name}"))
    return RenderInput(sid=sid or new_sid(), python=python_paths(), python_prefix=sys.prefix, root_links=links,
                       seccomp_default=seccomp_default)


def write_files(rendering: Rendering, out: str) -> list[str]:
    """Write every file and compiled seccomp program into `out` (made if missing); return the paths written."""
    os.makedirs(out, exist_ok=True)
    written = []
    for name, text in rendering.files:
        path = os.path.join(out, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
        written.append(path)
    for name, mode in rendering.programs:
        path = os.path.join(out, name)
        prepared = mode.prepared()
        try:
            program = prepared.export_bpf()
        finally:
            prepared.release()
        with open(path, "wb") as handle:
            handle.write(program)
        written.append(path)
    return written


def shown(text: str) -> str:
    """The main file as printed: exactly, when it is printable ASCII; else escaped line by line and said so (a
    manifest string reaches the terminal only as pki.vocabulary.escaped shows it)."""
    lines = text.rstrip("\n").split("\n")
    if all(line.isascii() and line.isprintable() for line in lines):
        return "\n".join(lines)
    return "\n".join([*(escaped(line) for line in lines), "(shown escaped: --out DIR writes the exact file)"])


def matrix_text(rendering: Rendering) -> str:
    """The matrix for a person: each row, the launcher's barrier, the target's, and the mechanism."""
    width = max((len(line.row_id) for line in rendering.matrix), default=0)
    lines = [f"rows as {rendering.target} holds them (launcher's barrier -> {rendering.target}'s):"]
    for line in rendering.matrix:
        lines.append(f"  {line.component:<8} {line.row_id:<{width}} {line.launcher_kind:<11} -> {line.kind:<11} "
                     f"{line.meaning}")
        lines.append(f"  {'':<8} {'':<{width}} {'':<11}    {'':<11} {'by' if line.held else 'why:'} "
                     f"{line.mechanism}")
    lines.append(f"{rendering.unheld_count} of {len(rendering.matrix)} rows unheld by {rendering.target}")
    lines += [f"not covered: {gap}" for gap in rendering.not_covered]
    return "\n".join(escaped(line) for line in lines)


def run(args: argparse.Namespace) -> int:
    """Print (or write) the target's form and the matrix; 65/66 for a bad manifest, 78 with --strict and a row
    unheld."""
    from launcher.render import render

    try:
        manifest = read_manifest(args.manifest)
        rendering = render(manifest, args.to, host_input(args.sid, args.seccomp_default))
        written = write_files(rendering, args.out) if args.out else []
    except CommandError as error:
        return fail(args, error)
    except OSError as exc:
        return fail(args, CommandError(EXIT_FAILED, f"cannot write {escaped(args.out)}: {exc.strerror or exc}",
                                       "choose a directory you may write", error="unwritable", out=args.out))
    if args.json:
        print(json.dumps({"ok": True, "file": args.manifest, "sha256": manifest.sha256, "written": written,
                          **rendering.as_dict()}, ensure_ascii=False, indent=2))
    else:
        if not args.out:
            print(shown(rendering.files[0][1]))
            beside = [name for name, _ in rendering.files[1:]] + [name for name, _ in rendering.programs]
            if beside:
                print(f"\nbeside it (--out DIR writes them): {', '.join(beside)}")
            print()
        for path in written:
            print(f"wrote {escaped(path)}")
        print(matrix_text(rendering))
    return EXIT_UNHELD if args.strict and rendering.unheld_count else EXIT_OK
