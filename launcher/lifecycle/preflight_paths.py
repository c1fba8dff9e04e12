"""Each path the manifest names, resolved once before anything is created, and the pins the private roots check.

One openat2 per path with no symlink and no magic link in any component (RESOLVE_NO_SYMLINKS |
RESOLVE_NO_MAGICLINKS). What it names is judged by launcher/policy/path_rules.py (its kind, its file system,
mounts inside it), and its identity (st_dev, st_ino) is pinned: the child that binds it
(launcher/kernel/mountns.py) opens it the same way and refuses anything else there, and Landlock is given that
same fd. Then what the kernel will grant is compared by identity: executable against writable, secret
sources against every other component's paths. `check` lists the same refusals without running anything.
"""

from __future__ import annotations

import errno
import os
import stat

from launcher.kernel.mountinfo import Mount, fstype_of, mount_id_of, mount_table, mounts_beneath
from launcher.kernel.resolve import open_no_symlinks
from launcher.lifecycle.preflight import PreflightError
from launcher.manifest import Manifest
from launcher.policy.confine_plan import allowance_of
from launcher.policy.layout import SessionPaths
from launcher.policy.path_rules import (
    Found,
    Granted,
    Identity,
    NamedPath,
    PathRefusal,
    exec_write_refusal,
    missing_refusal,
    named_paths,
    refusal_of,
    secret_refusal,
    symlink_refusal,
)

Pins = dict[str, Identity]
_KINDS = ((stat.S_ISDIR, "directory"), (stat.S_ISREG, "regular file"), (stat.S_ISSOCK, "socket"),
          (stat.S_ISFIFO, "fifo"), (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "special file")


def _first_symlink(path: str) -> tuple[str, str]:
    """The first component of `path` that is a symlink, and where it points (for the refusal's words)."""
    current = ""
    for part in path.strip("/").split("/"):
        current += "/" + part
        try:
            if os.path.islink(current):
                return current, os.readlink(current)
        except OSError:
            break
    return path, "?"


def _resolve(named: NamedPath, mounts: tuple[Mount, ...]) -> tuple[Identity | None, PathRefusal | None]:
    try:
        fd = open_no_symlinks(named.path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            component, target = _first_symlink(named.path)
            return None, symlink_refusal(named, component, target, os.path.realpath(named.path))
        return None, missing_refusal(named, os.strerror(exc.errno) if exc.errno else str(exc))
    try:
        info = os.fstat(fd)
        fstype = fstype_of(mounts, mount_id_of(fd))
    finally:
        os.close(fd)
    found = Found(_kind(info.st_mode), fstype, mounts_beneath(mounts, named.path), info.st_nlink)
    return (info.st_dev, info.st_ino), refusal_of(named, found)


def _identity(path: str) -> Identity | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _chain(path: str) -> tuple[Identity, ...]:
    """The identity of `path` and of each of its ancestors that exists, as the kernel's path walk meets them."""
    current, chain = os.path.realpath(path), []
    while True:
        identity = _identity(current)
        if identity is not None:
            chain.append(identity)
        if current == "/":
            return tuple(chain)
        current = os.path.dirname(current)


def _granted(manifest: Manifest, layout: SessionPaths, python: tuple[str, ...], *rights: str) -> list[Granted]:
    grants = []
    for role in manifest.roles:
        allowance = allowance_of(manifest, role, layout, python)
        for path in dict.fromkeys(path for right in rights for path in getattr(allowance, right)):
            grants.append(Granted(role, path, _identity(path), _chain(path)))
    return grants


def path_refusals(manifest: Manifest, layout: SessionPaths, python: tuple[str, ...]) -> tuple[
        tuple[PathRefusal, ...], Pins]:
    """Every refusal the manifest's paths meet on this machine, and the pins of those that resolved."""
    mounts = mount_table()
    refusals: list[PathRefusal] = []
    pins: Pins = {}
    secrets: list[NamedPath] = []
    for named in named_paths(manifest):
        identity, refusal = _resolve(named, mounts)
        if refusal is not None:
            refusals.append(refusal)
        elif identity is not None:
            pins[named.path] = identity
            if named.use == "secret":
                secrets.append(named)
    pointers = {named.path: named.pointer for named in named_paths(manifest) if named.use == "exec"}
    overlap = exec_write_refusal(_granted(manifest, layout, python, "exec"),
                                 _granted(manifest, layout, python, "write"), pointers)
    refusals += [overlap] if overlap is not None else []
    readers = _granted(manifest, layout, python, "read", "write", "exec") if secrets else []
    for secret in secrets:
        refusal = secret_refusal(secret, _chain(secret.path), readers)
        refusals += [refusal] if refusal is not None else []
    return tuple(refusals), pins


def resolve_paths(manifest: Manifest, layout: SessionPaths, python: tuple[str, ...]) -> Pins:
    """The pins of every path the manifest names; PreflightError (exit 78, nothing created) for the first refusal."""
    refusals, pins = path_refusals(manifest, layout, python)
    if refusals:
        first = refusals[0]
        raise PreflightError(first.pointer, f"{first.pointer}: {first.message}", first.hint)
    return pins
