"""Session ids from the machine's view: the ledger refuses what was handed out, what is in use is refused."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from launcher.kernel import session_ids
from launcher.policy import id_alloc

FIRST = id_alloc.SESSION_IDS[0]


def _index(candidate: int) -> int:
    """Where `candidate` lies among the ids this machine's allocator draws from."""
    spans = id_alloc.free_spans(id_alloc.SESSION_IDS, session_ids.excluded_spans())
    before = 0
    for first, last in spans:
        if first <= candidate <= last:
            return before + candidate - first
        before += last - first + 1
    raise AssertionError(f"{candidate} is not drawable here")


def prefers(*candidates: int) -> Callable[[int], int]:
    """An injected randbelow that offers `candidates` first, then counts up from the span's start."""
    offered: Iterator[int] = iter([*(_index(c) for c in candidates), *range(10**6)])
    return lambda bound: next(offered)


def test_two_allocations_in_a_row_never_share_an_id_even_when_the_dice_repeat(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ids" / "handed-out")
    first = session_ids.allocate(6, set(), ledger=ledger, randbelow=prefers(FIRST + 1, FIRST + 2))
    second = session_ids.allocate(6, set(), ledger=ledger, randbelow=prefers(FIRST + 1, FIRST + 2))
    assert first[:2] == [FIRST + 1, FIRST + 2]
    assert not set(first) & set(second) and len(set(second)) == 6
    assert id_alloc.ledger_ids(Path(ledger).read_text()) == [*first, *second]
    assert os.stat(tmp_path / "ids").st_mode & 0o777 == 0o700 and os.stat(ledger).st_mode & 0o777 == 0o600


def test_taken_ids_the_avoid_set_among_them_are_refused(tmp_path: Path) -> None:
    ledger = str(tmp_path / "handed-out")
    picked = session_ids.allocate(1, {FIRST + 5}, ledger=ledger, randbelow=prefers(FIRST + 5, FIRST + 6))
    assert picked == [FIRST + 6]


def test_the_ledger_keeps_only_the_newest_once_it_doubles(tmp_path: Path) -> None:
    ledger = tmp_path / "handed-out"
    old = [FIRST + 1000 + i for i in range(2 * id_alloc.RECENT_IDS)]
    ledger.write_text(id_alloc.ledger_text(old))
    picked = session_ids.allocate(1, set(), ledger=str(ledger), randbelow=prefers(FIRST + 1000, FIRST + 1))
    kept = id_alloc.ledger_ids(ledger.read_text())
    assert len(kept) == id_alloc.RECENT_IDS and kept[-1] == picked[0] == FIRST + 1000  # older than RECENT_IDS
    assert kept[:-1] == old[-(id_alloc.RECENT_IDS - 1):]


@pytest.fixture
def lingering() -> Iterator[dict[str, int]]:
    """Ids in use without an account: a process, a SysV segment and a /tmp file, each of its own id."""
    process_uid, ipc_uid, file_uid = FIRST + 11, FIRST + 12, FIRST + 13
    sleeper = subprocess.Popen(["setpriv", f"--reuid={process_uid}", f"--regid={process_uid}", "--clear-groups",
                                "sleep", "600"])
    made = subprocess.run(["setpriv", f"--reuid={ipc_uid}", f"--regid={ipc_uid}", "--clear-groups",
                           "ipcmk", "-M", "4096"], capture_output=True, text=True, check=True)
    shmid = made.stdout.split()[-1]
    handle, path = tempfile.mkstemp(prefix="sh-test-ids-", dir="/tmp")
    os.close(handle)
    os.chown(path, file_uid, file_uid)
    try:
        yield {"process": process_uid, "ipc": ipc_uid, "file": file_uid}
    finally:
        sleeper.kill()
        sleeper.wait()
        subprocess.run(["ipcrm", "-m", shmid], check=False)
        os.unlink(path)


@pytest.mark.root
def test_ids_held_by_a_process_an_ipc_object_or_a_file_are_refused(lingering: dict[str, int],
                                                                   tmp_path: Path) -> None:
    assert set(lingering.values()) <= session_ids.ids_in_use()
    held = sorted(lingering.values())
    picked = session_ids.allocate(1, set(), ledger=str(tmp_path / "l"), randbelow=prefers(*held, FIRST + 14))
    assert picked == [FIRST + 14]


@pytest.mark.root
def test_an_id_deep_in_a_long_groups_line_is_in_use() -> None:
    """A process in 2 000 supplementary groups has a /proc status of some 23 kB: the last group is still read."""
    last = FIRST + 2100
    groups = ",".join(str(FIRST + 101 + i) for i in range(1999)) + f",{last}"
    holder = subprocess.Popen(["setpriv", f"--groups={groups}", "sh", "-c", "echo in; exec sleep 600"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "in\n"  # its groups are set by now
        assert len(Path(f"/proc/{holder.pid}/status").read_text()) > session_ids.STATUS_BYTES
        assert last in session_ids.ids_in_use()
    finally:
        holder.kill()
        holder.wait()
