"""bench._session_records: the bench's manifests and the parsers of what a run printed (pure)."""

from __future__ import annotations

import json

import pytest

from bench._session_records import (
    door_ready_after_create,
    imported_mark,
    manifest,
    ready_split,
    summary_of,
    top_imports,
)


def test_the_summary_is_the_json_after_what_the_app_printed() -> None:
    document = {"sid": "abcd1234", "timings_ms": {"created": 1.0}}
    assert summary_of("1795942686.520886756\n" + json.dumps(document, indent=2)) == document
    assert summary_of(json.dumps(document)) == document


def test_ready_split_places_each_mark_on_the_wall_clock() -> None:
    exec_ns = 1_000_000_000_000_000_000
    timings = {"created": 40.0, "doors_ready": 70.0, "app_started": 80.0, "torn_down": 100.0}
    app_clock = "1000000000.600000000"  # the app started 600 ms after exec
    split = ready_split(exec_ns, exec_ns + 400_000_000, app_clock, timings)
    assert split == {"imports": 400.0, "pre_session": 520.0, "from_exec": 590.0, "after_imports": 190.0,
                     "create": 40.0, "doors": 30.0}


def test_the_import_mark_is_found_among_the_launchers_messages() -> None:
    assert imported_mark("sharness-launch: hello\nsharness-bench-imported 12345\n") == 12345
    with pytest.raises(ValueError, match="no import mark"):
        imported_mark("sharness-launch: session ended\n")


def test_door_ready_counts_from_creation() -> None:
    lines = [json.dumps({"event": "session.start", "t_ms": 1.0}),
             json.dumps({"event": "door.ready", "role": "fs", "pid": 10, "t_ms": 60.5}),
             json.dumps({"event": "door.ready", "role": "keys", "pid": 11, "t_ms": 71.0})]
    assert door_ready_after_create(lines, 50.0) == {"fs": 10.5, "keys": 21.0}


def test_top_imports_ranks_top_level_packages_by_cumulative_time() -> None:
    stderr = "\n".join(["import time: self [us] | cumulative | imported package",
                        "import time:       300 |     142443 |   doors.serve",
                        "import time:       731 |     106675 |       pyroute2",
                        "import time:      1226 |      51449 |       trio",
                        "import time:       100 |     400000 | launcher",
                        "import time:       825 |      25834 | site"])
    assert top_imports(stderr, 2) == "pyroute2 107 ms, trio 51 ms"


def test_the_manifests_differ_in_doors_and_edges_only() -> None:
    full = manifest("full", "/w", ["/bin/true"])
    small = manifest("min", "/w", ["/bin/true"])
    assert sorted(full["doors"]) == ["fs", "keys", "net", "shell"]
    assert sorted(small["doors"]) == ["fs", "keys"]
    assert ["net", "keys"] in full["edges"] and small["edges"] == [["app", "fs"]]
    assert {k: v for k, v in full.items() if k not in ("doors", "edges")} == \
           {k: v for k, v in small.items() if k not in ("doors", "edges")}
