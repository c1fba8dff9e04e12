"""The manifest for Docker: a script of `docker` commands, one container per component. Pure.

Docker gives each container its own network, IPC and pid namespace, so unlike a Kubernetes Pod the app keeps a
network of its own: an internal network (no route out) holding only it, the net door's proxy and the model door's
listener; the shell gets another. The net and model doors also join a network with a route out; fs and keys have
none. Each door's socket is in a volume mounted only in its container and its edges' clients. Every command is
checked by the docker client itself, offline (tests/launcher/render/test_docker.py); the holds are rendered, not
run: the rows Docker cannot hold are said unheld.
"""

from __future__ import annotations

import json
import shlex

from launcher.manifest import Manifest
from launcher.policy.environment import app_env, door_env
from launcher.policy.layout import MODEL_PORT, PROXY_PORT, SessionPaths
from launcher.policy.plan import Plan
from launcher.render.containers import IMAGE_PATH, command_of, image_of, socket_dir, socket_path, uid_of
from launcher.render.docker_holds import HOLDS
from launcher.render.matrix import matrix_of
from launcher.render.rendering import Rendering, RenderInput, start_dir
from launcher.render.seccomp_profile import filter_mode, profile_text
from pki.vocabulary import DOOR_ORDER, MODEL_VARIABLES, PROXY_VARIABLES

TARGET = "docker"
SCRIPT_FILE = "docker.sh"
EGRESS = ("net", "model")  # the doors whose clients reach them over TCP, and which dial out


def _route_out(manifest: Manifest, role: str) -> bool:
    """Whether `role`'s container joins the network with a route out: the net door, the model door unless twin."""
    return role == "net" or (role == "model" and manifest.door_rows("model").get("upstream") != "twin")


def prefix(manifest: Manifest, sid: str) -> str:
    """The name every object of the session starts with."""
    return f"sharness-{manifest.session.name}-{sid}"


def _internal_networks(manifest: Manifest, sid: str) -> dict[str, tuple[str, ...]]:
    """The internal network of each client of the net or model door, and who else is on it."""
    networks = {}
    for client in ("app", "shell"):
        servers = tuple(server for server in EGRESS if (client, server) in manifest.edges)
        if client in manifest.roles and servers:
            networks[f"{prefix(manifest, sid)}-{client}"] = (client, *servers)
    return networks


def _env(manifest: Manifest, role: str, layout: SessionPaths, sid: str) -> dict[str, str]:
    if role != "app":
        return {**door_env(), "SHARNESS_DOOR_ROLE": role, "SHARNESS_DOOR_LISTEN": socket_path(layout, role),
                "SHARNESS_DOOR_ROWS": json.dumps(manifest.door_rows(role), sort_keys=True, separators=(",", ":"))}
    env = app_env(manifest, layout, "/usr")
    env["PATH"] = IMAGE_PATH
    for name in ("SHARNESS_SVID", "SHARNESS_BUNDLE"):  # the session CA's files are not handed out here
        env.pop(name, None)
    env.update({f"SHARNESS_DOOR_{server.upper()}": socket_path(layout, server) for server in manifest.edges_out(role)})
    # The doors are other containers on the app's internal network, reached by name.
    env.update({name: f"http://{prefix(manifest, sid)}-net:{PROXY_PORT}" for name in PROXY_VARIABLES if name in env})
    if MODEL_VARIABLES[0] in env:
        env[MODEL_VARIABLES[0]] = f"http://{prefix(manifest, sid)}-model:{MODEL_PORT}"
    return env


def _mounts(manifest: Manifest, role: str, layout: SessionPaths, sid: str) -> list[str]:
    rows, args = manifest.door_rows(role), []
    workspace = f"type=bind,src={manifest.workspace},dst={manifest.workspace}"
    if role == "fs":
        args += ["--mount", workspace]
    elif (role == "app" and manifest.workspace in manifest.app.files_read) or \
            (role == "shell" and rows.get("workspace") == "read"):
        args += ["--mount", f"{workspace},readonly"]
    if role != "app":
        args += ["--mount", f"type=volume,src={prefix(manifest, sid)}-door-{role},dst={socket_dir(layout, role)}"]
    for server in manifest.edges_out(role):
        args += ["--mount", f"type=volume,src={prefix(manifest, sid)}-door-{server},dst={socket_dir(layout, server)},"
                 "readonly"]
    if role in ("app", "shell"):
        scratch_mb, inodes = manifest.scratch_limits(role)
        args += ["--tmpfs", f"{layout.private_dir(role)}:size={scratch_mb}m,nr_inodes={inodes},noexec,nosuid,nodev,"
                 f"uid={uid_of(role)},gid={uid_of(role)},mode=0700"]
    for secret in sorted(rows.get("secrets", {}).values(), key=lambda entry: str(entry["from"])):
        args += ["--mount", f"type=bind,src={secret['from']},dst={secret['from']},readonly"]
    return args


def _network(manifest: Manifest, role: str, sid: str) -> list[str]:
    internal = [name for name, members in _internal_networks(manifest, sid).items() if role == members[0]]
    if internal:
        return ["--network", internal[0]]
    return ["--network", f"{prefix(manifest, sid)}-egress" if _route_out(manifest, role) else "none"]


def run_argv(manifest: Manifest, role: str, sid: str, given: RenderInput) -> list[str]:
    """`docker run` for one component: detached, its uid, read-only root, no capability, no new privileges, its
    seccomp profile, memory and pids limits, its network, mounts and environment."""
    layout = SessionPaths(sid)
    memory_mb, pids = manifest.process_limits(role)
    profile = "unconfined" if given.seccomp_default else f"seccomp/{role}.json"
    argv = ["docker", "run", "--detach", "--name", f"{prefix(manifest, sid)}-{role}", "--user",
            f"{uid_of(role)}:{uid_of(role)}", "--read-only", "--cap-drop", "ALL", "--security-opt",
            "no-new-privileges", "--security-opt", f"seccomp={profile}", "--memory", f"{memory_mb}m",
            "--memory-swap", f"{memory_mb}m", "--pids-limit", str(pids), "--ipc", "private",
            *_network(manifest, role, sid), *_mounts(manifest, role, layout, sid),
            "--workdir", start_dir(manifest, layout, role, manifest.workspace in manifest.app.files_read)]
    for name, value in _env(manifest, role, layout, sid).items():
        argv += ["--env", f"{name}={value}"]
    command = command_of(manifest, role)
    return [*argv, "--entrypoint", command[0], image_of(manifest, role), *command[1:]]


def commands(manifest: Manifest, given: RenderInput) -> list[list[str]]:
    """Every docker command of the session in order: networks, volumes, doors, the app, its end, the teardown."""
    sid, name = given.sid, prefix(manifest, given.sid)
    internal = _internal_networks(manifest, sid)
    doors = [door for door in DOOR_ORDER if door in manifest.roles]
    setup = [["docker", "network", "create", "--internal", network] for network in internal]
    if any(_route_out(manifest, door) for door in doors):
        setup.append(["docker", "network", "create", f"{name}-egress"])
    setup += [["docker", "volume", "create", f"{name}-door-{door}"] for door in doors]
    runs = [run_argv(manifest, role, sid, given) for role in (*doors, "app")]
    joins = [["docker", "network", "connect", network, f"{name}-{member}"]
             for network, members in internal.items() for member in members[1:]]
    # The doors join the app's network before the app starts: the order the launcher keeps (doors, then app).
    wait = ["timeout", "--signal=KILL", str(manifest.session.ttl_s), "docker", "wait", f"{name}-app"]
    teardown = [["docker", "rm", "--force", *(f"{name}-{role}" for role in ("app", *reversed(doors)))]]
    teardown += [["docker", "network", "rm", network] for network in
                 (*internal, *([f"{name}-egress"] if any(_route_out(manifest, door) for door in doors) else []))]
    teardown += [["docker", "volume", "rm", *(f"{name}-door-{door}" for door in doors)]] if doors else []
    return [*setup, *runs[:-1], *joins, runs[-1], wait, *teardown]


def teardown_count(manifest: Manifest) -> int:
    """How many of `commands`' last commands are the teardown."""
    doors = [door for door in DOOR_ORDER if door in manifest.roles]
    networks = len(_internal_networks(manifest, "0" * 8)) + (1 if any(_route_out(manifest, d) for d in doors) else 0)
    return 1 + networks + (1 if doors else 0)


def render(manifest: Manifest, plan: Plan, given: RenderInput) -> Rendering:
    """The Docker form: the script, a seccomp profile per component beside it, and the matrix."""
    every = commands(manifest, given)
    cut = len(every) - teardown_count(manifest)
    # The teardown runs however the script ends (a command that fails, the TTL, a signal): nothing left behind.
    teardown = [f"  {shlex.join(argv)} >/dev/null 2>&1 || true" for argv in every[cut:]]
    body = [shlex.join(argv) for argv in every[:cut]]
    body[-1] += " || true"  # the wait: the TTL ends it, and the teardown follows either way
    script = "\n".join(["#!/bin/sh", f"# sharness-launch render --to {TARGET}: {manifest.sha256}", "set -eu",
                        'cd "$(dirname "$0")"', "teardown() {", *teardown, "}", "trap teardown EXIT",
                        *body]) + "\n"
    modes = {role: filter_mode(manifest, role, given.python, own_listener=True) for role in manifest.roles}
    profiles = () if given.seccomp_default else tuple(
        (f"seccomp/{role}.json", profile_text(mode)) for role, mode in modes.items())
    return Rendering(
        target=TARGET, files=((SCRIPT_FILE, script), *profiles), matrix=matrix_of(manifest, plan, HOLDS),
        not_covered=(
            "the doors' container entrypoint (a door that makes its own listener and reads an identity it is "
            "handed) is not built: this version's doors start from the launcher's fd contract",
            "identities: nothing here mints the session CA's SVIDs for the containers",
            "checked by the docker client offline (flags, values, the seccomp files), not run against a daemon",
            "the fs door runs as its own uid, not the workspace owner's: the workspace must be writable by it",
        ),
    )
