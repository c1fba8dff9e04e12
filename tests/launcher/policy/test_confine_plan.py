"""What each component may touch, for every role in every manifest shape that changes it. No root needed:
the tables here are the expected grants written out by hand, not recomputed from the code under test."""

from __future__ import annotations

import os
import sys

import pytest
from manifest_shapes import CASES, PYTHON, SECRET, SHAPES, WORKSPACE

from launcher.kernel.landlock import LandlockRules
from launcher.manifest import Manifest
from launcher.policy.confine_plan import (
    Allowance,
    allowance_of,
    covers,
    door_allowance,
    egress_ports,
    python_paths,
    python_paths_exec,
)
from launcher.policy.layout import SessionLayout
from pki.vocabulary import ROLES

LAYOUT = SessionLayout("0123abcd")
ETC = {"/etc/ld.so.cache", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf",
       "/etc/host.conf", "/etc/gai.conf", "/etc/services", "/etc/protocols", "/etc/localtime", "/etc/ssl/certs",
       "/etc/ssl/openssl.cnf", "/etc/pki/tls/certs", "/etc/pki/tls/openssl.cnf", "/etc/pki/ca-trust/extracted",
       "/etc/crypto-policies/back-ends", "/etc/alternatives", "/etc/mime.types", "/etc/os-release"}
BASE = {"/usr", "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/proc", "/sys/devices/system/cpu"}
SYSTEM = {*BASE, *ETC}
# A door reads of /etc only what it uses: fs and keys nothing, the egress doors the loader, resolver and TLS files.
EGRESS_ETC = {"/etc/ld.so.cache", "/etc/nsswitch.conf", "/etc/hosts", "/etc/resolv.conf", "/etc/host.conf",
              "/etc/gai.conf", "/etc/services", "/etc/protocols", "/etc/ssl/certs", "/etc/ssl/openssl.cnf",
              "/etc/pki/tls/certs", "/etc/pki/tls/openssl.cnf", "/etc/pki/ca-trust/extracted",
              "/etc/crypto-policies/back-ends"}
DOOR_SYSTEM = {"fs": BASE, "keys": BASE, "net": {*BASE, *EGRESS_ETC}, "model": {*BASE, *EGRESS_ETC}, "shell": SYSTEM}
PROGRAMS = {"/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/local/bin"}


def _private(role: str) -> str:
    return f"/run/sharness/0123abcd/{role}"


def _expected(manifest: Manifest, role: str) -> dict[str, object]:
    """The grants of `role`, from the design's rules (docs/decisions.md, "Which components may open ...")."""
    to_net = (role, "net") in manifest.edges
    system = DOOR_SYSTEM.get(role, SYSTEM)
    to_model = (role, "model") in manifest.edges  # the model door's plain-HTTP listener in its netns
    want: dict[str, object] = {"read": {*system, *PYTHON, _private(role)}, "write": {"/dev/null"}, "exec": set(),
                               "tcp_connect": (), "deny_inet": True, "allow_udp": False}
    if role == "app":
        app = manifest.app
        want.update(read={*SYSTEM, *PYTHON, *app.files_read, *app.files_exec, _private("app")},
                    write={"/dev/null", f"{_private('app')}/home", f"{_private('app')}/tmp"},
                    exec={*PROGRAMS, "/opt/py/bin", *app.files_exec},
                    tcp_connect=(*((3128,) if to_net else ()), *((3129,) if to_model else ())),
                    deny_inet=not (to_net or to_model))
    elif role == "fs":
        want.update(write={"/dev/null", WORKSPACE})
    elif role == "keys":  # no secret source by path: the keys door gets each as an fd opened by the launcher
        want.update(read={*system, *PYTHON, _private(role)})
    elif role == "shell":  # its commands run the system's programs, read the workspace in mode "read" and
        # write its overlay (mounted at the workspace's path, the workspace its read-only lower layer) in "overlay"
        shell = manifest.door_rows("shell")
        reads_workspace = shell.get("workspace") in ("read", "overlay")
        overlay = {manifest.workspace} if shell.get("workspace") == "overlay" else set()
        files_read, files_exec = shell.get("files", {}).get("read", []), shell.get("files", {}).get("exec", [])
        want.update(read={*SYSTEM, *PYTHON, _private("shell"), *({manifest.workspace} if reads_workspace else set()),
                          *files_read, *files_exec},
                    write={"/dev/null", "/dev/tty", f"{_private('shell')}/home", f"{_private('shell')}/tmp",
                           "/dev/pts", *overlay},
                    exec={*PROGRAMS, "/opt/py/bin", *files_exec},
                    tcp_connect=(*((3128,) if to_net else ()), *((3129,) if to_model else ())),
                    deny_inet=not (to_net or to_model))
    elif role == "net":
        allow = manifest.door_rows("net").get("allow", {})
        ports = {int(entry.rpartition(":")[2]) for entries in allow.values() for entry in entries}
        want.update(tcp_connect=tuple(sorted({*ports, 53})), deny_inet=False, allow_udp=True)
    elif role == "model" and manifest.door_rows("model")["upstream"] == "twin":
        pass  # the twin answers in process: no internet socket at all
    elif role == "model":
        _, _, port = manifest.door_rows("model")["upstream"].removeprefix("https://").partition(":")
        want.update(tcp_connect=tuple(sorted({int(port or 443), 53})), deny_inet=False, allow_udp=True)
    return want


def _allowance(shape: str, role: str) -> Allowance:
    return allowance_of(SHAPES[shape], role, LAYOUT, PYTHON)


@pytest.mark.parametrize(("shape", "role"), CASES)
def test_each_role_gets_exactly_its_grants(shape: str, role: str) -> None:
    allowance = _allowance(shape, role)
    got = {"read": set(allowance.read), "write": set(allowance.write), "exec": set(allowance.exec),
           "tcp_connect": allowance.tcp_connect, "deny_inet": allowance.deny_inet, "allow_udp": allowance.allow_udp}
    assert got == _expected(SHAPES[shape], role)
    assert allowance.tcp_bind == ()


@pytest.mark.parametrize(("shape", "role"), CASES)
def test_nothing_writable_is_executable(shape: str, role: str) -> None:
    allowance = _allowance(shape, role)
    LandlockRules(read=allowance.read, write=allowance.write, exec=allowance.exec)  # raises on an overlap
    assert not any(covers(allowance.exec, path) or covers((path,), x) for path in allowance.write
                   for x in allowance.exec)


@pytest.mark.parametrize(("shape", "role"), CASES)
def test_only_the_fs_door_writes_the_workspace(shape: str, role: str) -> None:
    """The shell in overlay mode writes the path, which is its overlay there: the workspace is its read-only
    lower layer (tests/launcher/kernel/test_overlay.py, tests/integration/test_shell_overlay.py)."""
    allowance = _allowance(shape, role)
    touches = any(covers((path,), WORKSPACE) or covers((WORKSPACE,), path) for path in allowance.write)
    overlay = role == "shell" and SHAPES[shape].overlay_limits() is not None
    assert touches == (role == "fs" or overlay)
    assert not covers(allowance.exec, WORKSPACE) and not any(covers((WORKSPACE,), x) for x in allowance.exec)


@pytest.mark.parametrize(("shape", "role"), CASES)
def test_the_app_reads_the_workspace_only_when_the_manifest_lists_it(shape: str, role: str) -> None:
    reads = covers(_allowance(shape, role).read, WORKSPACE)
    listed = any(covers((root,), WORKSPACE) for root in SHAPES[shape].app.files_read)
    shell_reads = SHAPES[shape].door_rows("shell").get("workspace") in ("read", "overlay")
    assert reads == ((role == "app" and listed) or (role == "shell" and shell_reads))


@pytest.mark.parametrize(("shape", "role"), CASES)
def test_no_component_reaches_another_ones_private_directory(shape: str, role: str) -> None:
    allowance = _allowance(shape, role)
    for other in ROLES:
        reachable = covers((*allowance.read, *allowance.write, *allowance.exec), _private(other))
        assert reachable == (other == role), other
    assert not covers(allowance.write, LAYOUT.doors_dir) and not covers(allowance.read, LAYOUT.doors_dir)


@pytest.mark.parametrize(("shape", "role"), CASES)
def test_no_component_writes_or_reads_a_secret_source_by_its_path(shape: str, role: str) -> None:
    allowance = _allowance(shape, role)
    for secret in SHAPES[shape].door_rows("keys").get("secrets", {}).values():
        assert not covers(allowance.write, secret["from"])
        assert not covers((*allowance.read, *allowance.exec), secret["from"])  # keys gets it as an fd
    assert not covers(allowance.write, SECRET)


@pytest.mark.parametrize(("shape", "role"), CASES)
def test_etc_is_granted_by_name_and_never_where_secrets_belong(shape: str, role: str) -> None:
    """/etc holds pip.conf and npmrc tokens, ssl/private, and /etc/sharness (the secret sources' home)."""
    allowance = _allowance(shape, role)
    grants = (*allowance.read, *allowance.write, *allowance.exec)
    assert "/etc" not in grants
    for held in ("/etc/sharness/secrets/x", "/etc/ssl/private/key.pem", "/etc/pip.conf", "/etc/npmrc",
                 "/etc/shadow", "/etc/gitconfig"):
        assert not covers(grants, held), (role, held)


@pytest.mark.parametrize(("rows", "role", "want"), [
    ({"allow": {"app": ["a.test:443", "b.test:80"], "shell": ["a.test:443"]}}, "net", (80, 443)),
    ({"allow": {"app": ["[2001:db8::1]:8443", "*.x.test:22"]}}, "net", (22, 8443)),
    ({"allow": {"app": ["no-port", "x.test:https"]}}, "net", ()),
    ({"allow": {"app": "a.test:443"}}, "net", ()),  # not a list: nothing
    ({"allow": ["a.test:443"]}, "net", ()),  # not a mapping: nothing
    ({}, "net", ()),
    ({"upstream": "https://api.anthropic.com"}, "model", (443,)),
    ({"upstream": "https://api.anthropic.com:8443"}, "model", (8443,)),
    ({"upstream": "http://plain.test"}, "model", (80,)),
    ({"allow": {"app": ["a.test:443"]}}, "fs", ()),
    ({"upstream": "https://api.anthropic.com"}, "keys", ()),
])
def test_egress_ports(rows: dict[str, object], role: str, want: tuple[int, ...]) -> None:
    assert egress_ports(rows, role) == want


def test_the_fs_door_without_a_workspace_row_writes_nothing_of_the_owners() -> None:
    assert door_allowance("fs", LAYOUT, PYTHON, {}).write == ("/dev/null",)
    assert door_allowance("fs", LAYOUT, PYTHON, {"workspace": ["/x"]}).write == ("/dev/null",)
    assert door_allowance("keys", LAYOUT, PYTHON, {"workspace": "/x"}).write == ("/dev/null",)


@pytest.mark.parametrize(("grants", "path", "want"), [
    (("/a",), "/a", True), (("/a",), "/a/b/c", True), (("/a",), "/ab", False), (("/a/b",), "/a", False),
    (("/",), "/anything", True), (("/a/",), "/a/b", True), ((), "/a", False), (("/x", "/a"), "/a/b", True),
])
def test_covers_is_landlocks_path_beneath(grants: tuple[str, ...], path: str, want: bool) -> None:
    assert covers(grants, path) == want


def test_python_paths_are_this_interpreters() -> None:
    paths = python_paths()
    assert sys.prefix in paths and f"{sys.prefix}/bin" in paths
    assert all(os.path.isabs(path) and path not in ("/", "/usr") for path in paths)
    assert any(os.path.isdir(os.path.join(path, "launcher")) for path in paths)  # the source tree
    assert python_paths_exec(paths) == tuple(path for path in paths if path.endswith("/bin"))
    assert python_paths_exec(PYTHON) == ("/opt/py/bin",)
