"""The app's rows besides its confinement: what it starts with (app.env, app.home_seed) and the line saying its
children keep every lock. Pure: launcher/policy/plan.py judges them like every row."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from launcher.manifest import Manifest
from launcher.policy.home_seed import HOME_SEED_MAX_BYTES, HOME_SEED_MAX_ENTRIES
from launcher.policy.plan_kernel import KernelCheck, always, root
from pki.vocabulary import BOUNDARY, SETTING


class AppRow(NamedTuple):
    row_id: str
    meaning: str
    kind: str
    held_by: str
    kernel: KernelCheck


def app_rows(manifest: Manifest) -> Iterator[AppRow]:
    """What the app starts with besides its locks, and the line saying its children keep every lock."""
    if manifest.app.env:
        names = ", ".join(name for name, _ in manifest.app.env)
        yield AppRow("env", f"starts with the manifest's variables {names}: none named or shaped like a secret, "
                     "none the launcher sets", SETTING, "the launcher (refused at load, exit 65); the app may change "
                     "its own environment", always)
    if manifest.app.home_seed is not None:
        yield AppRow("home_seed", f"HOME starts as a copy of {manifest.app.home_seed}, owned by the app's user: "
                     f"regular files and directories of its owner only, no symlink, at most {HOME_SEED_MAX_BYTES} "
                     f"bytes and {HOME_SEED_MAX_ENTRIES} entries; the directory itself is not bound into its root",
                     BOUNDARY, "the launcher (reads it as root before anything is created, exit 78 otherwise); the "
                     "kernel (the copy is in the scratch tmpfs)", root)
    yield AppRow("children", "every process the app starts (the commands an agent runs itself) inherits every row "
                 "above: uid, namespaces, root, Landlock, seccomp, no_new_privs, cgroup limits; none can shed one",
                 BOUNDARY, "the kernel (credentials, namespaces, Landlock, seccomp and cgroups pass across fork and "
                 "execve)", root)
