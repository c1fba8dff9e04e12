"""The manifest for bubblewrap: one command line that runs the app alone, confined as far as bwrap can. Pure.

Where the launcher cannot run (no root), bwrap still gives the app namespaces, a root of bind mounts holding only
the plan's paths, and the launcher's own seccomp filter (compiled to BPF beside the command, passed by fd). It
starts no door, makes no user, cgroup or Landlock domain: those rows are said unheld, and the tests measure
each line with the probe app (tests/launcher/render/test_bwrap_run.py).
"""

from __future__ import annotations

import shlex

from launcher.manifest import Manifest
from launcher.policy.confine_plan import SYSTEM_READ, allowance_of
from launcher.policy.environment import XDG_DIRS, app_env
from launcher.policy.layout import SessionPaths
from launcher.policy.plan import Plan, PlanRow
from launcher.render.matrix import Hold, HoldTable, matrix_of
from launcher.render.rendering import Rendering, RenderInput, start_dir
from launcher.render.seccomp_profile import filter_mode
from pki.vocabulary import BOUNDARY, DOOR_ORDER, SETTING, UNHELD

TARGET = "bwrap"
COMMAND_FILE = "bwrap.sh"
PROGRAM_FILE = "app.seccomp.bpf"
SECCOMP_FD = 9  # the fd the command line opens the program on (one digit: POSIX sh redirects no higher)
DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")
# What the app keeps of its launcher environment: no door, so no socket, identity, proxy or model variable.
KEPT_ENV = ("PATH", "HOME", "TMPDIR", "LANG", "SHARNESS_SESSION", "SHARNESS_TRUST_DOMAIN",
            *(name for name, _ in XDG_DIRS))
NAMESPACES = ("--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
              "--unshare-cgroup")


def _tcp_hold(manifest: Manifest, row: PlanRow) -> Hold:
    if filter_mode(manifest, "app", ()).deny_inet:
        return Hold(BOUNDARY, "the kernel (seccomp: the app's filter refuses every AF_INET/AF_INET6 socket, as it "
                    "has no edge to the net or model door)")
    return Hold(UNHELD, "bwrap has no Landlock: the app may bind any port of its loopback-only namespace and "
                "connect to any (listen() stays refused by seccomp)")


_NO_DOOR = Hold(UNHELD, "bwrap runs the app alone: this door is not started (sharness-launch, as root, starts it)")

HOLDS: HoldTable = {
    "session.audit": Hold(UNHELD, "no session audit log to cap: bwrap runs the app alone, with no door and no launcher "
                          "to write one"),
    "session.ttl": Hold(BOUNDARY, "timeout(1) outside the sandbox kills it after ttl_s (the app, in its own pid "
                        "namespace, cannot signal it)"),
    "app:uid": Hold(UNHELD, "bwrap runs the app as whoever starts it (its user namespace maps that uid): give it a "
                    "user of its own (sudo -u, setpriv)"),
    "app:netns": Hold(BOUNDARY, "the kernel (bwrap --unshare-net: loopback only; no net door, so no proxy either)"),
    "app:ipc": Hold(BOUNDARY, "the kernel (bwrap --unshare-ipc)"),
    "app:root": Hold(BOUNDARY, "the kernel (bwrap's mount namespace: a read-only tmpfs root holding only the plan's "
                     "paths, each bound read-only; binds follow symlinks and keep submounts, where the launcher "
                     "refuses such a path)"),
    "app:pidns": Hold(BOUNDARY, "the kernel (bwrap --unshare-pid, with a proc of its own)"),
    "app:landlock.fs": Hold(UNHELD, "bwrap has no Landlock: the binds hold which files exist (row root), but HOME "
                            "and TMPDIR are an executable tmpfs: what the app writes there it can run"),
    "app:landlock.tcp": _tcp_hold,
    "app:landlock.scope": Hold(BOUNDARY, "the kernel (own pid namespace: no outside process to signal; own network "
                               "namespace: abstract sockets are per namespace)"),
    "app:seccomp": Hold(BOUNDARY, "the kernel (the launcher's filter for the app, compiled to BPF, loaded by bwrap "
                        f"--seccomp from {PROGRAM_FILE})"),
    "app:no_new_privs": Hold(BOUNDARY, "the kernel (bwrap sets no_new_privs before it loads the filter)"),
    "app:memory": Hold(UNHELD, "bwrap makes no cgroup (systemd-run --user --scope -p MemoryMax= could)"),
    "app:pids": Hold(UNHELD, "bwrap makes no cgroup (systemd-run --user --scope -p TasksMax= could)"),
    "app:scratch": Hold(UNHELD, "bwrap's --tmpfs takes no inode limit and no noexec (and bwrap 0.8 no size): HOME "
                        "and TMPDIR are on a tmpfs bounded only by the kernel's default"),
    "app:edges": Hold(UNHELD, "bwrap starts no door: the app has nothing to call (its edges' grants are lost)"),
    "app:proxy_env": Hold(UNHELD, "no net door to point HTTP(S)_PROXY at: not set"),
    "app:env": Hold(SETTING, "the app's environment (bwrap --setenv; the launcher refused a secret-shaped one at "
                    "load)"),
    "app:home_seed": Hold(UNHELD, "bwrap copies nothing into HOME: its tmpfs starts empty"),
    "app:children": Hold(BOUNDARY, "the kernel (namespaces, binds, seccomp and no_new_privs pass across fork and "
                         "execve)"),
    "app:workspace.mount": Hold(UNHELD, "no fs door under bwrap, so no FUSE mount of the workspace"),
    "app:workspace.unmount": Hold(UNHELD, "no FUSE mount of the workspace under bwrap"),
    **{f"{door}:*": _NO_DOOR for door in DOOR_ORDER},
}


def _binds(manifest: Manifest, layout: SessionPaths, python: tuple[str, ...]) -> list[str]:
    allowance = allowance_of(manifest, "app", layout, python)
    private = layout.private_dir("app")
    special = {*DEVICES, "/proc", private, *allowance.write}
    args: list[str] = []
    for path in sorted({*allowance.read, *allowance.exec} - special):
        # A system file this distribution lacks is skipped, as the launcher skips it; the rest must exist.
        optional = path in SYSTEM_READ or path.startswith("/sys/")
        args += ["--ro-bind-try" if optional else "--ro-bind", path, path]
    for device in DEVICES:
        args += ["--dev-bind-try", device, device]
    args += ["--proc", "/proc", "--tmpfs", private]
    args += [arg for path in (layout.home_dir("app"), layout.tmp_dir("app")) for arg in ("--dir", path)]
    return args


def command_argv(manifest: Manifest, given: RenderInput) -> list[str]:
    """The whole command: timeout(1) for the TTL, bwrap with its namespaces, binds, environment and filter fd,
    then the app's argv."""
    layout = SessionPaths(given.sid)
    env = app_env(manifest, layout, given.python_prefix)
    argv = ["timeout", "--signal=KILL", str(manifest.session.ttl_s), "bwrap", *NAMESPACES,
            "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"]
    kept = (*KEPT_ENV, *(name for name, _ in manifest.app.env))  # and the manifest's own variables (app.env)
    argv += [arg for name in kept if name in env for arg in ("--setenv", name, env[name])]
    argv += [arg for link, target in given.root_links for arg in ("--symlink", target, link)]
    binds = _binds(manifest, layout, given.python)
    argv += binds
    argv += ["--remount-ro", "/", "--chdir", start_dir(manifest, layout, "app", manifest.workspace in binds),
             "--seccomp", str(SECCOMP_FD),
             "--", *manifest.app.argv]
    return argv


def command_line(argv: list[str]) -> str:
    """The command as one shell line, the filter opened on SECCOMP_FD from the file beside it."""
    return f"{shlex.join(argv)} {SECCOMP_FD}<\"$(dirname \"$0\")/{PROGRAM_FILE}\""


def render(manifest: Manifest, plan: Plan, given: RenderInput) -> Rendering:
    """The bwrap form: a shell script running the app alone, its BPF program, the matrix."""
    line = command_line(command_argv(manifest, given))
    script = f"#!/bin/sh\n# sharness-launch render --to {TARGET}: {manifest.sha256}\nexec {line}\n"
    return Rendering(
        target=TARGET, files=((COMMAND_FILE, script),), matrix=matrix_of(manifest, plan, HOLDS),
        programs=((PROGRAM_FILE, filter_mode(manifest, "app", given.python)),),
        not_covered=("the doors: bwrap runs the app alone, so every door's rows and grants are absent",),
    )
