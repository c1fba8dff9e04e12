"""The fs door acts only once the event of the act is queued: with the queue full, every op is a 503 and the
workspace is as it was; refusals are still answered (and reported, or counted as lost)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from doors._audit_queue import AuditBackpressure
from doors.fs import build

from .conftest import Door


class Queue:
    """An audit queue the test fills and drains: acts raise AuditBackpressure while it is full."""

    def __init__(self) -> None:
        self.full = False
        self.acts: list[dict[str, Any]] = []
        self.reports: list[dict[str, Any]] = []

    def act(self, event: dict[str, Any]) -> None:
        if self.full:
            raise AuditBackpressure("fs")
        self.acts.append(event)

    def report(self, event: dict[str, Any]) -> None:
        self.reports.append(event)


@pytest.fixture
def door(workspace: str) -> Any:
    queue = Queue()
    api = build({"workspace": workspace, "read_only": [".git"]}, queue.act, report=queue.report)
    built = Door(workspace, api)
    with open(os.path.join(workspace, "there.txt"), "wb") as out:
        out.write(b"kept\n")
    os.mkdir(os.path.join(workspace, "dir"))
    try:
        yield built, queue
    finally:
        built.close()


REQUESTS = [
    ("PUT", "/v0/fs/files/new.txt", b"x"),
    ("PUT", "/v0/fs/files/there.txt", b"replaced"),
    ("POST", "/v0/fs/append/there.txt", b"more"),
    ("POST", "/v0/fs/mkdir/newdir", b""),
    ("DELETE", "/v0/fs/files/there.txt", b""),
    ("POST", "/v0/fs/rename", json.dumps({"from": "there.txt", "to": "moved.txt"}).encode()),
    ("GET", "/v0/fs/files/there.txt", b""),
    ("GET", "/v0/fs/stat/there.txt", b""),
    ("GET", "/v0/fs/list/dir", b""),
]


@pytest.mark.parametrize(("method", "target", "payload"), REQUESTS)
async def test_a_full_queue_is_503_and_nothing_is_done(door: Any, method: str, target: str, payload: bytes) -> None:
    built, queue = door
    queue.full = True
    before = sorted(os.listdir(built.root))
    answer = await built.request(method, target, payload)
    assert answer.status == 503
    assert json.loads(answer.body) == {**json.loads(answer.body), "error": "audit_backpressure", "who": "fs"}
    assert b"kept" not in answer.body  # a read answered nothing
    assert sorted(os.listdir(built.root)) == before
    with open(os.path.join(built.root, "there.txt"), "rb") as source:
        assert source.read() == b"kept\n"
    assert queue.acts == [] and queue.reports == []  # the 503 is the transport's to report (http.request)
    queue.full = False  # the quota reserved for the refused act was given back: the same act now succeeds
    assert (await built.request(method, target, payload)).status in (200, 201, 206)
    assert [event["op"] for event in queue.acts] == [queue.acts[0]["op"]]


async def test_a_refusal_is_answered_and_reported_while_the_queue_is_full(door: Any) -> None:
    built, queue = door
    queue.full = True
    answer = await built.request("PUT", "/v0/fs/files/.git/config", b"x")
    assert answer.status == 403 and json.loads(answer.body)["error"] == "read_only"
    assert [event["row"] for event in queue.reports] == ["read_only"]
