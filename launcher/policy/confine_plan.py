"""What each component may touch: Landlock paths and ports, seccomp mode. Pure: no I/O.

`allowance_of` is the one source: the launcher gives its result to the kernel (launcher/policy/confinement.py,
launcher/lifecycle/session.py) and the plan a person approves is rendered from it (launcher/policy/plan.py).
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass, replace

import launcher
from launcher.manifest import Manifest
from launcher.policy.contracts import door_rows
from launcher.policy.layout import DEVPTS, HOST_NETWORK, MODEL_PORT, PROXY_PORT, SessionPaths

# Of /etc, only what the loader, the resolver, TLS and the usual tools read, each by name: /etc whole holds
# pip.conf and npmrc tokens, ssl/private, and /etc/sharness, where secret sources belong. A file this
# distribution lacks is not granted (LandlockRules.if_present; the private root skips it).
ETC_LOADER = ("/etc/ld.so.cache",)  # the loader's library index (dlopen by name: NSS modules, libresolv)
ETC_RESOLVER = (
    "/etc/nsswitch.conf", "/etc/hosts", "/etc/resolv.conf", "/etc/host.conf", "/etc/gai.conf",  # the resolver
    "/etc/services", "/etc/protocols",  # getservbyname, getprotobyname
)
ETC_TLS = (
    "/etc/ssl/certs", "/etc/ssl/openssl.cnf",  # trust anchors and OpenSSL's configuration (Debian, Alpine, SUSE)
    "/etc/pki/tls/certs", "/etc/pki/tls/openssl.cnf", "/etc/pki/ca-trust/extracted",  # the same on RHEL, Fedora
    "/etc/crypto-policies/back-ends",  # OpenSSL's configuration includes it on Fedora
)
ETC_TOOLS = (
    "/etc/passwd", "/etc/group",  # user and group names (git, getpass, ls -l)
    "/etc/localtime",  # the time zone
    "/etc/alternatives",  # Debian's links behind awk, pager, editor, cc
    "/etc/mime.types",  # Python's mimetypes
    "/etc/os-release",  # the distribution's name (platform, pip)
)
ETC_READ = (*ETC_LOADER, *ETC_RESOLVER, *ETC_TLS, *ETC_TOOLS)  # what the app and the shell's programs may read
# A door is forked from the launcher, which has loaded its libraries, OpenSSL's configuration and the time zone
# already: fs and keys read no /etc file at all; the egress doors resolve names and (model) verify an upstream.
# Each file fewer is one bind fewer in its private root (docs/decisions/session-bench.md).
ETC_EGRESS = (*ETC_LOADER, *ETC_RESOLVER, *ETC_TLS)
DOOR_ETC: Mapping[str, tuple[str, ...]] = {"fs": (), "keys": (), "net": ETC_EGRESS, "model": ETC_EGRESS}
# What every component reads, /etc aside: the loader and libraries, the usual devices, its proc. Read-only.
SYSTEM_BASE = ("/usr", "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/proc", "/sys/devices/system/cpu")
# What every dynamically linked program needs to start: the base and /etc above. The most any component reads
# of the system (the preflight's and the plan's list); a door gets the base and its DOOR_ETC.
SYSTEM_READ = (*SYSTEM_BASE[:1], *ETC_READ, *SYSTEM_BASE[1:])
SYSTEM_EXEC = ("/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/local/bin")
WRITE_DEVICES = ("/dev/null",)
# The shell's commands open their controlling terminal by this name (ssh, sudo-like prompts, `tty` programs):
# the generic device, which reaches only the opener's own ctty (a command's pty, or ENXIO without one).
CONTROLLING_TTY = "/dev/tty"
DNS_PORT = 53


def system_read(role: str) -> tuple[str, ...]:
    """The system paths `role` reads: SYSTEM_READ for the app and the shell, the base and DOOR_ETC for a door."""
    etc = DOOR_ETC.get(role)
    return SYSTEM_READ if etc is None else (*SYSTEM_BASE, *etc)


@dataclass(frozen=True)
class Allowance:
    """Landlock paths and ports plus the seccomp mode for one component."""

    read: tuple[str, ...]
    write: tuple[str, ...]
    exec: tuple[str, ...]
    tcp_bind: tuple[int, ...]
    tcp_connect: tuple[int, ...]
    deny_inet: bool
    allow_udp: bool = False


@functools.cache
def python_paths() -> tuple[str, ...]:
    """What a component needs to read to run this installation's Python: prefixes and the source tree.

    Read from the interpreter's own variables and its link, once per process.
    """
    project = os.path.dirname(os.path.dirname(os.path.abspath(launcher.__file__)))
    # The interpreter a venv's python links to may lie outside both prefixes (pyenv, uv): its bin too
    # (realpath reads the link, once).
    interpreter_bin = os.path.dirname(os.path.realpath(sys.executable))
    paths = {sys.prefix, sys.base_prefix, sysconfig.get_paths()["stdlib"], project, f"{sys.prefix}/bin",
             interpreter_bin}
    return tuple(sorted(path for path in paths if path not in ("/", "/usr")))


def covers(grants: tuple[str, ...], path: str) -> bool:
    """Whether Landlock's path-beneath rule on any of `grants` reaches `path` (both absolute, normalised)."""
    return any(path == grant or path.startswith(grant.rstrip("/") + "/") for grant in grants)


def allowance_of(manifest: Manifest, role: str, layout: SessionPaths, python: tuple[str, ...]) -> Allowance:
    """What the kernel lets `role` touch in a session of `manifest` laid out as `layout`."""
    may_use_proxy = (role, "net") in manifest.edges
    if role == "app":
        app = manifest.app
        allowance = app_allowance(layout, python, app.files_read, app.files_exec, may_use_proxy=may_use_proxy,
                                  may_use_model=(role, "model") in manifest.edges, bind_tcp=app.bind_tcp)
        return with_workspace_mount(allowance, manifest) if app.mounts_workspace else allowance
    if role == "shell":
        return shell_allowance(layout, python, door_rows(manifest, role), may_use_proxy=may_use_proxy,
                               may_use_model=(role, "model") in manifest.edges)
    return door_allowance(role, layout, python, door_rows(manifest, role))


def egress_ports(manifest_rows: Mapping[str, object], role: str) -> tuple[int, ...]:
    """The TCP ports a host-network door dials, from its manifest rows."""
    ports: set[int] = set()
    proxy = manifest_rows.get("upstream_proxy")
    if role == "net" and isinstance(proxy, dict):  # the upstream proxy is the only address it dials
        ports.add(int(str(proxy.get("address", "")).rpartition(":")[2]))
    elif role == "net":
        allow = manifest_rows.get("allow", {})
        if isinstance(allow, dict):
            for entries in allow.values():
                for entry in entries if isinstance(entries, list) else []:
                    _, _, port = str(entry).rpartition(":")
                    if port.isdigit():
                        ports.add(int(port))
    if role == "model" and manifest_rows.get("upstream") != "twin":  # the twin answers in process
        scheme, _, authority = str(manifest_rows.get("upstream", "")).partition("://")
        _, colon, port = authority.rpartition(":")
        ports.add(int(port) if colon and port.isdigit() else 443 if scheme == "https" else 80)
    return tuple(sorted(ports))


def door_allowance(
    role: str, layout: SessionPaths, python: tuple[str, ...], rows: Mapping[str, object],
) -> Allowance:
    """A door other than the shell (`shell_allowance`) is forked from the pre-imported launcher: it reads
    Python and executes nothing. The net and model doors keep the host network (the model door not with the
    twin); fs and keys have no internet sockets at all."""
    write: tuple[str, ...] = ()
    if role == "fs" and isinstance(rows.get("workspace"), str):
        write = (str(rows["workspace"]),)
    # The model door with the twin reaches nothing: no internet socket at all, like fs and keys.
    host = role in HOST_NETWORK and not (role == "model" and rows.get("upstream") == "twin")
    extra_read = (str(rows["ca_bundle"]),) if role in ("model", "net") and isinstance(rows.get("ca_bundle"), str) \
        else ()
    # The egress doors resolve names: UDP and TCP to port 53 for their resolver.
    tcp_connect = tuple(sorted({*egress_ports(rows, role), DNS_PORT})) if host else ()
    return Allowance(
        # No component is given a secret source's path, the keys door included: it gets each as an fd the
        # launcher opened as root (preflight refuses a source any component could read by its path).
        read=(*system_read(role), *python, *extra_read, layout.private_dir(role)),
        write=(*WRITE_DEVICES, *write),
        exec=(),
        tcp_bind=(),
        tcp_connect=tcp_connect,
        deny_inet=not host and not tcp_connect,
        allow_udp=host,
    )


def app_allowance(
    layout: SessionPaths,
    python: tuple[str, ...],
    files_read: tuple[str, ...],
    files_exec: tuple[str, ...],
    may_use_proxy: bool,
    may_use_model: bool = False,
    bind_tcp: tuple[int, ...] = (),
) -> Allowance:
    """The app reads the system and what the manifest lists, writes only its scratch tmpfs (HOME, TMPDIR); it
    connects only to the net door's proxy and the model door's listener in its netns, with those edges, and
    binds only app.bind_tcp's ports there."""
    private = layout.private_dir("app")
    return Allowance(
        read=(*SYSTEM_READ, *python, *files_read, *files_exec, private),
        write=(*WRITE_DEVICES, layout.home_dir("app"), layout.tmp_dir("app")),
        exec=(*SYSTEM_EXEC, *python_paths_exec(python), *files_exec),
        tcp_bind=bind_tcp,
        tcp_connect=(*((PROXY_PORT,) if may_use_proxy else ()), *((MODEL_PORT,) if may_use_model else ()),
                     *bind_tcp),
        deny_inet=not (may_use_proxy or may_use_model or bind_tcp),
    )


def with_workspace_mount(allowance: Allowance, manifest: Manifest) -> Allowance:
    """The app with the fs door's FUSE mount at the workspace path: Landlock lets it read and write there (the fs
    door judges each request; the mount is no host directory), and execute there only when doors.fs.exec names
    prefixes (the door makes files 0755 only inside them)."""
    workspace = manifest.workspace
    executes = (workspace,) if manifest.door_rows("fs").get("exec") else ()
    return replace(allowance, read=(*allowance.read, workspace), write=(*allowance.write, workspace),
                   exec=(*allowance.exec, *executes))


def shell_allowance(
    layout: SessionPaths, python: tuple[str, ...], rows: Mapping[str, object], may_use_proxy: bool,
    may_use_model: bool = False,
) -> Allowance:
    """The shell door and every command it runs: the system's programs, the workspace read-only in mode
    "read" (in mode "overlay" its overlay, writable and never executable), writes only on its scratch tmpfs
    (noexec: a writable path is never executable) and on a devpts of its own (its tty commands' ptys;
    mounted, not the host's). The session adds
    the shell's own cgroup directories to its writes (delegated: launcher/kernel/cgroups.py), which each
    command's own Landlock layer takes away again (doors/shell/_landlock.py)."""
    workspace, mode = rows.get("workspace_dir"), rows.get("workspace")
    read = (str(workspace),) if mode in ("read", "overlay") and isinstance(workspace, str) else ()
    # In overlay mode the workspace's path holds the overlay (its lower layer bound read-only beneath it):
    # commands write there, never execute. The upper layer is read beneath its private directory.
    overlay = read if mode == "overlay" else ()
    files = rows.get("files")
    listed: dict[str, list[str]] = files if isinstance(files, dict) else {}
    files_read, files_exec = tuple(listed.get("read", ())), tuple(listed.get("exec", ()))
    return Allowance(
        read=(*SYSTEM_READ, *python, layout.private_dir("shell"), *read, *files_read, *files_exec),
        write=(*WRITE_DEVICES, CONTROLLING_TTY, layout.home_dir("shell"), layout.tmp_dir("shell"), DEVPTS, *overlay),
        exec=(*SYSTEM_EXEC, *python_paths_exec(python), *files_exec),
        tcp_bind=(),
        tcp_connect=(*((PROXY_PORT,) if may_use_proxy else ()), *((MODEL_PORT,) if may_use_model else ())),
        deny_inet=not (may_use_proxy or may_use_model),
    )


def python_paths_exec(python: tuple[str, ...]) -> tuple[str, ...]:
    """Executables among the Python paths: only each prefix's bin directory."""
    return tuple(path for path in python if path.endswith("/bin"))
