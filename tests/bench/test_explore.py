"""bench.explore: variants run round-robin against their own server processes and give CPU per operation."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from bench import explore
from bench._tls import TlsOptions
from bench.handshake import SessionFiles

VARIANTS = [
    explore.Variant("stdlib pair", "stdlib", "stdlib", options=TlsOptions(num_tickets=0)),
    explore.Variant("pyopenssl pair, resumed", "pyopenssl", "pyopenssl", resume=True),
    explore.Variant("door on pyopenssl, tuned", "project", "async-tuned", backend="pyopenssl", resume=True,
                    options=TlsOptions(group="X25519")),
    explore.Variant("warm door", "project", "http", mode="warm"),
    explore.Variant("real door on pyopenssl", "realdoor", "http", backend="pyopenssl", resume=True,
                    options=TlsOptions(group="X25519")),
]


@pytest.mark.slow
def test_every_variant_gives_samples_and_cpu(session: SessionFiles) -> None:
    with tempfile.TemporaryDirectory(prefix="sharness-bench-test-") as tmp:
        tallies = explore.run_all(VARIANTS, session, Path(tmp), count=4, rounds=2)
    for variant in VARIANTS:
        row = explore._row(variant, tallies[variant.name])
        assert row["n"] > 0 and row["p50_ms"] > 0, variant.name
        assert row["server_cpu_ms"] >= 0 and row["client_cpu_ms"] > 0, variant.name


def test_variant_names_are_unique() -> None:
    names = [variant.name for variant in explore.VARIANTS]
    assert len(names) == len(set(names))
