"""What a path the manifest names must be on this machine before anything is bound or granted. Pure: no I/O.

Each path is resolved once (launcher/lifecycle/preflight_paths.py: one openat2 with no symlink and no magic
link in any component); the facts found there come here and the verdict is a sentence naming the manifest
row (its JSON pointer). Then two comparisons by identity (st_dev, st_ino), not by spelling: no path a
component may execute is, or lies above, one it may write; no secret source lies under a path any component
but keys is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from launcher.manifest import Manifest, pointer
from pki.vocabulary import MACHINE_KEY_NAME, SEALED_PREFIX, SEALED_ROOT, SEALED_SUFFIX

Identity = tuple[int, int]  # (st_dev, st_ino)

# File systems that are the kernel's own state, never a project's files: bound into a root they would show
# it whole (a proc mounted here has no hidepid; sysfs and cgroupfs hold every knob; devtmpfs every disk).
KERNEL_FILESYSTEMS: Mapping[str, str] = {
    "proc": "the kernel's processes (this proc has no hidepid)", "sysfs": "the kernel's devices and settings",
    "devtmpfs": "device nodes", "devpts": "terminals", "cgroup": "cgroup controls", "cgroup2": "cgroup controls",
    "debugfs": "kernel debugging", "tracefs": "kernel tracing", "securityfs": "security modules' state",
    "bpf": "pinned BPF objects", "configfs": "kernel objects", "efivarfs": "firmware variables",
    "pstore": "crash records", "binfmt_misc": "binary formats", "fusectl": "FUSE connections",
    "nsfs": "namespace handles", "mqueue": "POSIX message queues", "selinuxfs": "SELinux's state",
    "hugetlbfs": "huge pages", "autofs": "automounts",
}
# What each use of a path may name: files.* are directories or regular files, a secret a regular file.
ALLOWED_KINDS: Mapping[str, frozenset[str]] = {
    "read": frozenset({"directory", "regular file"}), "exec": frozenset({"directory", "regular file"}),
    "workspace": frozenset({"directory"}), "secret": frozenset({"regular file"}),
}
_NO_SYMLINK_WHY = ("the launcher binds and grants only what a path names itself: a symlink would let the scan, "
                   "the bind and Landlock each see something else")


@dataclass(frozen=True)
class NamedPath:
    """One path the manifest names, where (its JSON pointer), and what it is for."""

    pointer: str
    path: str
    use: str  # "read", "exec", "workspace" or "secret"


@dataclass(frozen=True)
class Found:
    """What this machine holds at a named path, reached with no symlink."""

    kind: str  # "directory", "regular file", "socket", "fifo", "character device", "block device"
    fstype: str
    submounts: tuple[str, ...]  # mount points strictly inside it
    links: int  # st_nlink


@dataclass(frozen=True)
class PathRefusal:
    """The session cannot start with this path here (exit 78): where, what, and what to change."""

    pointer: str
    message: str
    hint: str


def named_paths(manifest: Manifest) -> tuple[NamedPath, ...]:
    """Every path the manifest names that something is bound, granted or read from, in document order (the
    workspace only where a door is given it)."""
    gets_workspace = "fs" in manifest.roles or "shell" in manifest.roles
    named = [NamedPath("/workspace", manifest.workspace, "workspace")] if gets_workspace else []
    for key, paths in (("read", manifest.app.files_read), ("exec", manifest.app.files_exec)):
        named += [NamedPath(f"/app/files/{key}/{index}", path, key) for index, path in enumerate(paths)]
    shell_files = manifest.door_rows("shell").get("files", {}) if "shell" in manifest.roles else {}
    for key in ("read", "exec"):
        named += [NamedPath(f"/doors/shell/files/{key}/{index}", path, key)
                  for index, path in enumerate(shell_files.get(key, []))]
    secrets = manifest.door_rows("keys").get("secrets", {})
    for name, secret in secrets.items():
        where = pointer(("doors", "keys", "secrets", name, "from"))
        source = str(secret["from"])
        if not source.startswith(SEALED_PREFIX):
            named.append(NamedPath(where, source, "secret"))
        else:  # the sealed file and the key that opens it: each a secret no other component may reach
            named += [NamedPath(where, f"{SEALED_ROOT}/{source.removeprefix(SEALED_PREFIX)}{SEALED_SUFFIX}", "secret"),
                      NamedPath(where, f"{SEALED_ROOT}/{MACHINE_KEY_NAME}", "secret")]
    return tuple(named)


def symlink_refusal(named: NamedPath, component: str, target: str, resolved: str) -> PathRefusal:
    """A symlink on the way: refused, the hint names the path it resolves to."""
    where = "is a symlink" if component == named.path else f"passes the symlink {component}"
    return PathRefusal(named.pointer, f"{named.path!r} {where} (to {target!r}): {_NO_SYMLINK_WHY}",
                       f"write the path it resolves to, {resolved!r}, if that is what you mean to give")


def missing_refusal(named: NamedPath, why: str) -> PathRefusal:
    """The path cannot be opened on this machine."""
    return PathRefusal(named.pointer, f"{named.path!r} cannot be used here: {why}", _missing_hint(named))


def _missing_hint(named: NamedPath) -> str:
    if named.use != "secret" or not named.path.startswith(f"{SEALED_ROOT}/"):
        return "create it, or correct the path"
    if named.path == f"{SEALED_ROOT}/{MACHINE_KEY_NAME}":
        return ("the first `sharness-launch secret add` makes the machine key; sealed files made without it open "
                "with no other key: restore it from a backup, or seal them again")
    name = named.path.removeprefix(f"{SEALED_ROOT}/").removesuffix(SEALED_SUFFIX)
    return f"seal it first: sudo sharness-launch secret add {name} (`secret list` shows what is sealed)"


def refusal_of(named: NamedPath, found: Found) -> PathRefusal | None:
    """What is wrong with what `named` resolved to, or None: its kind, its file system, mounts inside it."""
    if found.kind not in ALLOWED_KINDS[named.use]:
        wanted = " or ".join(sorted(ALLOWED_KINDS[named.use]))
        return PathRefusal(named.pointer, f"{named.path!r} is a {found.kind}; this row names a {wanted}",
                           f"name a {wanted}" + (" (a socket is reached through a door)" if found.kind == "socket"
                                                 else ""))
    if found.fstype in KERNEL_FILESYSTEMS:
        return PathRefusal(named.pointer, f"{named.path!r} is on a {found.fstype} file system "
                           f"({KERNEL_FILESYSTEMS[found.fstype]}), not a project's files",
                           "name a directory of an ordinary file system")
    if found.submounts and named.use != "secret":
        shown = ", ".join(found.submounts[:3]) + (" …" if len(found.submounts) > 3 else "")
        return PathRefusal(named.pointer, f"{named.path!r} holds other mounts ({shown}): a component's root binds "
                           "one mount per path, so they would be hidden behind empty directories",
                           "list each mount you mean to give as a path of its own, or a directory without mounts")
    if named.use == "secret" and found.links > 1:
        return PathRefusal(named.pointer, f"the secret {named.path!r} has {found.links} hard links: another name "
                           "for it may lie where components read", "keep the secret as a file with one name")
    return None


@dataclass(frozen=True)
class Granted:
    """One path a component is given, with what it resolves to on this machine (None: not there yet)."""

    role: str
    path: str
    identity: Identity | None
    chain: tuple[Identity, ...]  # its own identity (if it exists) and every existing ancestor's


def exec_write_refusal(execs: Sequence[Granted], writes: Sequence[Granted],
                       pointers: Mapping[str, str]) -> PathRefusal | None:
    """A path a component may execute that is, lies above or lies below one it may write, by identity."""
    for x in execs:
        for w in writes:
            if x.role != w.role:
                continue
            above = x.identity is not None and x.identity in w.chain
            below = w.identity is not None and w.identity in x.chain
            if above or below:
                where = "is or lies above" if above else "lies inside"
                return PathRefusal(pointers.get(x.path, ""), f"{x.path!r}, which the {x.role} may execute, {where} "
                                   f"{w.path!r}, which it may write (the same file system objects, whatever the "
                                   "spelling: a writable path is never executable)",
                                   "take it out of app.files.exec, or name a directory that holds no writable one")
    return None


def secret_refusal(secret: NamedPath, chain: Sequence[Identity], grants: Sequence[Granted]) -> PathRefusal | None:
    """A secret source that any component other than keys is given, by identity: the first such grant."""
    for grant in grants:
        if grant.role != "keys" and grant.identity is not None and grant.identity in set(chain):
            return PathRefusal(secret.pointer, f"the secret {secret.path!r} lies under {grant.path!r}, which the "
                               f"{grant.role} is given: only the keys door may read a secret source",
                               "keep secrets where no component's paths reach, e.g. /etc/sharness/secrets "
                               "(root, 0700): of /etc the components get only named system files")
    return None
