"""The id allocator's pure parts: the span it draws from, what it cuts out, how it draws, what it parses."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from launcher.policy import id_alloc
from launcher.policy.id_alloc import NoFreeIds, free_spans, pick_ids

SYSTEMD_RANGES = {"container (nspawn pick)": (524288, 1879048191), "foreign": (2147352576, 2147418111),
                  "homed": (60001, 60513), "dynamic users": (61184, 65519), "nobody": (65534, 65535)}


def draws(*values: int) -> Callable[[int], int]:
    """An injected randbelow returning `values` in turn (each must be below the bound it is asked for)."""
    sequence: Iterator[int] = iter(values)

    def randbelow(bound: int) -> int:
        value = next(sequence)
        assert 0 <= value < bound
        return value

    return randbelow


def test_the_session_span_is_outside_every_range_someone_else_hands_out() -> None:
    first, last = id_alloc.SESSION_IDS
    assert last < 2**31 - 1 and last - first + 1 > 268_000_000  # below signed overflow; room for randomness
    defaults = id_alloc.login_defs_spans("")
    for low, high in (*defaults, *SYSTEMD_RANGES.values()):
        assert high < first or low > last, (low, high)


@pytest.mark.parametrize(("text", "expected"), [
    ("", {"UID_MIN": 1000, "UID_MAX": 60000, "SUB_UID_MAX": 600100000, "SYS_GID_MIN": 101}),
    ("UID_MIN 2000\nUID_MAX\t0x10000\n# SUB_UID_MAX 7\nSUB_UID_MAX 010\n", {"UID_MIN": 2000, "UID_MAX": 65536,
                                                                            "SUB_UID_MAX": 8}),
    ("UID_MAX lots\nSYS_UID_MAX 1 2\n", {"UID_MAX": 60000, "SYS_UID_MAX": 999}),  # unreadable: shadow's default
])
def test_login_defs_ranges(text: str, expected: dict[str, int]) -> None:
    spans = dict(zip(id_alloc.LOGIN_DEFS_RANGES, id_alloc.login_defs_spans(text), strict=True))
    values = {low: span[0] for (low, _), span in spans.items()} | {high: span[1] for (_, high), span in spans.items()}
    assert {key: values[key] for key in expected} == expected


def test_subordinate_ranges() -> None:
    text = "alice:100000:65536\nbob:165536:65536\n\nbroken\ncarol:x:1\nzero:5:0\n"
    assert id_alloc.subordinate_spans(text) == ((100000, 165535), (165536, 231071))


@pytest.mark.parametrize(("excluded", "free"), [
    ([], ((10, 20),)),
    ([(0, 9), (21, 30)], ((10, 20),)),
    ([(12, 14)], ((10, 11), (15, 20))),
    ([(5, 10), (20, 25)], ((11, 19),)),
    ([(10, 20)], ()),
    ([(12, 12), (14, 14), (0, 11)], ((13, 13), (15, 20))),
])
def test_free_spans(excluded: list[tuple[int, int]], free: tuple[tuple[int, int], ...]) -> None:
    assert free_spans((10, 20), excluded) == free


def test_draws_are_uniform_over_the_spans_and_skip_what_is_taken() -> None:
    spans = ((10, 11), (100, 102))  # five ids: 10, 11, 100, 101, 102
    assert pick_ids(2, spans, lambda i: False, draws(0, 4)) == [10, 102]
    assert pick_ids(2, spans, lambda i: i == 100, draws(2, 3, 3, 1)) == [101, 11]  # taken and repeats skipped
    assert pick_ids(0, spans, lambda i: True, draws()) == []


def test_no_free_ids_is_said_not_looped_on() -> None:
    with pytest.raises(NoFreeIds, match="narrow those ranges"):
        pick_ids(3, ((1, 2),), lambda i: False, draws())
    with pytest.raises(NoFreeIds, match="found only 1 of 2"):
        pick_ids(2, ((1, 2),), lambda i: i == 2, draws(*([0, 1] * id_alloc.MAX_DRAWS)))


def test_the_ledger_round_trips_and_trims_at_twice_its_size() -> None:
    assert id_alloc.ledger_ids(id_alloc.ledger_text([5, 7, 1879048192])) == [5, 7, 1879048192]
    assert id_alloc.ledger_ids("5\n7\n18790") == [5, 7, 18790]  # a torn last line is a shorter number...
    assert id_alloc.ledger_ids("5\nx7\n") == [5]  # ...or none: either way the ids before it stay refused
    assert not id_alloc.needs_trim(2 * id_alloc.RECENT_IDS) and id_alloc.needs_trim(2 * id_alloc.RECENT_IDS + 1)


@pytest.mark.parametrize(("held", "torn"), [
    (0, False), (1, False), (id_alloc.RECENT_IDS, False), (id_alloc.RECENT_IDS + 1, False),
    (2 * id_alloc.RECENT_IDS, False), (2 * id_alloc.RECENT_IDS, True), (3, True),
])
def test_the_ledger_refuses_exactly_its_newest_recent_ids(held: int, torn: bool) -> None:
    ids = [1879048192 + 7 * n for n in range(held)]
    text = id_alloc.ledger_text(ids) + ("18790" if torn else "")  # a torn last line: a crash mid-append
    written = [*ids, *([18790] if torn else [])]
    ledger = id_alloc.read_ledger(text)
    newest, older = written[-id_alloc.RECENT_IDS:], written[:-id_alloc.RECENT_IDS]
    assert ledger.lines == len(written) and ledger.recent() == newest
    assert all(ledger.holds(i) for i in newest) and not any(ledger.holds(i) for i in older)
    # A prefix or suffix of a held id is another id, never held by it.
    assert not any(ledger.holds(int(str(i)[:-1])) or ledger.holds(int(str(i)[1:])) for i in newest[-3:])


STATUS = """Name:\tpython3
Umask:\t0022
State:\tS (sleeping)
Uid:\t1000\t0\t1879048200\t1000
Gid:\t1000\t1000\t1000\t1879048201
FDSize:\t64
Groups:\t4 24 1879048202
NStgid:\t4242
"""

SHM = """       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap
 1397966336          3   600              33554432  4242  4242      0 1879048300 1879048301 1879048302  1879048303 0 0 1700000000 0 0
"""  # noqa: E501 - the kernel's own header line
MSG = """       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  cgid      stime      rtime      ctime
         0          0   666           0          0     0     0   999   998   997   996          0          0 1700000000
"""  # noqa: E501


def test_ids_in_use_are_read_as_the_kernel_writes_them() -> None:
    assert id_alloc.ids_in_status(STATUS) == {1000, 0, 1879048200, 1879048201, 4, 24, 1879048202}
    assert id_alloc.ids_in_status("Name:\tx\nGroups:\t\n") == set()
    assert id_alloc.ids_in_sysvipc(SHM) == {1879048300, 1879048301, 1879048302, 1879048303}
    assert id_alloc.ids_in_sysvipc(MSG) == {999, 998, 997, 996}
    assert id_alloc.ids_in_sysvipc(SHM.splitlines()[0]) == set() and id_alloc.ids_in_sysvipc("") == set()


@pytest.mark.parametrize(("candidate", "handed_out"), [
    (id_alloc.SESSION_IDS[0] - 1, False), (id_alloc.SESSION_IDS[0], True), (id_alloc.SESSION_IDS[1], True),
    (id_alloc.SESSION_IDS[1] + 1, False), (65534, False), (1000, False),
])
def test_an_id_of_the_session_span_is_one_the_launcher_hands_out(candidate: int, handed_out: bool) -> None:
    assert id_alloc.handed_out_here(candidate) is handed_out
