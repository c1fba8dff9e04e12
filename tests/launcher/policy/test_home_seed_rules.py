"""What of app.home_seed is copied, and how much: the pure rules."""

from __future__ import annotations

import stat

import pytest

from launcher.policy.home_seed import (
    HOME_SEED_MAX_BYTES,
    HOME_SEED_MAX_ENTRIES,
    SeedBudget,
    budget_problem,
    copied_mode,
    entry_problem,
    seed_budget,
)

OWNER, DEV = 1000, 42


@pytest.mark.parametrize(("mode", "owner", "device", "words"), [
    (stat.S_IFREG | 0o644, OWNER, DEV, None),
    (stat.S_IFDIR | 0o755, OWNER, DEV, None),
    (stat.S_IFLNK | 0o777, OWNER, DEV, "symlink"),
    (stat.S_IFIFO | 0o644, OWNER, DEV, "neither a regular file nor a directory"),
    (stat.S_IFCHR | 0o644, OWNER, DEV, "neither a regular file nor a directory"),
    (stat.S_IFSOCK | 0o644, OWNER, DEV, "neither a regular file nor a directory"),
    (stat.S_IFREG | 0o600, 0, DEV, "owned by uid 0, not by the seed's owner"),  # a hard link to root's file
    (stat.S_IFDIR | 0o755, OWNER, DEV + 1, "another file system"),
])
def test_only_the_owners_files_and_directories_are_copied(mode: int, owner: int, device: int,
                                                          words: str | None) -> None:
    problem = entry_problem(mode, owner, OWNER, device, DEV)
    assert (problem is None) if words is None else (problem is not None and words in problem)


@pytest.mark.parametrize(("mode", "copied"), [
    (stat.S_IFREG | 0o644, 0o644),
    (stat.S_IFREG | 0o400, 0o600),
    (stat.S_IFREG | 0o4755, 0o755),  # never set-id
    (stat.S_IFDIR | 0o1777, 0o777),  # never sticky
    (stat.S_IFDIR | 0o500, 0o700),
])
def test_the_copy_is_its_new_owners_to_update(mode: int, copied: int) -> None:
    assert copied_mode(mode) == copied


def test_the_budget_is_the_fixed_bound_or_half_the_scratch() -> None:
    assert seed_budget(1 << 30, 1 << 20) == SeedBudget(HOME_SEED_MAX_BYTES, HOME_SEED_MAX_ENTRIES)
    assert seed_budget(4 << 20, 200) == SeedBudget(2 << 20, 100)


@pytest.mark.parametrize(("total", "entries", "words"), [
    (100, 10, None), (100, 11, "more than 10 entries"), (1001, 1, "more than 1000 bytes"), (1000, 10, None),
])
def test_a_seed_past_its_budget_is_refused(total: int, entries: int, words: str | None) -> None:
    problem = budget_problem(total, entries, SeedBudget(1000, 10))
    assert (problem is None) if words is None else (problem is not None and words in problem)
