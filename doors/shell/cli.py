"""`sharness-launch sh [--timeout S] [--cwd DIR] [--json] [--tty] [--apply] -- CMD ARGS...` inside a session (the CLI
delegates).

The command runs in the shell door; its stdout and stderr are written here as they arrive, and this exits
with its status the way timeout(1) does: the exit code, 128+N when signal N ended it, 124 on its timeout.
A refusal exits 1 naming who refused and the row; a program not found 127; no shell door reachable 69.
With --json every frame is printed as a JSON line on stdout instead (the final record last).
"""

from __future__ import annotations

import posix  # not os: doors/shell/_stdlib_client.py says why
import sys

from doors.shell._args import HELP, USAGE, Args, Usage, parse_args
from doors.shell._cjson import dumps_shown
from doors.shell._response import ResponseError
from doors.shell._stdlib_client import NotTheDoor, Refused, Unreachable, connect, frames
from doors.shell._wire import decode_chunk, shell_status
from pki.vocabulary import EXIT_EXEC_FAILED, EXIT_FAILED, EXIT_SIGNAL_BASE, EXIT_TTL, EXIT_UNAVAILABLE, EXIT_USAGE

# Only mypy reads these: `typing` and `collections.abc` cost the client ~15 ms of CPU a call on this VM
# (docs/decisions/bench.md, "shquick"), and every annotation here is a string (the __future__ import).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, BinaryIO


def _fields(args: Args) -> dict[str, Any]:
    argv = args.command
    if not argv:
        raise ValueError("give the command after --")
    fields: dict[str, Any] = {"script": " ".join(argv)} if args.script else {"argv": argv}
    if args.timeout is not None:
        if not 0 < args.timeout <= 86400:
            raise ValueError("--timeout must be from 0 to 86400 seconds")
        fields["timeout_ms"] = max(1, int(args.timeout * 1000))
    if args.cwd is not None:
        fields["cwd"] = args.cwd
    if args.tty:
        fields["tty"] = True
    if args.apply:
        fields["apply"] = True
    return fields


def _show(frame: dict[str, Any], stdout: BinaryIO, stderr: BinaryIO, as_json: bool) -> None:
    if as_json:
        stdout.write((dumps_shown(frame) + "\n").encode())
        stdout.flush()
        return
    if "apply" in frame:
        stderr.write(applied_words(frame["apply"]).encode())
        stderr.flush()
        return
    stream = frame.get("stream")
    if stream in ("stdout", "stderr"):
        target = stdout if stream == "stdout" else stderr
        target.write(decode_chunk(frame))
        target.flush()


def applied_words(answer: dict[str, Any]) -> str:
    """What `--apply` prints on stderr: the counts, then each refused path with who refused and the row."""
    if "skipped" in answer:
        return f"sharness-launch sh: not applied: {answer['skipped']}\n"
    lines = [f"sharness-launch sh: applied {answer.get('applied', 0)}, unchanged {answer.get('unchanged', 0)}, "
             f"refused {answer.get('refused', 0)}"]
    lines += [f"  refused {outcome['path']!r} by {outcome['who']} (row `{outcome['row']}`): {outcome['detail']}"
              for outcome in answer.get("paths", []) if outcome.get("status") == "refused"]
    return "\n".join(lines) + "\n"


def _refused(error: Refused | NotTheDoor | Unreachable | ResponseError) -> int:
    if isinstance(error, Refused):
        shape = error.shape
        print(f"sharness-launch sh: refused by {shape.get('who')} (row `{shape.get('error')}`): "
              f"{shape.get('detail')}\n  hint: {shape.get('hint')}", file=sys.stderr)
        not_found = shape.get("error") == "shell.request.argv" and error.status == 404
        return EXIT_EXEC_FAILED if not_found else EXIT_FAILED
    if isinstance(error, NotTheDoor):
        print(f"sharness-launch sh: the shell socket's peer is not this session's shell door: {error}", file=sys.stderr)
        return EXIT_FAILED
    print(f"sharness-launch sh: the shell door cannot be reached: {error}", file=sys.stderr)
    return EXIT_UNAVAILABLE


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run one command through the shell door, streaming its output; return its status."""
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        if args.help:
            print(HELP, end="")
            return 0
        fields = _fields(args)
    except Usage as exc:
        print(f"{USAGE}\nsharness-launch sh: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:
        print(f"sharness-launch sh: {exc}", file=sys.stderr)
        return EXIT_USAGE
    env = process_environ() if environ is None else environ
    if not env.get("SHARNESS_SESSION"):
        print("sharness-launch sh: not inside a sharness session (SHARNESS_SESSION is not set)", file=sys.stderr)
        return EXIT_UNAVAILABLE
    try:
        final = _stream(env, fields, args.json)
    except (Refused, NotTheDoor, Unreachable, ResponseError) as error:
        return _refused(error)
    except OSError as error:
        print(f"sharness-launch sh: cannot load this session's SVID or bundle: {error}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    return shell_status(final, EXIT_TTL, EXIT_SIGNAL_BASE)


def process_environ() -> dict[str, str]:
    """The process's environment decoded as os.environ decodes it (the filesystem encoding, surrogateescape)."""
    encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
    return {name.decode(encoding, errors): value.decode(encoding, errors) for name, value in posix.environ.items()}


def program(argv: list[str]) -> int:
    """main(argv); when that call is the whole process (`sharness-launch sh ...`: its argv is the process's), the
    process ends here without the interpreter's teardown of ssl and the rest (~4 ms of CPU per call, measured in
    docs/decisions/bench.md, "Shell door"): the output is flushed, the connection closed, nothing is left."""
    code = main(argv)
    if sys.argv[1:] == ["sh", *argv]:
        sys.stdout.flush()
        sys.stderr.flush()
        posix._exit(code)
    return code


def _stream(environ: Mapping[str, str], fields: dict[str, Any], as_json: bool) -> dict[str, Any]:
    """Show every frame as it arrives; return the final record (at once: the rest of the stream is not waited)."""
    tls = connect(environ)
    try:
        for frame in frames(tls, fields, binary=not as_json):  # --json prints the NDJSON frames as they are
            _show(frame, sys.stdout.buffer, sys.stderr.buffer, as_json)
            if "final" in frame:
                return dict(frame["final"])
    finally:
        tls.close()
    raise ResponseError("the shell door ended the stream before the final record")


if __name__ == "__main__":
    raise SystemExit(main())
