"""`python -m doors.model.twin --listen HOST:PORT [--script FILE]`: the twin as a plain HTTP server.

Prints `listening HOST:PORT` (the bound port, when 0 was asked) on stdout once it accepts connections.
"""

from __future__ import annotations

import argparse
import functools
import sys

import trio

from doors.model.twin._script import TwinScript, TwinScriptError
from doors.model.twin._server import ServerLimits, serve_twin
from doors.model.twin._upstream import TwinUpstream


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


async def _run(host: str, port: int, upstream: TwinUpstream, limits: ServerLimits) -> None:
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(functools.partial(serve_twin, host, port, upstream, limits))
        print(f"listening {bound[0]}:{bound[1]}", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, load the script, serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m doors.model.twin", description=__doc__)
    parser.add_argument("--listen", type=_address, required=True, help="HOST:PORT (port 0: any free port)")
    parser.add_argument("--script", help="a twin script (doors/model/twin/README.md); default: echo replies")
    parser.add_argument("--max-body-bytes", type=int, default=ServerLimits.max_body_bytes)
    args = parser.parse_args(argv)
    try:
        script = TwinScript.load(args.script) if args.script else None
    except TwinScriptError as exc:
        parser.error(str(exc))
    host, port = args.listen
    try:
        trio.run(_run, host, port, TwinUpstream(script), ServerLimits(max_body_bytes=args.max_body_bytes))
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
