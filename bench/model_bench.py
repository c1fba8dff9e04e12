"""model door figures: the latency the door adds over calling the twin directly (non-streaming, and time to
the first streamed byte), and streaming events per second through the door beside direct.

Two processes, each Python and trio on its own: the twin as a plain HTTP server (`python -m doors.model.twin`),
and the model door's gateway (the same Gateway and plain-HTTP loop the door serves the app's netns with) in
front of its own in-process twin, with a budget nothing in the bench can spend. The client is one blocking
keep-alive connection to each, alternating, so both see the same machine load. No root, no session: this
measures the door's own code (budget, usage reading, audit records, HTTP framing), not the confinement.

    .venv/bin/python -m bench.model_bench [--quick]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from typing import Any

from bench._stats import rate_per_s, ratio, summarize

RATIOS = (("model_stream_events_per_s_door", "model_stream_events_per_s_direct"),)
MODEL = "claude-haiku-4-5"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def serve_door(port: int) -> None:
    """The door's gateway on 127.0.0.1:`port` (plain HTTP, caller "app"), its upstream the in-process twin."""
    import trio

    from doors import Router
    from doors.model import Gateway, config_from_rows
    from doors.model.server import serve_plain
    from doors.model.twin import TwinUpstream

    config = config_from_rows({"upstream": "twin", "budget_microusd": 10**15})
    gateway = Gateway(config, TwinUpstream(None), None, lambda event: None, lambda event: None)

    async def main() -> None:
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
        print("listening", flush=True)
        await serve_plain(listeners[0], "app", Router("model", gateway.routes()))

    trio.run(main)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(argv: list[str]) -> subprocess.Popen[str]:
    process = subprocess.Popen([sys.executable, *argv], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    if not process.stdout.readline().startswith("listening"):
        process.kill()
        raise RuntimeError(f"bench: {argv} did not start")
    return process


def _body(stream: bool, content: str = "hello", max_tokens: int = 64) -> bytes:
    return json.dumps({"model": MODEL, "max_tokens": max_tokens, "stream": stream,
                       "messages": [{"role": "user", "content": content}]}).encode()


HEADERS = {"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "bench"}


def _call_ms(conn: http.client.HTTPConnection, body: bytes) -> tuple[float, float, int]:
    """(ms to the first body byte, ms to the end, SSE events read) for one call on a kept connection."""
    start = time.perf_counter()
    conn.request("POST", "/v1/messages", body, HEADERS)
    response = conn.getresponse()
    first = response.read1(65536)
    first_ms = (time.perf_counter() - start) * 1000
    rest = response.read()
    end_ms = (time.perf_counter() - start) * 1000
    if response.status != 200:
        raise RuntimeError(f"bench: the call answered {response.status}: {(first + rest)[:200]!r}")
    return first_ms, end_ms, (first + rest).count(b"\nevent: ") + (first + rest).startswith(b"event: ")


def _cpu_s(pid: int) -> float:
    """CPU seconds `pid` has used (user + system): a per-call figure the machine's load barely moves."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(ports: dict[str, int], pids: dict[str, int], quick: bool) -> dict[str, Any]:
    conns = {name: http.client.HTTPConnection("127.0.0.1", port, timeout=60) for name, port in ports.items()}
    rounds, long_tokens = (100, 2000) if quick else (1000, 10000)
    plain, ttft = _body(False), _body(True)
    long = _body(True, f"[twin:tokens={long_tokens}] go", long_tokens + 10)
    samples: dict[str, dict[str, list[float]]] = {"model non-streaming (ms)": {}, "model first byte (ms)": {}}
    for name in conns:  # warm both: imports, first connection
        for _ in range(20):
            _call_ms(conns[name], plain)
    for name in ports:
        samples["model non-streaming (ms)"][name] = []
        samples["model first byte (ms)"][name] = []
    cpu_before = {name: _cpu_s(pid) for name, pid in pids.items()}
    for _ in range(rounds):
        for name, conn in conns.items():
            samples["model non-streaming (ms)"][name].append(_call_ms(conn, plain)[1])
            samples["model first byte (ms)"][name].append(_call_ms(conn, ttft)[0])
    figures: dict[str, Any] = {f"model_cpu_per_call_{name}_ms": round((_cpu_s(pid) - cpu_before[name]) * 1000
                                                                      / (2 * rounds), 4)
                               for name, pid in pids.items()}
    for name in conns:
        figures.update(summarize(f"model_call_{name}", samples["model non-streaming (ms)"][name]))
        figures.update(summarize(f"model_ttfb_{name}", samples["model first byte (ms)"][name]))
        best = 0.0
        for _ in range(3):
            _, end_ms, events = _call_ms(conns[name], long)
            best = max(best, rate_per_s(events, end_ms / 1000))
        figures[f"model_stream_events_per_s_{name}"] = best
        figures["model_stream_events"] = events
    for kind in ("call", "ttfb"):
        for pct in (50, 99):
            added = figures[f"model_{kind}_door_p{pct}_ms"] - figures[f"model_{kind}_direct_p{pct}_ms"]
            figures[f"model_{kind}_added_p{pct}_ms"] = round(added, 4)
    figures["model_stream_ratio"] = ratio(figures["model_stream_events_per_s_door"],
                                          figures["model_stream_events_per_s_direct"])
    for conn in conns.values():
        conn.close()
    return {**figures, "samples": samples}


def run(quick: bool) -> dict[str, Any]:
    """The figures (see RATIOS); no root needed."""
    ports = {"direct": _free_port(), "door": _free_port()}
    processes = [_start(["-m", "doors.model.twin", "--listen", f"127.0.0.1:{ports['direct']}"]),
                 _start(["-m", "bench.model_bench", "--serve-door", str(ports["door"])])]
    try:
        return _measure(ports, {"direct": processes[0].pid, "door": processes[1].pid}, quick)
    finally:
        for process in processes:
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.model_bench", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--serve-door", metavar="PORT", type=int)
    args = parser.parse_args()
    if args.serve_door is not None:
        serve_door(args.serve_door)
    else:
        result = run(args.quick)
        result.pop("samples", None)
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
