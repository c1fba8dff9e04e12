"""bench._machine: the busiest-process arithmetic and the facts every run records."""

from __future__ import annotations

from bench._machine import busiest, facts, other_load


def test_busiest_ranks_by_cpu_and_leaves_out_self_and_newcomers() -> None:
    before = {1: ("idle", 100), 2: ("busy", 0), 3: ("self", 0)}
    after = {1: ("idle", 100), 2: ("busy", 50), 3: ("self", 90), 4: ("new", 10)}
    rows = busiest(before, after, window_s=1.0, ticks_per_s=100, skip=3)
    assert rows == [{"pid": 2, "command": "busy", "cpu_pct": 50.0}]


def test_facts_name_cpus_python_and_every_openssl() -> None:
    found = facts()
    assert {"cpu_count", "python", "openssl_stdlib", "openssl_cli", "openssl_pyopenssl"} <= set(found)
    assert "OpenSSL" in str(found["openssl_stdlib"])


def test_other_load_reports_three_load_averages() -> None:
    load = other_load(window_s=0.05)
    assert isinstance(load["loadavg"], list) and len(load["loadavg"]) == 3
