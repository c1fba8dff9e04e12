"""What a wildcard allow entry leaves open: a DNS channel of up to `max_wildcard_names` names. Pure.

The app picks the labels under `*.suffix`, and the net door resolves each name it is asked for (the allowlist
matches before any lookup), so each distinct name is a query the app wrote reaching that zone's servers. The door
caps the distinct names per role per session (row `net.wildcard_names`); `check` says what the cap leaves.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping


def wildcard_notes(allow: Mapping[str, Iterable[str]], cap: int) -> Iterator[str]:
    """One sentence per wildcard entry of `net.allow`: the names under it are the app's to choose."""
    for role, entries in allow.items():
        for entry in entries:
            if entry.removeprefix("tcp://").startswith("*."):
                yield (f"net.allow {role} {entry}: the app chooses the names under it and the net door resolves "
                       f"them, so up to {cap} names of its choosing reach that zone's DNS servers in a session (a "
                       "channel out, even for names the door then refuses); doors.net.max_wildcard_names lowers it")
