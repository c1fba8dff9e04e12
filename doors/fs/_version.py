"""File versions (etags) and the precondition check: a write that expects another version is 409. Pure."""

from __future__ import annotations

import hashlib


def etag_of(dev: int, ino: int, size: int, mtime_ns: int, ctime_ns: int) -> str:
    """A strong etag from the file's identity and change times (every door write makes a new inode)."""
    material = f"{dev}:{ino}:{size}:{mtime_ns}:{ctime_ns}".encode()
    return '"' + hashlib.blake2b(material, digest_size=12).hexdigest() + '"'


def _tags(header: str) -> list[str]:
    return [tag.strip() for tag in header.split(",") if tag.strip()]


def version_conflict(if_match: str | None, if_none_match: str | None, current: str | None) -> str | None:
    """Return why the precondition fails (the caller answers 409), or None when it holds.

    `current` is the target's etag, None when nothing is there. Weak tags (W/…) never match: a write
    needs the exact version. `If-None-Match: *` means "create only".
    """
    if if_match is not None:
        tags = _tags(if_match)
        if current is None:
            return "If-Match was given but nothing is at the path"
        if "*" not in tags and current not in tags:
            return f"the file is at version {current}, not {', '.join(tags) or 'the empty list'}"
    if if_none_match is not None:
        tags = _tags(if_none_match)
        if current is not None and ("*" in tags or current in tags):
            return f"the file exists at version {current} and If-None-Match refuses it"
    return None
