"""What of `app.home_seed` is copied into the app's HOME, and how much. Pure: no I/O.

The seed (an agent's settings) is read by the launcher as root before anything is created
(launcher/lifecycle/home_seed.py) and written by the app's own process, confined, just before execve, into its
scratch tmpfs: so the copy is owned by the app's user, counted against its scratch, and gone with the session,
while the directory itself is never bound into the app's root. Only what its owner put there is copied: a
symlink, a device, a socket, a file of another owner (a hard link to root's) or a mount inside it refuses the
session, so reading as root reaches nothing the seed's owner could not have handed over.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass

HOME_SEED_MAX_BYTES = 8 * 1024 * 1024
HOME_SEED_MAX_ENTRIES = 1024
HOME_SEED_MAX_DEPTH = 32  # directories below the seed: the walk holds one fd per level
# At most this share of the scratch tmpfs, so the app starts with room to work in.
SCRATCH_SHARE = 2
ROW = "/app/home_seed"


@dataclass(frozen=True)
class SeedEntry:
    """One directory or file of the seed: its path relative to HOME, its mode, its bytes (None for a directory)."""

    path: str
    mode: int
    data: bytes | None


@dataclass(frozen=True)
class HomeSeed:
    """The seed, in creation order (a directory before what it holds)."""

    entries: tuple[SeedEntry, ...] = ()

    @property
    def total_bytes(self) -> int:
        return sum(len(entry.data) for entry in self.entries if entry.data is not None)


@dataclass(frozen=True)
class SeedBudget:
    max_bytes: int
    max_entries: int


def seed_budget(scratch_bytes: int, scratch_inodes: int) -> SeedBudget:
    """How much of the seed is copied at most: the fixed bound, or a share of the app's scratch if smaller."""
    return SeedBudget(min(HOME_SEED_MAX_BYTES, scratch_bytes // SCRATCH_SHARE),
                      min(HOME_SEED_MAX_ENTRIES, scratch_inodes // SCRATCH_SHARE))


def entry_problem(mode: int, owner: int, seed_owner: int, device: int, seed_device: int) -> str | None:
    """Why an entry of the seed is not copied (and refuses the session), or None."""
    if stat.S_ISLNK(mode):
        return "is a symlink (a seed is copied as it is, never through a link)"
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "is neither a regular file nor a directory"
    if owner != seed_owner:
        return f"is owned by uid {owner}, not by the seed's owner (uid {seed_owner})"
    if device != seed_device:
        return "is on another file system (a mount inside the seed)"
    return None


def copied_mode(mode: int) -> int:
    """The permission bits the copy gets: the original's, never set-id or sticky, always readable and writable
    by its new owner (the app) so it can update its own settings."""
    return (stat.S_IMODE(mode) & 0o777) | (0o700 if stat.S_ISDIR(mode) else 0o600)


def budget_problem(total_bytes: int, entries: int, budget: SeedBudget, depth: int = 0) -> str | None:
    """Why the seed is too large (or too deep) to copy, or None."""
    if depth > HOME_SEED_MAX_DEPTH:
        return f"lies more than {HOME_SEED_MAX_DEPTH} directories deep"
    if entries > budget.max_entries:
        return f"holds more than {budget.max_entries} entries"
    if total_bytes > budget.max_bytes:
        return f"holds more than {budget.max_bytes} bytes"
    return None
