"""Whose ids the paths a session is given belong to: the allocator avoids them, and refuses the ones it hands out.

A path owned by an id with no account (a tarball, a container, a deleted user) must never get that same id
handed to a component: it would own the person's files (chmod, setuid bits, exec bits, whatever Landlock
does not mediate). Only the path itself is looked at, not its subtree: ids a subtree holds outside the
session span are never drawn, and inside it they are in the ledger of ids handed out (issue 19.3).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from launcher.lifecycle.preflight import PreflightError
from launcher.manifest import Manifest
from launcher.policy.id_alloc import SESSION_IDS, handed_out_here


def _rows(manifest: Manifest) -> Iterable[tuple[str, str]]:
    if "fs" in manifest.roles:
        yield "workspace", manifest.workspace
    yield from (("app.files.read", path) for path in manifest.app.files_read)
    yield from (("app.files.exec", path) for path in manifest.app.files_exec)


def owners_to_avoid(manifest: Manifest) -> frozenset[int]:
    """The uids and gids owning the workspace and every app.files.* path; PreflightError for one in the
    session span, which no avoid set can keep from a concurrent session."""
    owners: set[int] = set()
    for row, path in _rows(manifest):
        try:
            info = os.stat(path)
        except OSError:
            continue  # a missing path is refused (or allowed) by the checks that own it
        for kind, number in (("uid", info.st_uid), ("gid", info.st_gid)):
            if handed_out_here(number):
                raise PreflightError(
                    row, f"{path} is owned by {kind} {number}, an id the launcher hands to session accounts "
                    f"({SESSION_IDS[0]}..{SESSION_IDS[1]}): a component of some session would own it",
                    f"give it to the person whose files these are (chown alice:alice {path})")
        owners |= {info.st_uid, info.st_gid}
    return frozenset(owners)
