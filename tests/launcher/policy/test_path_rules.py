"""What a named path may resolve to, and the comparisons by identity: tables, no I/O."""

from __future__ import annotations

import pytest
from manifests.samples import DROP, load, sample

from launcher.policy.path_rules import (
    KERNEL_FILESYSTEMS,
    Found,
    Granted,
    NamedPath,
    exec_write_refusal,
    missing_refusal,
    named_paths,
    refusal_of,
    secret_refusal,
    symlink_refusal,
)
from pki.vocabulary import SEALED_ROOT

DIR = Found("directory", "ext4", (), 2)
FILE = Found("regular file", "ext4", (), 1)


def test_the_workspace_is_named_only_where_a_door_is_given_it() -> None:
    app_only = load(sample(doors=DROP, edges=[], app__files={}))
    assert named_paths(app_only) == ()


def test_every_path_the_manifest_names_with_its_pointer_and_use() -> None:
    manifest = load(sample(doors__keys__secrets__anthropic__from="/srv/s/a"))
    assert named_paths(manifest) == (
        NamedPath("/workspace", "/srv/sh-test/ws", "workspace"),
        NamedPath("/app/files/read/0", "/opt/agent", "read"),
        NamedPath("/app/files/exec/0", "/opt/agent/bin", "exec"),
        NamedPath("/doors/keys/secrets/anthropic/from", "/srv/s/a", "secret"),
    )


def test_a_sealed_source_names_its_sealed_file_and_the_machine_key_as_secrets() -> None:
    manifest = load(sample(doors__keys__secrets__anthropic__from="sealed:anthropic"))
    where = "/doors/keys/secrets/anthropic/from"
    assert named_paths(manifest)[-2:] == (NamedPath(where, f"{SEALED_ROOT}/anthropic.sealed", "secret"),
                                          NamedPath(where, f"{SEALED_ROOT}/machine.key", "secret"))
    assert "secret add anthropic" in missing_refusal(named_paths(manifest)[-2], "No such file or directory").hint
    assert "restore it from a backup" in missing_refusal(named_paths(manifest)[-1], "No such file or directory").hint


@pytest.mark.parametrize(("use", "found", "words"), [
    ("read", DIR, None),
    ("read", FILE, None),
    ("exec", FILE, None),
    ("workspace", DIR, None),
    ("secret", FILE, None),
    ("read", Found("socket", "ext4", (), 1), "is a socket"),
    ("exec", Found("fifo", "ext4", (), 1), "is a fifo"),
    ("read", Found("character device", "ext4", (), 1), "is a character device"),
    ("workspace", FILE, "names a directory"),
    ("secret", DIR, "names a regular file"),
    ("read", Found("directory", "proc", (), 2), "on a proc file system"),
    ("read", Found("directory", "sysfs", (), 2), "sysfs"),
    ("exec", Found("directory", "cgroup2", (), 2), "cgroup2"),
    ("read", Found("directory", "tmpfs", (), 2), None),  # a scratch tmpfs is ordinary files
    ("read", Found("directory", "ext4", ("/srv/a/mnt",), 2), "holds other mounts (/srv/a/mnt)"),
    ("workspace", Found("directory", "ext4", ("/srv/a/m1", "/srv/a/m2", "/srv/a/m3", "/srv/a/m4"), 2), "m3 …"),
    ("secret", Found("regular file", "ext4", (), 2), "has 2 hard links"),
    ("read", Found("regular file", "ext4", (), 2), None),  # a hard link is only a secret's concern
])
def test_what_a_named_path_may_resolve_to(use: str, found: Found, words: str | None) -> None:
    refusal = refusal_of(NamedPath("/p", "/srv/a", use), found)
    if words is None:
        assert refusal is None
    else:
        assert refusal is not None and words in refusal.message and refusal.pointer == "/p" and refusal.hint


def test_every_kernel_file_system_says_what_it_holds() -> None:
    assert {"proc", "sysfs", "devtmpfs", "cgroup", "cgroup2", "nsfs"} <= set(KERNEL_FILESYSTEMS)
    assert all(words for words in KERNEL_FILESYSTEMS.values())


def test_a_symlink_refusal_names_the_component_its_target_and_the_resolved_path() -> None:
    refusal = symlink_refusal(NamedPath("/app/files/read/0", "/var/run/x", "read"), "/var/run", "/run", "/run/x")
    assert "passes the symlink /var/run (to '/run')" in refusal.message and "'/run/x'" in refusal.hint
    whole = symlink_refusal(NamedPath("/app/files/read/0", "/var/run", "read"), "/var/run", "/run", "/run")
    assert "'/var/run' is a symlink" in whole.message


def _g(role: str, path: str, identity: tuple[int, int] | None, *ancestors: tuple[int, int]) -> Granted:
    return Granted(role, path, identity, ((identity,) if identity else ()) + ancestors)


TMP = _g("app", "/run/sharness/s/app/tmp", None, (1, 30), (1, 20), (1, 1))  # not made yet: its ancestors only
NULL = _g("app", "/dev/null", (2, 5), (2, 1), (1, 1))


@pytest.mark.parametrize(("execs", "refused"), [
    ([_g("app", "/usr/bin", (1, 50), (1, 40), (1, 1))], None),
    ([_g("app", "/srv/alias", (1, 30), (1, 8), (1, 1))], "is or lies above '/run/sharness/s/app/tmp'"),
    ([_g("app", "/mnt/dev", (2, 1), (1, 9), (1, 1))], "is or lies above '/dev/null'"),
    ([_g("app", "/srv/inside", (3, 3), (2, 5), (1, 1))], "lies inside '/dev/null'"),
    ([_g("fs", "/srv/alias", (1, 30), (1, 1))], None),  # another component's exec: not the app's writes
])
def test_a_writable_path_is_never_executable_by_identity(execs: list[Granted], refused: str | None) -> None:
    refusal = exec_write_refusal(execs, [NULL, TMP], {"/srv/alias": "/app/files/exec/0"})
    if refused is None:
        assert refusal is None
    else:
        assert refusal is not None and refused in refusal.message
        assert refusal.pointer == ("/app/files/exec/0" if execs[0].path == "/srv/alias" else "")


def test_a_secret_any_component_but_keys_is_given_is_refused_naming_it() -> None:
    secret = NamedPath("/doors/keys/secrets/a/from", "/srv/s/a", "secret")
    chain = ((1, 100), (1, 10), (1, 1))
    keys_only = [_g("keys", "/srv/s/a", (1, 100), (1, 10), (1, 1)), _g("net", "/usr", (1, 50), (1, 1))]
    assert secret_refusal(secret, chain, keys_only) is None
    reached = [*keys_only, _g("model", "/srv/alias-of-s", (1, 10), (1, 77), (1, 1))]
    refusal = secret_refusal(secret, chain, reached)
    assert refusal is not None and "'/srv/alias-of-s', which the model is given" in refusal.message
    assert "/etc/sharness/secrets" in refusal.hint and refusal.pointer == secret.pointer
