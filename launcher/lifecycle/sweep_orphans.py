"""What carries a session's name but has no journal at all (the journal was lost): removed by name.

Safe because every session journals before it creates: a live session's `sh-<sid>-…` resources always have
`<sessions>/<sid>/` (or its staging dir) beside them. Only the default sessions root is swept this way.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from pki.vocabulary import NETNS_ROOT, SID_PATTERN, valid_sid

_NAME = re.compile(rf"^sh-({SID_PATTERN})-[a-z][a-z-]*$")
CGROUP_ROOT = "/sys/fs/cgroup"


@dataclass(frozen=True)
class Orphans:
    """Per kind, the names (or cgroup dirs) whose session id has no journal. Pure record."""

    accounts: tuple[str, ...] = ()
    netns: tuple[str, ...] = ()
    cgroups: tuple[str, ...] = ()

    def sids(self) -> set[str]:
        names = (*self.accounts, *self.netns)
        found = {m.group(1) for m in map(_NAME.match, names) if m}
        return found | {path.rstrip("/").split("/")[-2] for path in self.cgroups}


def find_orphans(account_names: list[str], netns_names: list[str], cgroup_dirs: list[str],
                 known_sids: set[str]) -> Orphans:
    """Pure: which of these session-named things belong to no known session."""
    def orphaned(name: str) -> bool:
        match = _NAME.match(name)
        return match is not None and match.group(1) not in known_sids

    cgroups = tuple(path for path in cgroup_dirs if path.rstrip("/").split("/")[-2] not in known_sids)
    return Orphans(tuple(n for n in account_names if orphaned(n)), tuple(n for n in netns_names if orphaned(n)),
                   cgroups)


def _names_in(path: str) -> list[str]:
    try:
        with open(path) as handle:
            return [line.split(":", 1)[0] for line in handle if line.startswith("sh-")]
    except FileNotFoundError:
        return []


def _session_cgroups() -> list[str]:
    dirs = []
    for controller in sorted(os.listdir(CGROUP_ROOT)) if os.path.isdir(CGROUP_ROOT) else []:
        base = os.path.join(CGROUP_ROOT, controller, "sharness")
        if not os.path.isdir(base):
            continue
        for sid in sorted(os.listdir(base)):
            session = os.path.join(base, sid)
            if valid_sid(sid) and os.path.isdir(session):
                dirs += [os.path.join(session, role) for role in sorted(os.listdir(session))
                         if os.path.isdir(os.path.join(session, role))]
    return dirs


def scan(known_sids: set[str]) -> Orphans:
    """Read /etc/passwd, /etc/group, /run/netns and the session cgroups; nothing is changed."""
    accounts = sorted(set(_names_in("/etc/passwd")) | set(_names_in("/etc/group")))
    netns = sorted(name for name in (os.listdir(NETNS_ROOT) if os.path.isdir(NETNS_ROOT) else []))
    return find_orphans(accounts, netns, _session_cgroups(), known_sids)


def remove(orphans: Orphans) -> list[tuple[str, str, str]]:
    """Remove them; returns (kind, name, detail) for each that could not be removed."""
    from launcher.kernel import cgroups, netns, users

    errors: list[tuple[str, str, str]] = []
    if orphans.accounts:
        try:
            users.delete_accounts(orphans.accounts)
        except Exception as exc:  # reported, and the other kinds still go
            errors.append(("user", ", ".join(orphans.accounts), str(exc)))
    for kind, names, remover in (("netns", orphans.netns, netns.delete_netns),
                                 ("cgroup", orphans.cgroups, cgroups.delete_cgroup)):
        for name in names:
            try:
                remover(name)
            except Exception as exc:
                errors.append((kind, name, str(exc)))
    return errors
