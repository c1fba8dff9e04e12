"""The confused-deputy rule, pure: the daemon never gives a caller more than the caller could reach itself.

A request is admitted only when, in this order: the manifest's hash is the one the caller sent; a policy
principal matches the caller; the caller's and the daemon's session limits leave room, and the TTL is within
the principal's; every secret the manifest binds is granted to that principal, to those hosts; the workspace is
the caller's own; and every read and exec path is one the caller could read or execute with its own
credentials. The last two are judged from facts a checker gathered as the caller (launcher/daemon/reach.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from launcher.daemon.policy import LaunchdPolicy, Principal
from launcher.manifest import Manifest, pointer
from pki.vocabulary import EXIT_HASH_MISMATCH, EXIT_NOT_ROOT

WHO = "sharness-launchd"


@dataclass(frozen=True)
class Caller:
    """Who is asking, as the kernel said at connect time (SO_PEERCRED, SO_PEERGROUPS)."""

    uid: int
    gid: int
    groups: frozenset[int]  # primary and supplementary
    pid: int


@dataclass(frozen=True)
class Reach:
    """What the caller itself could do with one path (gathered as the caller: launcher/daemon/reach.py)."""

    path: str
    exists: bool
    is_dir: bool = False
    owner: int | None = None
    readable: bool = False  # open for reading (a directory: list it)
    searchable: bool = False  # execute (a directory: enter it)
    error: str = ""  # why the caller could not even look at it (the strerror), when it could not


@dataclass(frozen=True)
class Refusal:
    """A request refused: the manifest row or the policy row to change, the reason, a hint, the exit code."""

    reason: str
    hint: str
    exit_code: int = EXIT_NOT_ROOT
    row: str | None = None  # a JSON pointer into the manifest
    policy_row: str | None = None  # a JSON pointer into the policy file

    def words(self) -> str:
        where = [f"manifest row {self.row}"] if self.row else []
        where += [f"policy row {self.policy_row}"] if self.policy_row else []
        return f"{WHO} refused: {self.reason}" + (f" ({'; '.join(where)})" if where else "")


@dataclass(frozen=True)
class Load:
    """How many sessions run now: the caller's own, and all of them."""

    callers: int
    total: int


def admit(policy: LaunchdPolicy, caller: Caller, manifest: Manifest, sent_hash: str, load: Load) -> Principal | Refusal:
    """The checks that need no file system: hash, principal, limits, TTL, secrets. The principal when all pass."""
    if sent_hash != manifest.sha256:
        return Refusal(f"hash mismatch: the caller approved {sent_hash}, the manifest is {manifest.sha256}",
                       "send the hash `sharness-launch hash MANIFEST` prints for the manifest you approved",
                       EXIT_HASH_MISMATCH)
    principal = policy.principal_for(caller.uid, caller.groups)
    if principal is None:
        return Refusal(f"uid {caller.uid} is not a principal of the daemon's policy",
                       "ask the machine's admin to add you (or a group of yours) to the policy",
                       policy_row="/principals")
    return _within_limits(policy, principal, manifest, load) or _secrets_granted(principal, manifest) or principal


def _within_limits(policy: LaunchdPolicy, principal: Principal, manifest: Manifest, load: Load) -> Refusal | None:
    if load.callers >= principal.max_sessions:
        return Refusal(f"the caller runs {load.callers} session(s), the most its principal allows",
                       "stop one (`sharness-launch ps`, `sharness-launch stop SID`)",
                       policy_row=f"{principal.row}/max_sessions")
    if load.total >= policy.max_sessions:
        return Refusal(f"the daemon runs {load.total} session(s), the most its policy allows",
                       "try again when one has ended", policy_row="/limits/max_sessions")
    if manifest.session.ttl_s > principal.max_ttl_s:
        return Refusal(f"session.ttl_s {manifest.session.ttl_s} is longer than the {principal.max_ttl_s} s the "
                       "caller may ask for", f"ask for at most {principal.max_ttl_s} s",
                       row="/session/ttl_s", policy_row=f"{principal.row}/max_ttl_s")
    return None


def _secrets_granted(principal: Principal, manifest: Manifest) -> Refusal | None:
    secrets = manifest.door_rows("keys").get("secrets", {})
    for name in sorted(secrets):
        source, hosts = secrets[name]["from"], frozenset(secrets[name]["hosts"])
        grant = principal.grant_for(source)
        if grant is None:
            return Refusal(f"secret {name!r} binds {source!r}, which the policy does not grant the caller",
                           "bind only a secret granted to you, or ask the admin to grant it",
                           row=pointer(("doors", "keys", "secrets", name, "from")),
                           policy_row=f"{principal.row}/secrets")
        beyond = sorted(hosts - grant.hosts)
        if beyond:
            return Refusal(f"secret {name!r} is bound to {', '.join(beyond)}, a host its grant does not name",
                           f"bind it only to {', '.join(sorted(grant.hosts))}",
                           row=pointer(("doors", "keys", "secrets", name, "hosts")),
                           policy_row=f"{principal.row}/secrets")
    return None


def paths_to_check(manifest: Manifest) -> tuple[str, ...]:
    """Every path the checker must look at as the caller: the workspace, then the read and exec paths."""
    return (manifest.workspace, *manifest.app.files_read, *manifest.app.files_exec)


def judge_reach(manifest: Manifest, caller: Caller, reach: Mapping[str, Reach]) -> Refusal | None:
    """None when the workspace is the caller's and every read and exec path is within the caller's own reach."""
    workspace = reach[manifest.workspace]
    if not workspace.exists:
        return Refusal(f"the caller cannot reach the workspace {manifest.workspace}: {workspace.error}",
                       "name a workspace you own", row="/workspace")
    if workspace.owner != caller.uid or not workspace.is_dir:
        return Refusal(f"the workspace {manifest.workspace} is not a directory the caller owns "
                       f"(owner uid {workspace.owner})", "name a directory you own", row="/workspace")
    for kind, paths in (("read", manifest.app.files_read), ("exec", manifest.app.files_exec)):
        for index, path in enumerate(paths):
            lacking = _lacking(reach[path], kind)
            if lacking:
                return Refusal(f"the caller could not {lacking} {path} itself", f"name only what you can {kind}",
                               row=pointer(("app", "files", kind, index)))
    return None


def _lacking(fact: Reach, kind: str) -> str:
    """What the caller could not do that `kind` needs of this path ('' when nothing)."""
    if not fact.exists:
        return f"reach ({fact.error})"
    if fact.is_dir and not (fact.readable and fact.searchable):
        return "list and enter"
    if kind == "read" and not fact.readable:
        return "read"
    if kind == "exec" and not fact.is_dir and not fact.searchable:
        return "execute"
    return ""
