"""Applying the change list through the fs door (doors/shell/_apply.py), against a fake fs door with its answers.

The fake holds a workspace as a dict tree and answers as the fs door does (201/200, 404 not_found, 409
not_empty / not_a_file / not_a_directory, 403 for paths under a read-only prefix); what each change sends and
what it answers per path is checked here. The real door's rows are judged in tests/integration.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from doors.shell._apply import FsAnswer, Ledger, apply_changes, remove_tree, summary
from doors.shell._changes import UpperEntry, applied_stamp, change_list

Tree = dict[str, Any]  # a name → a dict (a directory) or bytes (a file)


class FakeFs:
    def __init__(self, tree: Tree, read_only: tuple[str, ...] = ()) -> None:
        self.tree = tree
        self.read_only = read_only
        self.calls: list[tuple[str, str]] = []
        self.concurrency = 1

    def _parent(self, path: str) -> tuple[Tree | None, str]:
        *dirs, name = path.split("/")
        node: Any = self.tree
        for part in dirs:
            node = node.get(part) if isinstance(node, dict) else None
        return (node if isinstance(node, dict) else None), name

    def _refused(self, path: str) -> FsAnswer | None:
        if any(path == prefix or path.startswith(prefix + "/") for prefix in self.read_only):
            return FsAnswer(403, {"error": "read_only", "who": "fs", "detail": f"{path} is read-only", "hint": "h"})
        return None

    async def write(self, path: str, data: bytes, executable: bool, if_match: str | None = None) -> FsAnswer:
        self.calls.append(("write", path))
        parent, name = self._parent(path)
        refused = self._refused(path)
        if refused is not None or parent is None:
            return refused or FsAnswer(404, {"error": "not_found"})
        if isinstance(parent.get(name), dict):
            return FsAnswer(409, {"error": "not_a_file"})
        if if_match is not None and if_match != self.etag(path):
            return FsAnswer(409, {"error": "version", "who": "fs", "detail": "the file changed"})
        created = name not in parent
        parent[name] = data
        return FsAnswer(201 if created else 200, {"created": created, "etag": self.etag(path)})

    def etag(self, path: str) -> str | None:
        parent, name = self._parent(path)
        found = parent.get(name) if parent is not None else None
        return f'"{found!r}"' if isinstance(found, bytes) else None

    async def mkdir(self, path: str) -> FsAnswer:
        self.calls.append(("mkdir", path))
        parent, name = self._parent(path)
        refused = self._refused(path)
        if refused is not None or parent is None:
            return refused or FsAnswer(404, {"error": "not_found"})
        if name in parent and not isinstance(parent[name], dict):
            return FsAnswer(409, {"error": "exists"})
        created = name not in parent
        parent.setdefault(name, {})
        return FsAnswer(201 if created else 200, {"created": created})

    async def delete(self, path: str) -> FsAnswer:
        self.calls.append(("delete", path))
        parent, name = self._parent(path)
        if parent is None or name not in parent:
            return FsAnswer(404, {"error": "not_found"})
        refused = self._refused(path)
        if refused is not None:
            return refused
        if isinstance(parent[name], dict) and parent[name]:
            return FsAnswer(409, {"error": "not_empty"})
        del parent[name]
        return FsAnswer(200, {"deleted": True})

    async def listing(self, path: str) -> FsAnswer:
        parent, name = self._parent(path)
        node = parent.get(name) if parent is not None else None
        if node is None:
            return FsAnswer(404, {"error": "not_found"})
        if not isinstance(node, dict):
            return FsAnswer(409, {"error": "not_a_directory"})
        return FsAnswer(200, {"entries": [{"name": n, "kind": "dir" if isinstance(v, dict) else "file"}
                                          for n, v in sorted(node.items())]})

    async def stat(self, path: str) -> FsAnswer:
        parent, name = self._parent(path)
        node = parent.get(name) if parent is not None else None
        if node is None:
            return FsAnswer(404, {"error": "not_found"})
        return FsAnswer(200, {"kind": "dir" if isinstance(node, dict) else "file"})


def entry(path: str, kind: str = "file", **fields: Any) -> UpperEntry:
    return UpperEntry(tuple(path.split("/")), kind, **fields)


def run_apply(fs: FakeFs, entries: tuple[UpperEntry, ...], contents: dict[str, bytes | OSError | None] | None = None,
              ledger: Ledger | None = None) -> list[dict[str, Any]]:
    contents = contents or {}

    def read(upper: UpperEntry) -> bytes | None:
        found = contents.get(upper.path, upper.path.encode())
        if isinstance(found, OSError):
            raise found
        return found

    ledger = Ledger() if ledger is None else ledger
    return trio.run(apply_changes, fs, change_list(entries, ledger.stamps), read, 100, ledger)


def statuses(outcomes: list[dict[str, Any]]) -> dict[str, str]:
    return {o["path"]: o["status"] if o["status"] != "refused" else f"refused:{o['who']}:{o['row']}"
            for o in outcomes}


def test_a_build_lands_parents_first_and_a_deletion_of_a_tree_walks_it_through_the_fs_door() -> None:
    fs = FakeFs({"old": {"a": b"1", "deep": {"b": b"2"}}, "keep.txt": b"k"})
    outcomes = run_apply(fs, (entry("out", "dir"), entry("out/x"), entry("old", "whiteout")))
    assert statuses(outcomes) == {"old": "applied", "out": "applied", "out/x": "applied"}
    assert fs.tree == {"out": {"x": b"out/x"}, "keep.txt": b"k"}
    assert fs.calls[0] == ("delete", "old") and ("delete", "old/deep/b") in fs.calls


def test_deleting_what_is_gone_already_and_making_a_directory_that_is_there_are_unchanged() -> None:
    fs = FakeFs({"src": {}})
    assert statuses(run_apply(fs, (entry("gone", "whiteout"), entry("src", "dir")))) == {
        "gone": "unchanged", "src": "unchanged"}


def test_a_refused_directory_that_exists_is_unchanged_and_its_files_get_the_fs_doors_own_refusal() -> None:
    fs = FakeFs({".git": {"config": b"[core]"}}, read_only=(".git",))
    outcomes = run_apply(fs, (entry(".git", "dir"), entry(".git/config"), entry(".git/new", "dir")))
    assert statuses(outcomes) == {".git": "unchanged", ".git/config": "refused:fs:read_only",
                                  ".git/new": "refused:fs:read_only"}
    assert fs.tree == {".git": {"config": b"[core]"}}


def test_a_directory_that_became_a_file_is_removed_first_and_a_file_that_became_a_directory_too() -> None:
    fs = FakeFs({"was_dir": {"inner": b"i"}, "was_file": b"f"})
    outcomes = run_apply(fs, (entry("was_dir"), entry("was_file", "dir", opaque=True, keep=("n",)),
                              entry("was_file/n")))
    assert set(statuses(outcomes).values()) == {"applied"}
    assert fs.tree == {"was_dir": b"was_dir", "was_file": {"n": b"was_file/n"}}


def test_an_opaque_directory_keeps_only_what_the_upper_layer_holds() -> None:
    fs = FakeFs({"out": {"stale": b"s", "sub": {"x": b"x"}, "kept": b"old"}})
    outcomes = run_apply(fs, (entry("out", "dir", opaque=True, keep=("kept",)), entry("out/kept")))
    assert statuses(outcomes) == {"out": "applied", "out/kept": "applied"}
    assert fs.tree == {"out": {"kept": b"out/kept"}}


def test_what_the_shell_cannot_send_is_refused_by_the_shell_and_nothing_is_sent_for_it() -> None:
    fs = FakeFs({})
    outcomes = run_apply(fs, (entry("link", "symlink"), entry("big"), entry("busy"), entry("ok")),
                         {"big": None, "busy": OSError(16, "Device or resource busy")})
    assert statuses(outcomes) == {"big": "refused:shell:shell.apply", "busy": "refused:shell:shell.apply",
                                  "link": "refused:shell:shell.apply", "ok": "applied"}
    assert fs.calls == [("write", "ok")]
    assert "more than 100 bytes" in {o["path"]: o for o in outcomes}["big"]["detail"]


def test_the_ledger_keeps_what_was_applied_out_of_the_next_apply_and_the_refused_in() -> None:
    fs = FakeFs({".git": {}}, read_only=(".git",))
    upper = (entry("a", stamp=(1, 1, 1, 1, 0o644)), entry(".git", "dir", stamp=(2,)),
             entry(".git/x", stamp=(3, 1, 1, 1, 0o644)))
    ledger = Ledger()
    first = run_apply(fs, upper, ledger=ledger)
    assert summary(first) == {"applied": 1, "unchanged": 1, "refused": 1}
    assert ledger.stamps == {"a": applied_stamp(upper[0]), ".git": applied_stamp(upper[1])}
    assert [o["path"] for o in run_apply(fs, upper, ledger=ledger)] == [".git/x"]


def test_a_file_applied_again_is_sent_with_if_match_so_a_change_the_app_made_since_is_not_lost() -> None:
    fs = FakeFs({})
    ledger = Ledger()
    run_apply(fs, (entry("f", stamp=(1, 1, 1, 1, 0o644)),), {"f": b"v1"}, ledger)
    assert ledger.etags == {"f": fs.etag("f")}
    edited = (entry("f", stamp=(1, 2, 2, 2, 0o644)),)
    assert statuses(run_apply(fs, edited, {"f": b"v2"}, ledger)) == {"f": "applied"}  # nobody else wrote it
    fs.tree["f"] = b"the app's own edit"
    again = (entry("f", stamp=(1, 3, 3, 3, 0o644)),)
    assert statuses(run_apply(fs, again, {"f": b"v3"}, ledger)) == {"f": "refused:fs:version"}
    assert fs.tree["f"] == b"the app's own edit"


@pytest.mark.parametrize("answer", [FsAnswer(403, {"error": "read_only", "who": "fs"}), FsAnswer(507, {})])
def test_remove_tree_stops_at_the_first_refusal_and_names_it(answer: FsAnswer) -> None:
    class Refusing(FakeFs):
        async def delete(self, path: str) -> FsAnswer:
            return answer

    refusal = trio.run(remove_tree, Refusing({"d": {}}), "d")
    assert refusal is not None and refusal.status == answer.status


def test_a_run_of_writes_goes_at_once_up_to_the_concurrency_and_a_directory_waits_for_the_writes_before_it() -> None:
    class Overlapping(FakeFs):
        in_flight = most = 0

        async def write(self, path: str, data: bytes, executable: bool, if_match: str | None = None) -> FsAnswer:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            await trio.sleep(0.001 * (hash(path) % 3))  # answers come back out of order
            self.in_flight -= 1
            return await super().write(path, data, executable, if_match)

        async def mkdir(self, path: str) -> FsAnswer:
            assert self.in_flight == 0  # the writes before it have all been answered
            return await super().mkdir(path)

    fs = Overlapping({})
    fs.concurrency = 3
    upper = (*(entry(f"f{i}") for i in range(9)), entry("z", "dir"), entry("z/a"))
    outcomes = run_apply(fs, upper)
    assert fs.most == 3
    assert [o["path"] for o in outcomes] == [c.path for c in change_list(upper)]  # the list's order, not the answers'
    assert set(statuses(outcomes).values()) == {"applied"} and fs.tree["z"] == {"a": b"z/a"}
