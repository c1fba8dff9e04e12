"""The confused-deputy rule, pure: the daemon never gives a caller more than the caller could reach itself.

A request is admitted only when, in this order: the manifest's hash is the one the caller sent; a policy
principal matches the caller; the caller's and the daemon's session limits leave room, and the TTL is within
the principal's; every secret the manifest binds is granted to that principal, to those hosts; the workspace and
the home seed are the caller's own; and every read and exec path of every component is one the caller could
read or execute with its own credentials. The last two are judged from facts a checker gathered as the caller
(launcher/daemon/reach.py).
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

    def audit_fields(self) -> dict[str, object]:
        return {"uid": self.uid, "gid": self.gid, "caller_pid": self.pid}


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


def _named_paths(manifest: Manifest) -> list[tuple[str, str, str]]:
    """(manifest row, kind, path) for every path besides the workspace and the home seed that root opens or binds
    for a component: the app's read and exec files, the shell door's, the net and model doors' CA bundles."""
    shell_files = manifest.door_rows("shell").get("files", {})
    listed = ((("app", "files"), manifest.app.files_read, manifest.app.files_exec),
              (("doors", "shell", "files"), shell_files.get("read", ()), shell_files.get("exec", ())))
    named = [(pointer((*prefix, kind, index)), kind, path) for prefix, read, execs in listed
             for kind, paths in (("read", read), ("exec", execs)) for index, path in enumerate(paths)]
    return named + [(pointer(("doors", role, "ca_bundle")), "read", manifest.door_rows(role)["ca_bundle"])
                    for role in ("net", "model") if isinstance(manifest.door_rows(role).get("ca_bundle"), str)]


def paths_to_check(manifest: Manifest) -> tuple[str, ...]:
    """Every path the checker must look at as the caller: the workspace, the home seed, then the read and exec
    paths of every component."""
    seed = (manifest.app.home_seed,) if manifest.app.home_seed is not None else ()
    return (manifest.workspace, *seed, *(path for _, _, path in _named_paths(manifest)))


def _not_owned_dir(fact: Reach, caller: Caller, row: str, what: str) -> Refusal | None:
    if not fact.exists:
        return Refusal(f"the caller cannot reach the {what} {fact.path}: {fact.error}", f"name a {what} you own",
                       row=row)
    if fact.owner != caller.uid or not fact.is_dir:
        return Refusal(f"the {what} {fact.path} is not a directory the caller owns (owner uid {fact.owner})",
                       "name a directory you own", row=row)
    return None


def judge_reach(manifest: Manifest, caller: Caller, reach: Mapping[str, Reach]) -> Refusal | None:
    """None when the workspace and the home seed are the caller's and every read and exec path of every
    component is within the caller's own reach."""
    refusal = _not_owned_dir(reach[manifest.workspace], caller, "/workspace", "workspace")
    if refusal is None and manifest.app.home_seed is not None:
        # root copies the seed into the app's HOME: a seed of root's (/root/.ssh) would hand its files to the app
        refusal = _not_owned_dir(reach[manifest.app.home_seed], caller, "/app/home_seed", "home seed")
    if refusal is not None:
        return refusal
    for row, kind, path in _named_paths(manifest):
        lacking = _lacking(reach[path], kind)
        if lacking:
            return Refusal(f"the caller could not {lacking} {path} itself", f"name only what you can {kind}", row=row)
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
