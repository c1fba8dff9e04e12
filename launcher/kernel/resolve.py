"""Open a path as it is, never through a symlink or a magic link (openat2), for the preflight's one resolution."""

from __future__ import annotations

import os

from launcher.kernel._sys import libc


def open_no_symlinks(path: str) -> int:
    """An O_PATH fd on `path`, refused (ELOOP) when any component is a symlink or a /proc magic link."""
    return libc.openat2(libc.AT_FDCWD, path, os.O_PATH, libc.RESOLVE_NO_SYMLINKS | libc.RESOLVE_NO_MAGICLINKS)


def open_dir_no_symlinks(path: str) -> int:
    """A readable directory fd on `path` (O_CLOEXEC), refused (ELOOP) as open_no_symlinks refuses."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    return libc.openat2(libc.AT_FDCWD, path, flags, libc.RESOLVE_NO_SYMLINKS | libc.RESOLVE_NO_MAGICLINKS)
