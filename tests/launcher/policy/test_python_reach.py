"""Whether the components can run the launcher's Python: the walk over an injected table of modes."""

from __future__ import annotations

import stat

import pytest

from launcher.policy.python_reach import EXECUTE, LIST, PASS, READ, Unreachable, first_unreachable, view_root

DIR, FILE = stat.S_IFDIR, stat.S_IFREG
# A clone under a 0700 temporary directory, its venv on a Python copied under another 0700 directory.
HOST = {
    "/": DIR | 0o755,
    "/tmp": DIR | 0o1777,
    "/tmp/t": DIR | 0o700,
    "/tmp/t/clone": DIR | 0o755,
    "/tmp/t/clone/.venv": DIR | 0o755,
    "/tmp/t/clone/.venv/pyvenv.cfg": FILE | 0o644,
    "/tmp/t/clone/.venv/lib": DIR | 0o755,
    "/tmp/t/clone/.venv/lib/site-packages": DIR | 0o755,
    "/root": DIR | 0o700,
    "/root/py": DIR | 0o755,
    "/root/py/bin": DIR | 0o755,
    "/root/py/bin/python3": FILE | 0o755,
}
CLONE, VENV, SITE = "/tmp/t/clone", "/tmp/t/clone/.venv", "/tmp/t/clone/.venv/lib/site-packages"
KEPT = (CLONE, VENV, "/root/py", "/root/py/bin", "/usr", "/etc")
NEEDS = {CLONE: LIST, VENV: LIST, SITE: LIST, f"{VENV}/pyvenv.cfg": READ, "/root/py/bin/python3": EXECUTE}


def _walk(changes: dict[str, int], needs: dict[str, str] = NEEDS, kept: tuple[str, ...] = KEPT) -> Unreachable | None:
    modes = {**HOST, **changes}
    return first_unreachable(needs, kept, modes.get)


def test_directories_above_a_kept_path_do_not_count_the_private_root_makes_them_0755() -> None:
    assert _walk({}) is None


@pytest.mark.parametrize(
    ("changes", "path", "missing", "permission"),
    [
        ({CLONE: DIR | 0o700}, CLONE, "rx", "read and search (rx)"),  # a clone made with umask 077
        ({CLONE: DIR | 0o751}, CLONE, "r", "read (r)"),  # searchable, but Python lists what it imports from
        ({f"{VENV}/lib": DIR | 0o750}, f"{VENV}/lib", "x", "search (x)"),  # a directory on the way
        ({SITE: DIR | 0o711}, SITE, "r", "read (r)"),
        ({f"{VENV}/pyvenv.cfg": FILE | 0o600}, f"{VENV}/pyvenv.cfg", "r", "read (r)"),  # else the venv is ignored
        ({"/root/py/bin/python3": FILE | 0o754}, "/root/py/bin/python3", "x", "execute (x)"),
        ({"/root/py": DIR | 0o700}, "/root/py", "x", "search (x)"),  # the kept root itself, on the way to bin
    ],
)
def test_each_path_a_component_opens_needs_its_other_bits(changes: dict[str, int], path: str, missing: str,
                                                          permission: str) -> None:
    found = _walk(changes)
    assert found is not None and (found.path, found.missing, found.permission) == (path, missing, permission)


def test_a_path_that_does_not_exist_is_not_needed_but_one_that_does_is_walked_from_its_view_root() -> None:
    assert _walk({}, {**NEEDS, "/tmp/t/clone/missing": LIST}) is None
    # Kept through a shallower path (an app reading all of /tmp), the 0700 directory is on the way.
    found = _walk({}, kept=("/tmp", *KEPT))
    assert found is not None and (found.path, found.missing, found.needed) == ("/tmp/t", "x", CLONE)


def test_in_the_hosts_own_view_every_directory_above_counts() -> None:
    found = _walk({}, dict.fromkeys(NEEDS, PASS), kept=())
    assert found is not None and (found.path, found.missing) == ("/root", "x")
    found = _walk({"/root": DIR | 0o711}, dict.fromkeys(NEEDS, PASS), kept=())
    assert found is not None and found.path == "/tmp/t"
    assert _walk({"/root": DIR | 0o711, "/tmp/t": DIR | 0o711}, dict.fromkeys(NEEDS, PASS), kept=()) is None


@pytest.mark.parametrize(
    ("path", "kept", "root"),
    [
        ("/srv/a/b", ("/srv", "/srv/a"), "/srv"),  # the shortest holder: the one bind-mounted
        ("/srv/a/b", ("/srv/a/b/",), "/srv/a/b"),
        ("/srv/workbin/x", ("/srv/work",), "/"),  # a common prefix is not a parent
        ("/srv/a", (), "/"),
        ("/srv/a", ("/",), "/"),
    ],
)
def test_view_root_is_the_shortest_kept_path_holding_it(path: str, kept: tuple[str, ...], root: str) -> None:
    assert view_root(path, kept) == root


def test_the_refusal_names_the_path_the_permission_and_the_fix() -> None:
    found = _walk({f"{VENV}/lib": DIR | 0o750})
    assert found is not None
    assert f"{VENV}/lib (on the way to {SITE}) lacks search (x) permission for other users" in found.message()
    assert found.hint().startswith(f"chmod o+x {VENV}/lib, or ")
    itself = Unreachable("/opt/py/bin/python3", "x", False, "/opt/py/bin/python3")
    assert "/opt/py/bin/python3 lacks execute (x)" in itself.message() and "on the way" not in itself.message()
