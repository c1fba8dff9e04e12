"""The whole handshake part with tiny counts: it runs, and latest.json holds every key. No timings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import __main__ as bench_main
from bench import _plugins, handshake

TINY = handshake.Counts(fresh=3, warm=3, warmup=1, load_seconds=0.2, openssl_seconds=1, mint_repeats=1)


@pytest.mark.slow
def test_quick_run_writes_every_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(handshake, "QUICK", TINY)
    monkeypatch.setattr(_plugins, "PLUGINS", ("handshake",))
    assert bench_main.main(["--quick", "--out", str(tmp_path), "--note", "smoke test"]) == 0
    document = json.loads((tmp_path / "latest.json").read_text())
    for key in handshake.REQUIRED_KEYS:
        assert isinstance(document[key], int | float) and document[key] > 0, key
    assert document["handshake_fresh_unix_n"] == TINY.fresh
    assert document["run"]["quick"] is True and document["run"]["note"] == "smoke test"
    assert len(document["run"]["load_before"]["loadavg"]) == 3
    assert document["machine"]["cpu_count"] >= 1
    assert "samples" not in document
    assert (tmp_path / "latest.png").read_bytes().startswith(b"\x89PNG")
    printed = capsys.readouterr().out
    assert "handshake_fresh_unix_p50_ms" in printed and "baseline_stdlib_fresh_unix_p50_ms" in printed
