"""The journal: records before creation, survives a torn append, tears down in reverse, idempotently."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from launcher.lifecycle import journal as journal_module
from launcher.lifecycle.journal import (
    KINDS,
    Journal,
    JournalEntry,
    JournalError,
    RemovalError,
    encode_entry,
    parse_journal,
)
from launcher.lifecycle.journal_removers import (
    RemovalRefused,
    Remover,
    check_path,
    parse_starttime,
    process_alive,
    process_name,
    remove_dir,
    remove_file,
    remove_pid,
    remove_svid,
)

SID = "0badc0de"


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    """(sessions root, the test root that `dir`/`file` removals may touch)."""
    run = tmp_path / "sharness-run"
    run.mkdir()
    return tmp_path / "sharness" / "sessions", run


@pytest.fixture
def journal(roots: tuple[Path, Path]) -> Iterator[Journal]:
    sessions, run = roots
    j = Journal.create(SID, str(sessions), allowed_roots=(str(run),))
    try:
        yield j
    finally:
        j.close()


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "600"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def recording_removers(calls: list[tuple[str, str]], failing: str | None = None) -> dict[str, Remover]:
    def make(kind: str) -> Remover:
        def remove(name: str) -> None:
            calls.append((kind, name))
            if name == failing:
                raise OSError(f"cannot remove {name}")

        return remove

    return {kind: make(kind) for kind in KINDS}


def test_create_names_the_launcher_first_and_keeps_the_dir_private(
    journal: Journal, roots: tuple[Path, Path]
) -> None:
    sessions, _ = roots
    lines = Path(journal.path).read_bytes().splitlines()
    assert json.loads(lines[0]) == {"kind": "launcher", "name": process_name()}
    assert journal.path == str(sessions / SID / "journal")
    assert os.stat(journal.directory).st_mode & 0o777 == 0o700
    assert os.stat(journal.path).st_mode & 0o777 == 0o600
    assert sorted(os.listdir(sessions)) == [SID]  # no staging dir left behind
    assert journal.owner() == process_name()


def test_record_appends_one_line_per_resource(journal: Journal, roots: tuple[Path, Path]) -> None:
    _, run = roots
    journal.record("user", "sh-0badc0de-fs")
    journal.record("dir", f"{run}/0badc0de")
    assert journal.entries() == [
        JournalEntry("user", "sh-0badc0de-fs"),
        JournalEntry("dir", f"{run}/0badc0de"),
    ]


def test_record_all_names_every_resource_with_one_fsync_before_any_exists(
    journal: Journal, roots: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, run = roots
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    batch = [("user", "sh-0badc0de-net"), ("group", "sh-0badc0de-net-clients"), ("dir", f"{run}/0badc0de")]
    journal.record_all(batch)
    assert len(fsyncs) == 1
    assert journal.entries() == [JournalEntry(kind, name) for kind, name in batch]


def test_record_all_refuses_the_whole_batch_for_one_bad_entry(journal: Journal, roots: tuple[Path, Path]) -> None:
    _, run = roots
    with pytest.raises(JournalError, match="outside the sharness roots"):
        journal.record_all([("dir", f"{run}/0badc0de"), ("dir", "/etc")])
    assert journal.entries() == []  # nothing of it written: the good entry is not named without the batch


@pytest.mark.parametrize(
    ("kind", "name", "why"),
    [
        ("socket", "/x", "unknown journal kind"),
        ("dir", "/etc", "outside the sharness roots"),
        ("dir", "relative/path", "not an absolute"),
        ("file", "/run/sharness/../../etc/passwd", "not an absolute normalised"),
        ("svid", "/etc/ssl/private/key.pem", "outside the sharness roots"),
        ("pid", "123", "<pid>:<starttime>"),
        ("user", "", "non-empty"),
    ],
)
def test_record_refuses_what_teardown_could_not_remove(
    journal: Journal, kind: str, name: str, why: str
) -> None:
    with pytest.raises(JournalError, match=why):
        journal.record(kind, name)
    assert journal.entries() == []


def test_a_second_journal_for_the_same_session_is_refused(journal: Journal, roots: tuple[Path, Path]) -> None:
    sessions, run = roots
    with pytest.raises(FileExistsError):
        Journal.create(SID, str(sessions), allowed_roots=(str(run),))
    assert sorted(os.listdir(sessions)) == [SID]


def test_a_torn_last_line_is_skipped_and_a_complete_unterminated_one_kept() -> None:
    owner = b'{"kind": "launcher", "name": "7:9"}\n'
    assert parse_journal(owner + b'{"kind": "user", "name": "sh-a"}\n{"kind": "netns", "na') == (
        "7:9",
        [JournalEntry("user", "sh-a")],
    )
    assert parse_journal(owner + b'{"kind": "netns", "name": "sh-b"}')[1] == [JournalEntry("netns", "sh-b")]


def test_a_corrupt_line_before_the_end_is_an_error() -> None:
    with pytest.raises(JournalError, match="journal line 2"):
        parse_journal(b'{"kind": "launcher", "name": "7:9"}\n{"kind": \n{"kind": "user", "name": "sh-a"}\n')


def test_torn_append_on_disk(journal: Journal) -> None:
    journal.record("user", "sh-0badc0de-app")
    with open(journal.path, "ab") as f:
        f.write(b'{"kind": "group", "name": "sh-0ba')
    assert journal.entries() == [JournalEntry("user", "sh-0badc0de-app")]


def test_teardown_removes_in_reverse_then_the_journal(journal: Journal) -> None:
    for kind, name in [("user", "u1"), ("group", "g1"), ("netns", "n1"), ("cgroup", "/c1"), ("pid", "5:6")]:
        journal.record(kind, name)
    calls: list[tuple[str, str]] = []
    errors: list[RemovalError] = []
    journal.teardown(errors, removers=recording_removers(calls))
    assert errors == []
    assert calls == [("pid", "5:6"), ("cgroup", "/c1"), ("netns", "n1"), ("group", "g1"), ("user", "u1")]
    assert not os.path.exists(journal.directory)


def test_teardown_ends_well_when_a_sweep_removes_the_emptied_dir_first(journal: Journal,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # Between the journal's unlink and the dir's rmdir a sweep starting elsewhere sees a dir with no journal and
    # removes it (sweep._collect_ownerless): seen in the suite under sharness-launchd's concurrent sessions.
    unlink = os.unlink

    def unlink_then_sweep(path: str) -> None:
        unlink(path)
        if path == journal.path:
            os.rmdir(journal.directory)

    monkeypatch.setattr(journal_module.os, "unlink", unlink_then_sweep)
    errors: list[RemovalError] = []
    journal.teardown(errors, removers=recording_removers([]))
    assert errors == [] and not os.path.exists(journal.directory)


def test_teardown_is_idempotent(journal: Journal) -> None:
    journal.record("user", "u1")
    calls: list[tuple[str, str]] = []
    errors: list[RemovalError] = []
    journal.teardown(errors, removers=recording_removers(calls))
    journal.teardown(errors, removers=recording_removers(calls))
    assert errors == []
    assert calls == [("user", "u1")]


def test_a_failing_remover_does_not_stop_the_others_and_stays_for_gc(journal: Journal) -> None:
    for name in ("u1", "u2", "u3"):
        journal.record("user", name)
    calls: list[tuple[str, str]] = []
    errors: list[RemovalError] = []
    journal.teardown(errors, removers=recording_removers(calls, failing="u2"))
    assert calls == [("user", "u3"), ("user", "u2"), ("user", "u1")]
    assert errors == [RemovalError("user", "u2", "OSError: cannot remove u2")]
    reopened = Journal.open(journal.path)
    assert reopened.owner() == process_name()
    assert reopened.entries() == [JournalEntry("user", "u2")]
    calls.clear()
    reopened.teardown(errors, removers=recording_removers(calls))
    assert calls == [("user", "u2")]
    assert not os.path.exists(journal.directory)


def test_svid_files_go_first_and_on_their_own_even_when_the_tree_removal_fails(
    journal: Journal, roots: tuple[Path, Path]
) -> None:
    """The key is journaled on its own and removed before anything else (wherever it was recorded), so a tree
    removal that fails, or a teardown cut short, cannot leave it on disk; the failed tree stays for gc."""
    _, run = roots
    private = run / "0badc0de" / "app"
    journal.record("dir", str(run / "0badc0de"))
    journal.record("svid", str(private / "svid.pem"))
    journal.record("dir", str(private))
    private.mkdir(parents=True)
    (private / "svid.pem").write_bytes(b"-----BEGIN PRIVATE KEY-----\n")
    journal.record("user", "u1")
    calls: list[tuple[str, str]] = []
    removers = recording_removers(calls, failing=str(private))

    def svid_remover(path: str) -> None:
        calls.append(("svid", path))
        remove_svid(path, (str(run),), ())

    removers["svid"] = svid_remover
    errors: list[RemovalError] = []
    journal.teardown(errors, removers=removers)
    assert not (private / "svid.pem").exists()
    assert calls == [("svid", str(private / "svid.pem")), ("user", "u1"), ("dir", str(private)),
                     ("dir", str(run / "0badc0de"))]
    assert [e.kind for e in errors] == ["dir"]
    assert Journal.open(journal.path).entries() == [JournalEntry("dir", str(private))]


def test_svid_removal_unlinks_a_link_and_leaves_a_directory_to_the_tree(tmp_path: Path) -> None:
    run, outside = tmp_path / "sharness-run", tmp_path / "outside"
    run.mkdir()
    outside.mkdir()
    (outside / "keep").write_bytes(b"keep")
    (run / "svid.pem").symlink_to(outside / "keep")
    remove_svid(f"{run}/svid.pem", (str(run),), ())
    assert not (run / "svid.pem").is_symlink() and (outside / "keep").read_bytes() == b"keep"
    (run / "svid.pem").mkdir()
    remove_svid(f"{run}/svid.pem", (str(run),), ())
    assert (run / "svid.pem").is_dir()
    remove_svid(f"{run}/no/such/svid.pem", (str(run),), ())
    with pytest.raises(RemovalRefused, match="outside the sharness roots"):
        remove_svid(str(outside / "keep"), (str(run),), ())


def test_teardown_removes_real_dirs_files_and_processes(
    journal: Journal, roots: tuple[Path, Path], sleeper: subprocess.Popen[bytes]
) -> None:
    _, run = roots
    tree = run / "0badc0de"
    journal.record("dir", str(tree))
    (tree / "doors").mkdir(parents=True)
    (tree / "doors" / "fs.sock").write_bytes(b"")
    lone = run / "sh-lone-file"
    journal.record("file", str(lone))
    lone.write_bytes(b"x")
    journal.record("pid", process_name(sleeper.pid))
    errors: list[RemovalError] = []
    removed: list[JournalEntry] = []
    journal.teardown(errors, removed=removed)
    assert errors == []
    assert [e.kind for e in removed] == ["pid", "file", "dir"]
    assert not tree.exists() and not lone.exists()
    assert sleeper.wait() == -9
    assert not os.path.exists(journal.directory)


def test_dir_removal_never_follows_a_symlink(tmp_path: Path) -> None:
    run, outside = tmp_path / "sharness-run", tmp_path / "sharness-outside"
    (run / "tree").mkdir(parents=True)
    outside.mkdir()
    (outside / "keep").write_bytes(b"keep")
    (run / "tree" / "link").symlink_to(outside)
    (run / "alias").symlink_to(outside)
    with pytest.raises(RemovalRefused, match="not one"):
        remove_dir(f"{run}/alias", (str(run),), ())
    with pytest.raises(RemovalRefused, match="symlink"):
        remove_dir(f"{run}/alias/keep", (str(run),), ())
    with pytest.raises(RemovalRefused, match="symlink"):
        remove_file(f"{run}/alias/keep", (str(run),), ())
    remove_dir(f"{run}/tree", (str(run),), ())
    assert not (run / "tree").exists()
    assert (outside / "keep").read_bytes() == b"keep"


def test_path_removal_stays_inside_the_roots(tmp_path: Path) -> None:
    victim = tmp_path / "sh-victim"
    victim.mkdir()
    with pytest.raises(RemovalRefused, match="outside the sharness roots"):
        remove_dir(str(victim))
    with pytest.raises(RemovalRefused, match="holds the session journals"):
        check_path("/run/sharness/sessions", ("/run/sharness",), ("/run/sharness/sessions",))
    with pytest.raises(RemovalRefused, match="outside"):
        check_path("/run/sharness", ("/run/sharness",), ())
    assert victim.exists()


def test_removing_what_is_gone_is_success(tmp_path: Path) -> None:
    run = str(tmp_path)
    remove_dir(f"{run}/no/such/dir", (run,), ())
    remove_file(f"{run}/no-such-file", (run,), ())
    remove_pid("4194304:1")  # above pid_max: no such process


def test_pid_removal_spares_a_process_with_another_start_time(sleeper: subprocess.Popen[bytes]) -> None:
    pid, start = process_name(sleeper.pid).split(":")
    remove_pid(f"{pid}:{int(start) + 1}")
    assert process_alive(f"{pid}:{start}")
    with pytest.raises(RemovalRefused, match="init or this launcher"):
        remove_pid(process_name())


def test_starttime_survives_a_hostile_command_name() -> None:
    fields = " ".join(["S"] + ["0"] * 18 + ["4242"] + ["0"] * 10)
    assert parse_starttime(f"77 (evil) 1 2 3 ) {fields}".encode()) == 4242


@given(
    names=st.lists(st.text(min_size=1, max_size=12).filter(lambda n: "\x00" not in n), min_size=1, max_size=6),
    data=st.data(),
)
def test_a_crash_at_any_byte_leaves_a_prefix_of_the_entries(names: list[str], data: st.DataObject) -> None:
    journal = encode_entry("launcher", "7:9") + b"".join(encode_entry("user", name) for name in names)
    cut = data.draw(st.integers(0, len(journal)))
    owner, entries = parse_journal(journal[:cut])
    assert entries == [JournalEntry("user", name) for name in names][: len(entries)]
    assert owner in (None, "7:9")


def test_a_journal_is_made_even_when_a_sweep_removes_the_empty_root_meanwhile(
        roots: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep and the last session's end rmdir an empty sessions root; one doing so between the root's mkdir
    and the journal's staging mkdir must not fail the session that is starting."""
    sessions, run = roots
    real = journal_module._ensure_dir
    removed: list[str] = []

    def then_swept(path: str, mode: int) -> None:
        real(path, mode)
        if path == str(sessions) and not removed:
            os.rmdir(path)  # what sweep_lock.remove_if_empty does under its lock
            removed.append(path)

    monkeypatch.setattr(journal_module, "_ensure_dir", then_swept)
    made = Journal.create(SID, str(sessions), allowed_roots=(str(run),))
    made.close()
    assert removed and (sessions / SID / "journal").is_file()
