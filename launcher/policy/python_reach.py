"""Can the components run the launcher's Python? A pure walk over file modes; the stat is injected.

Doors and the app run as users of their own, so they own none of the interpreter's files: what counts is
the "other" permission bits. Each of them sees its paths through a private root (launcher/kernel/mountns.py):
a tmpfs whose directories are 0755, holding a bind mount of each path it keeps. So the host's directories
above a kept path never matter (a clone in a 0700 home, under /root or in `mktemp -d` works); each kept
path itself and every directory from it down to what Python opens do.
"""

from __future__ import annotations

import posixpath
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

ModeOf = Callable[[str], int | None]
"""st_mode of a path, following symlinks; None when it does not exist."""

# What a component must be able to do to a path, in chmod's letters.
LIST = "rx"  # a directory Python imports from: the import system lists it
EXECUTE = "x"  # the interpreter's binary
READ = "r"  # a file the interpreter reads as it starts (pyvenv.cfg)
PASS = ""  # nothing of the path itself: only the directories on the way to it

_OTHER_BITS = {"r": stat.S_IROTH, "x": stat.S_IXOTH}


@dataclass(frozen=True)
class Unreachable:
    """The first path other users cannot pass, the chmod letters they lack on it, and what lies behind it."""

    path: str
    missing: str  # "r", "x" or "rx"
    is_dir: bool
    needed: str  # the interpreter path (the same one, or one below) that needs it

    @property
    def permission(self) -> str:
        """The missing permission in words, e.g. "read and search (rx)"."""
        x_word = "search" if self.is_dir else "execute"
        words = {"r": "read", "x": x_word, "rx": f"read and {x_word}"}[self.missing]
        return f"{words} ({self.missing})"

    def message(self) -> str:
        behind = "" if self.needed == self.path else f" (on the way to {self.needed})"
        return (f"the launcher's Python cannot be run by the components: {self.path}{behind} lacks "
                f"{self.permission} permission for other users, and doors and the app run as users of their own")

    def hint(self) -> str:
        return (f"chmod o+{self.missing} {self.path}, or install sharness-launch with a Python and a source tree "
                "that other users can read")


def _under(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root + "/")


def view_root(path: str, kept: Iterable[str]) -> str:
    """The kept path a private root shows `path` through: the shortest one holding it; "/" if none does."""
    holders = [root for root in (posixpath.normpath(k) for k in kept) if root != "/" and _under(path, root)]
    return min(holders, key=len, default="/")


def _chain(root: str, path: str) -> list[str]:
    """root, each directory below it on the way to path, and path."""
    chain = [root]
    relative = posixpath.relpath(path, root)
    if relative != ".":
        for part in relative.split("/"):
            chain.append(posixpath.join(chain[-1], part))
    return chain


def _lacking(path: str, letters: str, mode: int, needed: str) -> Unreachable | None:
    missing = "".join(letter for letter in "rx" if letter in letters and not mode & _OTHER_BITS[letter])
    return Unreachable(path, missing, stat.S_ISDIR(mode), needed) if missing else None


def first_unreachable(needs: Mapping[str, str], kept: Iterable[str], mode_of: ModeOf) -> Unreachable | None:
    """The first path (in sorted order of `needs`) that other users cannot pass on the way from its view root.

    `needs` maps each path to the letters a component needs on it (LIST, EXECUTE, READ or PASS); every
    directory from its view root down to it needs search. A path that does not exist is not needed.
    """
    kept = tuple(kept)
    for needed in sorted(needs):
        path = posixpath.normpath(needed)
        mode = mode_of(path)
        if mode is None:
            continue
        *above, _ = _chain(view_root(path, kept), path)
        for directory in above:
            directory_mode = mode_of(directory)
            found = None if directory_mode is None else _lacking(directory, "x", directory_mode, path)
            if found is not None:
                return found
        found = _lacking(path, needs[needed], mode, path)
        if found is not None:
            return found
    return None
