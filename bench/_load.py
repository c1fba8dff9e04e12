"""Concurrent fresh connections from one process: ``python -m bench._load '<spec json>'``.

N trio tasks each open a fresh connection, handshake and GET /v0/hello, again and again, for a fixed
time; prints one JSON line: completions, elapsed seconds, and every latency in milliseconds.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass

import trio

from doors import Dial, client_context_from_file, fresh_exchange


@dataclass(frozen=True)
class LoadSpec:
    """Whom to load, from how many concurrent clients, for how long."""

    address: str  # a Unix socket path, or "tcp:<port>"
    clients: int
    seconds: float
    server_role: str
    client_role: str
    svid_path: str
    bundle_path: str
    trust_domain: str
    session_id: str

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    def dial(self) -> Dial:
        with open(self.bundle_path, "rb") as bundle:
            ctx = client_context_from_file(bundle.read(), self.svid_path)
        address: str | tuple[str, int] = (
            ("127.0.0.1", int(self.address[4:])) if self.address.startswith("tcp:") else self.address
        )
        return Dial(self.server_role, address, ctx, self.trust_domain, self.session_id, self.client_role)


async def _client(dial: Dial, stop_at: float, latencies: list[float]) -> None:
    while time.perf_counter() < stop_at:
        start = time.perf_counter_ns()
        await fresh_exchange(dial)
        latencies.append((time.perf_counter_ns() - start) / 1e6)


async def load(spec: LoadSpec) -> dict[str, object]:
    """Run ``spec.clients`` loops until ``spec.seconds`` pass; count what finished."""
    dial = spec.dial()
    latencies: list[float] = []
    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(spec.clients):
            nursery.start_soon(_client, dial, start + spec.seconds, latencies)
    return {"completed": len(latencies), "elapsed_s": time.perf_counter() - start, "latencies_ms": latencies}


if __name__ == "__main__":
    print(json.dumps(trio.run(load, LoadSpec(**json.loads(sys.argv[1])))), flush=True)
