"""Which uids and gids a session's accounts get. Pure: the caller reads the facts and supplies the randomness.

Rule (docs/contracts.md): an id drawn uniformly at random from SESSION_IDS, minus every range another
allocator hands out (login.defs: system, regular and subordinate ranges; /etc/subuid and /etc/subgid), and
never an id that is taken: by an account, a running process, an IPC object or a file the launcher knows of,
the caller's avoid set (the workspace owner), or one of the last RECENT_IDS ids handed out (the ledger).
Why random in a wide span, and why a ledger too: docs/decisions/kernel.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

# Between systemd's container range (524288..1879048191, `nspawn --private-users=pick`) and its foreign range
# (2147352576..2147418111), below 2^31 (tools holding a uid in a signed int): systemd's UIDS-GIDS.md.
SESSION_IDS = (0x7000_0000, 0x7FFD_FFFF)
RECENT_IDS = 8192  # ids handed out that the ledger remembers (and the allocator refuses)
MAX_DRAWS = 4096  # a span so full that this many draws find nothing is a machine to look at, not to retry

# The ranges other allocators own, as login.defs keys, with shadow's defaults when a key is absent.
LOGIN_DEFS_RANGES: Mapping[tuple[str, str], tuple[int, int]] = {
    ("SYS_UID_MIN", "SYS_UID_MAX"): (101, 999),
    ("SYS_GID_MIN", "SYS_GID_MAX"): (101, 999),
    ("UID_MIN", "UID_MAX"): (1000, 60000),
    ("GID_MIN", "GID_MAX"): (1000, 60000),
    ("SUB_UID_MIN", "SUB_UID_MAX"): (100000, 600100000),
    ("SUB_GID_MIN", "SUB_GID_MAX"): (100000, 600100000),
}

Span = tuple[int, int]  # first and last id, both included


class NoFreeIds(Exception):
    """No id can be handed out; the message says why and what to change."""


def _number(text: str) -> int | None:
    """A login.defs number as shadow reads it (strtol base 0: decimal, 0x hex, leading-0 octal)."""
    try:
        if text.lower().startswith("0x"):
            return int(text, 16)
        if len(text) > 1 and text.startswith("0"):
            return int(text, 8)
        return int(text, 10)
    except ValueError:
        return None


def login_defs_spans(text: str) -> tuple[Span, ...]:
    """The ranges login.defs gives useradd, groupadd and the subordinate-id allocator."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and not parts[0].startswith("#") and (value := _number(parts[1])) is not None:
            values[parts[0]] = value
    return tuple((values.get(low, default[0]), values.get(high, default[1]))
                 for (low, high), default in LOGIN_DEFS_RANGES.items())


def subordinate_spans(text: str) -> tuple[Span, ...]:
    """The ranges of /etc/subuid or /etc/subgid (`name:first:count` lines)."""
    spans = []
    for line in text.splitlines():
        fields = line.strip().split(":")
        if len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit() and int(fields[2]) > 0:
            spans.append((int(fields[1]), int(fields[1]) + int(fields[2]) - 1))
    return tuple(spans)


def free_spans(span: Span, excluded: Iterable[Span]) -> tuple[Span, ...]:
    """`span` with every excluded range cut out."""
    free = [span]
    for low, high in excluded:
        cut = []
        for first, last in free:
            if high < first or low > last:
                cut.append((first, last))
                continue
            if first < low:
                cut.append((first, low - 1))
            if high < last:
                cut.append((high + 1, last))
        free = cut
    return tuple(free)


def pick_ids(count: int, spans: Sequence[Span], taken: Callable[[int], bool],
             randbelow: Callable[[int], int]) -> list[int]:
    """`count` distinct ids drawn uniformly from `spans`, none of them `taken`; NoFreeIds when none are left."""
    if count <= 0:
        return []
    total = sum(last - first + 1 for first, last in spans)
    if total < count:
        raise NoFreeIds(f"{total} ids left for session accounts in {_describe(SESSION_IDS)} once the ranges of "
                        "login.defs and /etc/subuid, /etc/subgid are cut out: narrow those ranges")
    picked: list[int] = []
    for _ in range(MAX_DRAWS):
        candidate = _nth(spans, randbelow(total))
        if candidate not in picked and not taken(candidate):
            picked.append(candidate)
            if len(picked) == count:
                return picked
    raise NoFreeIds(f"{MAX_DRAWS} random draws in {_describe(SESSION_IDS)} found only {len(picked)} of {count} "
                    "free ids: something holds most of that span (look at /etc/passwd and the running processes)")


def handed_out_here(candidate: int) -> bool:
    """An id of the span session accounts are drawn from: a path owned by one was some session's component's,
    or will be (no account need exist, and another launcher may hand it out at any moment)."""
    return SESSION_IDS[0] <= candidate <= SESSION_IDS[1]


def _nth(spans: Sequence[Span], index: int) -> int:
    for first, last in spans:
        if index <= last - first:
            return first + index
        index -= last - first + 1
    raise ValueError("index past the spans")


def _describe(span: Span) -> str:
    return f"{span[0]}..{span[1]}"


# --- the ledger: ids handed out, newest last --------------------------------------------------------


def ledger_ids(text: str) -> list[int]:
    """The ids a ledger holds, oldest first (a torn last line is skipped)."""
    return [int(line) for line in text.split("\n") if line.isdigit()]


@dataclass(frozen=True)
class Ledger:
    """What a ledger's text says: how many lines it holds, and the newest RECENT_IDS of them (the ids refused).

    The allocator asks about a few candidates, so the window stays text: one substring search per candidate
    instead of parsing up to 2 * RECENT_IDS numbers at every session start (docs/decisions/session-bench.md).
    """

    lines: int
    window: str  # "\n" + the newest RECENT_IDS lines, each ending in "\n" (a torn last line completed)

    def holds(self, candidate: int) -> bool:
        """Whether `candidate` is among the newest RECENT_IDS ids handed out."""
        return f"\n{candidate}\n" in self.window

    def recent(self) -> list[int]:
        """The newest RECENT_IDS ids, oldest first (for a trim: the lines the ledger keeps)."""
        return ledger_ids(self.window)


def read_ledger(text: str) -> Ledger:
    """The ledger `text` as the allocator reads it."""
    if text and not text.endswith("\n"):
        text += "\n"
    lines = text.count("\n")
    if lines <= RECENT_IDS:
        return Ledger(lines, "\n" + text)
    older = text.rsplit("\n", RECENT_IDS + 1)[0]  # every line before the window, without its last "\n"
    return Ledger(lines, text[len(older):])


def ledger_text(ids: Iterable[int]) -> str:
    """Ledger lines for `ids`."""
    return "".join(f"{i}\n" for i in ids)


def needs_trim(line_count: int) -> bool:
    """A ledger is rewritten down to RECENT_IDS once it holds twice that (appends stay cheap meanwhile)."""
    return line_count > 2 * RECENT_IDS


# --- facts about what is in use, as the kernel reports them ----------------------------------------------


_STATUS_IDS = re.compile(r"^(?:Uid|Gid|Groups):(.*)$", re.MULTILINE)


def ids_in_status(text: str) -> set[int]:
    """Every uid and gid of one /proc/<pid>/status: real, effective, saved, fs, and supplementary groups."""
    ids: set[int] = set()
    for values in _STATUS_IDS.findall(text):  # three lines of some fifty: found, not split out
        ids.update(int(value) for value in values.split() if value.isdigit())
    return ids


def ids_in_sysvipc(text: str) -> set[int]:
    """The owner and creator uids and gids of each object in a /proc/sysvipc/{msg,sem,shm} table."""
    lines = text.splitlines()
    if not lines:
        return set()
    header = lines[0].split()
    columns = [header.index(name) for name in ("uid", "gid", "cuid", "cgid") if name in header]
    ids: set[int] = set()
    for line in lines[1:]:
        fields = line.split()
        ids.update(int(fields[c]) for c in columns if c < len(fields) and fields[c].isdigit())
    return ids
