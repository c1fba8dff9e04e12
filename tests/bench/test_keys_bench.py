"""The keys part with tiny counts against the real keys door process: it runs, releases the value it was given
(sealed at rest, by fd), and latest.json holds every key and the table its comparisons. No timings judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import __main__ as bench_main
from bench import _plugins, keys_bench

TINY = keys_bench.Counts(rounds=3, warmup=1)


@pytest.mark.slow
def test_quick_keys_run_writes_every_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(keys_bench, "QUICK", TINY)
    monkeypatch.setattr(_plugins, "PLUGINS", ("keys_bench",))
    assert bench_main.main(["--quick", "--out", str(tmp_path)]) == 0
    document = json.loads((tmp_path / "latest.json").read_text())
    for key in keys_bench.REQUIRED_KEYS:
        assert isinstance(document[key], int | float), key
    assert document["keys_release_n"] == document["keys_hello_n"] == TINY.rounds
    assert document["target_keys_release_over_hello_ms"] == keys_bench.TARGET_OVER_HELLO_MS
    printed = capsys.readouterr().out
    assert "keys_release_p50_ms" in printed and "keys_hello_p50_ms" in printed
    assert keys_bench.VALUE.decode() not in printed + (tmp_path / "latest.json").read_text()
