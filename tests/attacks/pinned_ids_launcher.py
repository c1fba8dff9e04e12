"""The launcher with its id draw pinned, for tests only: `pinned_ids_launcher.py FIRST run ...`.

Session accounts are drawn from FIRST..FIRST+63 and the dice count up from FIRST, so the allocator would hand
out FIRST, FIRST+1, ... in that order unless it refuses them. Nothing of the launcher itself is changed."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from launcher.kernel import session_ids


def _counting_up() -> Iterator[int]:
    yield from range(64)


if __name__ == "__main__":
    first = int(sys.argv.pop(1))
    session_ids.DRAWN_FROM = (first, first + 63)
    draws = _counting_up()
    assert session_ids.allocate.__kwdefaults__ is not None
    session_ids.allocate.__kwdefaults__["randbelow"] = lambda bound: next(draws) % bound

    from launcher.cli import main

    sys.exit(main())
