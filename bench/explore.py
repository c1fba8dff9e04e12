"""The option study behind docs/decisions/bench.md: `python -m bench.explore [--count N]`.

Each variant changes one thing against the plain pair (server in its own process, client here, Unix
socket, P-256 session certificates, X25519 key exchange) and reports p50/p90/p99 side by side.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from bench import _clients, _inproc, _machine, _project
from bench._certs import CertFiles, write_bench_pki
from bench._door import DoorSpec
from bench._procs import Server, server_process
from bench._realdoor import real_door
from bench._report import write_json
from bench._servers import ServerSpec
from bench._stats import summarize
from bench._tls import TlsOptions, pyopenssl_context, stdlib_context
from bench.handshake import SessionFiles, session_files

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Variant:
    """One configuration: which server and client, which certificates, which TLS options."""

    name: str
    server: str  # stdlib | pyopenssl | trio | project (bench._door) | realdoor (python -m doors)
    client: str  # stdlib | pyopenssl | http | http-pyopenssl | async | async-tuned
    mode: str = "fresh"  # fresh | warm
    certs: str = "pki"  # pki (the session PKI) | p256 | ed25519 (bench-minted)
    options: TlsOptions = field(default_factory=TlsOptions)
    resume: bool = False
    context_per_connection: bool = False
    backend: str = "stdlib"  # project door and async clients on "pyopenssl" (bench._tls contexts with `options`)


VARIANTS = (
    Variant("stdlib/stdlib (baseline)", "stdlib", "stdlib"),
    Variant("stdlib/stdlib, server sends no tickets", "stdlib", "stdlib", options=TlsOptions(num_tickets=0)),
    Variant("stdlib/stdlib, server sends 1 ticket", "stdlib", "stdlib", options=TlsOptions(num_tickets=1)),
    Variant("stdlib/stdlib, resumed (PSK + ECDHE)", "stdlib", "stdlib", resume=True),
    Variant("stdlib/stdlib, P-256 key exchange", "stdlib", "stdlib", options=TlsOptions(group="P-256")),
    Variant("stdlib/stdlib, P-256 certs (bench-minted)", "stdlib", "stdlib", certs="p256"),
    Variant("stdlib/stdlib, Ed25519 certs", "stdlib", "stdlib", certs="ed25519"),
    Variant("stdlib/stdlib, client context per connection", "stdlib", "stdlib", context_per_connection=True),
    Variant("pyopenssl/pyopenssl (OpenSSL 4)", "pyopenssl", "pyopenssl"),
    Variant("pyopenssl/pyopenssl, Ed25519 certs", "pyopenssl", "pyopenssl", certs="ed25519"),
    Variant("pyopenssl/pyopenssl, P-256 key exchange", "pyopenssl", "pyopenssl", options=TlsOptions(group="P-256")),
    Variant("pyopenssl/pyopenssl, AES-128-GCM", "pyopenssl", "pyopenssl",
            options=TlsOptions(ciphersuite="TLS_AES_128_GCM_SHA256")),
    Variant("pyopenssl/pyopenssl, ChaCha20-Poly1305", "pyopenssl", "pyopenssl",
            options=TlsOptions(ciphersuite="TLS_CHACHA20_POLY1305_SHA256")),
    Variant("pyopenssl server/stdlib client", "pyopenssl", "stdlib"),
    Variant("pyopenssl server/stdlib client, resumed", "pyopenssl", "stdlib", resume=True),
    Variant("stdlib server/pyopenssl client", "stdlib", "pyopenssl"),
    Variant("trio SSLStream server/stdlib client", "trio", "stdlib"),
    Variant("trio SSLStream server/stdlib client, resumed", "trio", "stdlib", resume=True),
    Variant("project door/blocking stdlib+h11 client", "project", "http"),
    Variant("project door/blocking stdlib+h11 client, resumed", "project", "http", resume=True),
    Variant("project door/project async client", "project", "async"),
    Variant("real door (python -m doors)/project async client", "realdoor", "async"),
    Variant("real door/app's DoorClient-style blocking stdlib+h11", "realdoor", "http"),
    Variant("project door/project async client, resumed", "project", "async", resume=True),
    Variant("project door/async client, tuned (no .session per connection)", "project", "async-tuned"),
    Variant("project door 0 tickets/async client, tuned", "project", "async-tuned",
            options=TlsOptions(num_tickets=0)),
    Variant("project door 1 ticket/async client, tuned, one ticket reused", "project", "async-tuned",
            options=TlsOptions(num_tickets=1), resume=True),
    Variant("project door 2 tickets/async client, tuned, one ticket reused", "project", "async-tuned",
            resume=True),
    Variant("project door 1 ticket/blocking stdlib+h11 client, one ticket reused", "project", "http",
            options=TlsOptions(num_tickets=1), resume=True),
    Variant("project on pyOpenSSL (X25519MLKEM768)/async on pyOpenSSL", "project", "async-tuned",
            backend="pyopenssl"),
    Variant("project on pyOpenSSL X25519/async on pyOpenSSL", "project", "async-tuned", backend="pyopenssl",
            options=TlsOptions(group="X25519")),
    Variant("project on pyOpenSSL X25519/async on pyOpenSSL, one ticket reused", "project", "async-tuned",
            backend="pyopenssl", options=TlsOptions(group="X25519"), resume=True),
    Variant("project on pyOpenSSL X25519/blocking stdlib+h11 client", "project", "http", backend="pyopenssl",
            options=TlsOptions(group="X25519")),
    Variant("project on pyOpenSSL X25519/blocking stdlib+h11 client, resumed", "project", "http",
            backend="pyopenssl", options=TlsOptions(group="X25519"), resume=True),
    Variant("real door on pyOpenSSL X25519/async on pyOpenSSL, one ticket reused", "realdoor", "async-tuned",
            backend="pyopenssl", options=TlsOptions(group="X25519"), resume=True),
    Variant("real door on pyOpenSSL X25519/blocking stdlib+h11 client, one ticket reused", "realdoor", "http",
            backend="pyopenssl", options=TlsOptions(group="X25519"), resume=True),
    Variant("real door/blocking stdlib+h11 client, one ticket reused", "realdoor", "http", resume=True),
    Variant("real door on pyOpenSSL X25519/blocking pyOpenSSL+h11 client", "realdoor", "http-pyopenssl",
            backend="pyopenssl", options=TlsOptions(group="X25519")),
    Variant("real door on pyOpenSSL X25519/blocking pyOpenSSL+h11 client, one ticket reused", "realdoor",
            "http-pyopenssl", backend="pyopenssl", options=TlsOptions(group="X25519"), resume=True),
    Variant("warm: stdlib/stdlib 64-byte echo", "stdlib", "stdlib", mode="warm"),
    Variant("warm: pyopenssl/pyopenssl 64-byte echo", "pyopenssl", "pyopenssl", mode="warm"),
    Variant("warm: trio SSLStream server/stdlib echo", "trio", "stdlib", mode="warm"),
    Variant("warm: project door/blocking stdlib+h11 GET", "project", "http", mode="warm"),
    Variant("warm: project door/project async client GET", "project", "async", mode="warm"),
    Variant("warm: real door/project async client GET", "realdoor", "async", mode="warm"),
    Variant("warm: project door/async connect+exchange GET (tuned)", "project", "async-tuned", mode="warm"),
    Variant("warm: project on pyOpenSSL/async on pyOpenSSL GET (tuned)", "project", "async-tuned", mode="warm",
            backend="pyopenssl", options=TlsOptions(group="X25519")),
)


def _files(variant: Variant, session: SessionFiles, workdir: Path) -> tuple[CertFiles, CertFiles]:
    if variant.certs == "pki":
        return session.server, session.client
    directory = workdir / variant.certs
    if not directory.exists():
        directory.mkdir()
        write_bench_pki(directory, ("fs", "app"), variant.certs)
    bundle = directory / "bundle.crt"
    return (CertFiles(directory / "fs.crt", directory / "fs.key", bundle),
            CertFiles(directory / "app.crt", directory / "app.key", bundle))


Loop = Callable[[str], list[float]]


def _client_loop(variant: Variant, client: CertFiles, session: SessionFiles, count: int) -> Loop:
    """The variant's client loop; async clients on the pyOpenSSL backend dial with the variant's context."""
    warm = variant.mode == "warm"
    if variant.client.startswith("async"):
        async_ctx = pyopenssl_context(client, False, variant.options) if variant.backend == "pyopenssl" else None
        if variant.client == "async-tuned":
            if warm:
                return lambda address: trio.run(_project._warm_tuned, _project._dial(session, address, async_ctx),
                                                count)
            return lambda address: trio.run(_project._fresh_tuned, _project._dial(session, address, async_ctx),
                                            count, variant.resume)
        if warm:
            return lambda address: trio.run(_project._warm, _project._dial(session, address, async_ctx), count)
        return lambda address: trio.run(_project._fresh, _project._dial(session, address, async_ctx), count,
                                        variant.resume)
    if variant.client == "http-pyopenssl":
        http_ctx = pyopenssl_context(client, False, variant.options)
        return lambda address: _clients.fresh_http_pyopenssl(address, http_ctx, count, variant.resume)
    if variant.client == "pyopenssl":
        py_ctx = pyopenssl_context(client, False, variant.options)
        if warm:
            return lambda address: _clients.warm_pyopenssl(address, py_ctx, count)
        return lambda address: _clients.fresh_pyopenssl(address, py_ctx, count, variant.resume)
    ctx = stdlib_context(client, False, variant.options)
    if variant.client == "http":
        if warm:
            return lambda address: _clients.warm_http(address, ctx, count)
        return lambda address: _clients.fresh_http(address, ctx, count, variant.resume)
    if warm:
        return lambda address: _clients.warm_stdlib(address, ctx, count)
    if variant.context_per_connection:
        return lambda address: [
            sample for _ in range(count)
            for sample in _clients.fresh_stdlib(address, stdlib_context(client, False, variant.options), 1)
        ]
    return lambda address: _clients.fresh_stdlib(address, ctx, count, variant.resume)


def _server_spec(variant: Variant, session: SessionFiles, server: CertFiles, address: str) -> tuple[str, str]:
    if variant.server == "project":
        return "bench._door", DoorSpec("fs", address, str(server.cert), str(server.bundle),
                                       session.pki.trust_domain, session.pki.session_id,
                                       variant.options.num_tickets, variant.backend,
                                       variant.options.group).to_json()
    return "bench._servers", ServerSpec(variant.server, address, str(server.cert), str(server.key),
                                        str(server.bundle), variant.options.to_dict()).to_json()


@dataclass
class Tally:
    """One variant's samples and CPU seconds, summed over rounds."""

    samples: list[float] = field(default_factory=list)
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0


def run_round(variant: Variant, server: Server, loop: Callable[[str], list[float]], tally: Tally,
              warmup: int) -> None:
    """One round of one variant against its running server; CPU time of both sides is added up."""
    server_before, client_before = server.cpu_s(), time.process_time()
    samples = loop(server.address)
    tally.client_cpu_s += time.process_time() - client_before
    tally.server_cpu_s += server.cpu_s() - server_before
    tally.samples.extend(samples[warmup:])


def run_all(variants: list[Variant], session: SessionFiles, workdir: Path, count: int,
            rounds: int) -> dict[str, Tally]:
    """Start every variant's server at once, then take the samples round-robin so drift in the
    machine's load falls on every variant alike."""
    tallies = {variant.name: Tally() for variant in variants}
    with ExitStack() as stack:
        running = []
        for index, variant in enumerate(variants):
            server_files, client_files = _files(variant, session, workdir)
            address = str(workdir / f"sh-bench-explore-{index}.sock")
            if variant.server == "realdoor":  # the door's own context: pyOpenSSL, X25519 first
                server = stack.enter_context(real_door(session.pki, "fs", address))
            else:
                module, spec_json = _server_spec(variant, session, server_files, address)
                server = stack.enter_context(server_process(module, spec_json, address))
            per_round = max(1, count * (4 if variant.mode == "warm" else 1) // rounds)
            running.append((variant, server, _client_loop(variant, client_files, session, per_round + 5)))
        for _ in range(rounds):
            for variant, server, loop in running:
                run_round(variant, server, loop, tallies[variant.name], warmup=5)
    return tallies


def _row(variant: Variant, tally: Tally) -> dict[str, Any]:
    summary = summarize("s", tally.samples)
    done = len(tally.samples)
    return {"variant": variant.name, **{k[2:]: v for k, v in summary.items()},
            "server_cpu_ms": round(tally.server_cpu_s * 1000 / done, 3),
            "client_cpu_ms": round(tally.client_cpu_s * 1000 / done, 3)}


def _line(row: dict[str, Any]) -> str:
    return (f"{row['variant']:<52} p50 {row['p50_ms']:7.3f} p90 {row['p90_ms']:7.3f} p99 {row['p99_ms']:7.3f}"
            f"  cpu srv {row['server_cpu_ms']:6.3f} cli {row['client_cpu_ms']:6.3f} ms  n={row['n']}")


def inproc_main(count: int, rounds: int) -> int:
    """Both ends in this process over memory BIOs: the TLS library's CPU per handshake, best of rounds."""
    load_before = _machine.other_load()
    with tempfile.TemporaryDirectory(prefix="sharness-bench-") as tmp:
        workdir = Path(tmp)
        session = session_files(workdir)
        sets = {"session PKI (P-256)": (session.server, session.client)}
        for key_type in ("ed25519", "rsa2048"):
            directory = workdir / key_type
            directory.mkdir()
            files = write_bench_pki(directory, ("fs", "app"), key_type)
            sets[key_type] = (files["fs"], files["app"])
        rows = _inproc.study(sets, count, rounds)
    for row in rows:
        print(f"{row['certs']:<20} {row['variant']:<52} {row['cpu_ms_both_sides']:6.3f} ms CPU", flush=True)
    RESULTS.mkdir(exist_ok=True)
    write_json(RESULTS / "explore-inproc.json", {"rows": rows, "machine": _machine.facts(),
                                                 "load_before": load_before, "load_after": _machine.other_load()})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.explore", description=__doc__)
    parser.add_argument("--count", type=int, default=500, help="samples per fresh variant (x4 for warm)")
    parser.add_argument("--only", default="", help="run only variants whose name contains one of these ('|'-separated)")
    parser.add_argument("--rounds", type=int, default=5, help="round-robin passes over the variants")
    parser.add_argument("--inproc", action="store_true", help="only the in-process handshake CPU study")
    args = parser.parse_args(argv)
    if args.inproc:
        return inproc_main(args.count, args.rounds)
    rows: list[dict[str, Any]] = []
    load_before = _machine.other_load()
    wanted = args.only.split("|")
    chosen = [variant for variant in VARIANTS if any(part in variant.name for part in wanted)]
    with tempfile.TemporaryDirectory(prefix="sharness-bench-") as tmp:
        workdir = Path(tmp)
        session = session_files(workdir)
        tallies = run_all(chosen, session, workdir, args.count, args.rounds)
    for variant in chosen:
        tally = tallies[variant.name]
        rows.append(_row(variant, tally))
        print(_line(rows[-1]), flush=True)
    document = {"variants": rows, "machine": _machine.facts(),
                "load_before": load_before, "load_after": _machine.other_load()}
    RESULTS.mkdir(exist_ok=True)
    write_json(RESULTS / ("explore.json" if not args.only else "explore-partial.json"), document)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
