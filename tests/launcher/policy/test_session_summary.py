"""A session told from its audit log: acts and refusals, with the door and the manifest row."""

from __future__ import annotations

from typing import Any

import pytest

from launcher.policy.session_summary import Act, manifest_row, render_summary, summarize


def door(**fields: Any) -> dict[str, Any]:
    return {"event": "door.event", **fields}


RUN = door(door="shell", kind="shell.run", id="c1", argv=["/venv/bin/python3", "-m", "pytest", "-q"])
EXIT = door(door="shell", kind="shell.exit", id="c1", exit_code=1, signal=None, timed_out=False)
WRITE = door(door="fs", op="write", path="calc.py", bytes=225, decision="allow", row="")
GIT = door(door="fs", op="write", path=".git/config", bytes=0, decision="refuse", row="read_only")
KEY = door(door="fs", op="write", path="deploy_key", bytes=141, decision="refuse", row="refuse_secrets")
CONNECT = door(door="net", kind="net.request", method="CONNECT", requested="example.com:443", decision="refuse",
               row="doors.net.allow")
CALL = door(door="model", kind="model.call", model="claude-sonnet-4-5", charged_microusd=996, ended="complete")
OVER = door(door="model", kind="model.call", model="claude-sonnet-4-5", charged_microusd=0, ended="refused",
            row="budget_microusd")
REQUEST = door(door="fs", kind="http.request", method="PUT", path="/v0/fs/files/calc.py", status=200)


@pytest.mark.parametrize(("events", "did", "refused"), [
    ([RUN, EXIT], [Act("shell", "ran python3 -m pytest -q: exit 1")], []),
    ([{**EXIT, "exit_code": None, "timed_out": True}], [Act("shell", "ran a command: timed out")], []),
    ([WRITE, REQUEST], [Act("fs", "write calc.py (225 bytes)")], []),
    ([GIT], [], [Act("fs", "write .git/config", "doors.fs.read_only")]),
    ([KEY], [], [Act("fs", "write deploy_key", "doors.fs.refuse_secrets")]),
    ([CONNECT], [], [Act("net", "CONNECT example.com:443", "doors.net.allow")]),
    ([CALL], [Act("model", "answered a call to claude-sonnet-4-5: 996 micro-USD")], []),
    ([OVER], [], [Act("model", "answered a call to claude-sonnet-4-5: 0 micro-USD", "doors.model.budget_microusd")]),
    ([{**WRITE, "via": "mount"}], [Act("fs", "write calc.py (225 bytes, through the mount)")], []),
    ([door(door="fs", op="read", path="calc.py", bytes=0, decision="allow", via="mount")],
     [Act("fs", "read calc.py (through the mount)")], []),
    ([{"event": "app.start", "pid": 7}, door(door="fs", op="sweep", path=".", decision="allow")], [], []),
])
def test_each_door_event_is_one_act_or_one_refusal(events: list[dict[str, Any]], did: list[Act],
                                                    refused: list[Act]) -> None:
    summary = summarize(events)
    assert (summary.did, summary.refused) == (did, refused)


def test_a_summary_reads_in_the_logs_order_and_names_who_refused() -> None:
    lines = render_summary(summarize([RUN, EXIT, CALL, WRITE, GIT, KEY, CONNECT]))
    assert lines[0] == "what the app did (from the audit log, 3 acts):"
    assert "refused by the fs door, row doors.fs.read_only" in lines[-3]
    assert "refused by the net door, row doors.net.allow" in lines[-1]


@pytest.mark.parametrize(("door_name", "row", "shown"), [
    ("fs", "read_only", "doors.fs.read_only"), ("net", "doors.net.allow", "doors.net.allow"), ("fs", "", ""),
])
def test_rows_are_named_as_the_manifest_spells_them(door_name: str, row: str, shown: str) -> None:
    assert manifest_row(door_name, row) == shown
