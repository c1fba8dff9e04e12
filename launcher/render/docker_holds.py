"""How a Docker session holds each row (launcher/render/docker.py renders it). Pure.

Each container has its own network, IPC, pid and mount namespace, its own uid, cgroup limits and the launcher's
seccomp filter: most confinement rows hold as Boundaries. What Docker cannot give is Landlock (no per-component
file or TCP rules beyond the mounts and networks), nor the shell door's per-command cgroups.
"""

from __future__ import annotations

from launcher.manifest import Manifest
from launcher.policy.plan import PlanRow
from launcher.render.matrix import Hold, HoldTable
from pki.vocabulary import BOUNDARY, EXPECTATION, SETTING, UNHELD

_SECCOMP = "the kernel (seccomp: the launcher's filter for its role, --security-opt seccomp=seccomp/<role>.json"
_DOOR = "door (its own container and uid)"

def _addresses(manifest: Manifest, row: PlanRow) -> Hold:
    if row.kind == EXPECTATION:  # an upstream proxy that resolves: no render holds more than the launcher does
        return Hold(EXPECTATION, row.held_by)
    return Hold(BOUNDARY, f"the net {_DOOR}; its clients' networks have no other route out")


HOLDS: HoldTable = {
    "session.audit": Hold(UNHELD, "no launcher writes a session audit log here: the doors' lines go to `docker logs`, "
                          "which this rendering does not cap (the daemon's log-opts max-size rotates, and loses, "
                          "old lines)"),
    "session.ttl": Hold(BOUNDARY, "the script outside (timeout docker wait, then docker rm --force every container)"),
    "uid": Hold(BOUNDARY, "the kernel (--user: its own uid and gid)"),
    "fs:uid": Hold(BOUNDARY, "the kernel (--user: its own uid and gid; the workspace must be writable by it)"),
    "app:netns": Hold(BOUNDARY, "the kernel (its own network namespace on an internal Docker network, no route out, "
                      "holding only the net door's proxy and the model door's listener)"),
    "shell:netns": Hold(BOUNDARY, "the kernel (its own network namespace on an internal Docker network of its own)"),
    "netns": Hold(BOUNDARY, "the kernel (--network none: its own network namespace, loopback only)"),
    "ipc": Hold(BOUNDARY, "the kernel (--ipc private)"),
    "root": Hold(BOUNDARY, "the kernel (its own mount namespace: its image, --read-only, and its mounts only; the "
                 "image must hold no more than the plan's paths)"),
    "app:pidns": Hold(BOUNDARY, "the kernel (its own pid namespace, Docker's default)"),
    "landlock.fs": Hold(UNHELD, "Docker has no Landlock: everything in its image and mounts is readable and "
                        "executable, not only the plan's paths, and a volume it writes is executable"),
    "app:landlock.fs": Hold(UNHELD, "Docker has no Landlock: everything in its image and mounts is readable and "
                            "executable, not only the plan's paths (its tmpfs is noexec: what it writes is not)"),
    "landlock.tcp": Hold(UNHELD, "Docker has no Landlock: within its network it may bind and connect any port"),
    "landlock.scope": Hold(BOUNDARY, "the kernel (its own pid namespace: no other container's process to signal; its "
                           "own network namespace: abstract sockets are per namespace)"),
    "app:seccomp": Hold(BOUNDARY, f"{_SECCOMP})"),
    "seccomp": Hold(BOUNDARY, f"{_SECCOMP}, less what a door needs to make its own listener: socket(), listen(), "
                    "and TCP for the net and model doors' listeners)"),
    "no_new_privs": Hold(BOUNDARY, "the kernel (--security-opt no-new-privileges)"),
    "memory": Hold(BOUNDARY, "the kernel (--memory, swap included: its memory cgroup)"),
    "pids": Hold(BOUNDARY, "the kernel (--pids-limit: its pids cgroup)"),
    "scratch": Hold(BOUNDARY, "the kernel (--tmpfs with size, nr_inodes, noexec, nosuid, nodev)"),
    "edges": Hold(BOUNDARY, "the kernel (each door's socket volume is mounted only in its edges' clients) and the "
                  "called door (mTLS edge check)"),
    "app:proxy_env": Hold(SETTING, "the app's environment (HTTP(S)_PROXY to the net door on its internal network)"),
    "app:env": Hold(SETTING, "the container's environment (the manifest's variables as --env; the launcher "
                    "refused a secret-shaped one at load)"),
    "app:home_seed": Hold(UNHELD, "nothing copies the seed into the container: its --tmpfs starts empty"),
    "app:children": Hold(BOUNDARY, "the kernel (uid, namespaces, seccomp, no_new_privs and cgroups pass across fork "
                         "and execve)"),
    "app:workspace.mount": Hold(UNHELD, "no FUSE mount in a container here (it needs /dev/fuse and a mount the "
                                "runtime makes): the app reaches the workspace through the fs door's API only"),
    "app:workspace.unmount": Hold(UNHELD, "no FUSE mount of the workspace in a container"),
    **{f"fs.{key}": Hold(BOUNDARY, f"the fs {_DOOR}; the workspace is bound writable in its container alone")
       for key in ("within_root", "read_only", "append_only", "hidden", "exec", "refuse_secrets", "no_symlinks",
                   "max_file_bytes", "max_total_bytes", "max_files", "max_concurrent_uploads")},
    **{f"net.{key}": Hold(BOUNDARY, f"the net {_DOOR}; its clients' networks have no other route out")
       for key in ("allow", "sni", "ip_literals", "internal", "wildcard_names", "upstream_proxy")},
    "net.addresses": _addresses,
    "net.inject": Hold(UNHELD, "nothing mints the egress CA in a container render: the bound credential is not "
                       "injected"),
    "keys.secrets": Hold(BOUNDARY, f"the keys {_DOOR}; each secret is bound into its container alone"),
    "shell.workspace": Hold(BOUNDARY, "the kernel (the workspace bound read-only in the shell container, or not)"),
    "shell.egress": Hold(BOUNDARY, "the kernel (the shell's internal network: only the net door is on it)"),
    "shell.commands": Hold(UNHELD, "a container has no cgroup delegation: the shell door cannot give each command a "
                           "cgroup of its own"),
    "shell.max_live": Hold(BOUNDARY, f"the shell {_DOOR}"),
    **{f"model.{key}": Hold(BOUNDARY, f"the model {_DOOR}") for key in ("upstream", "secret", "models",
                                                                        "budget_microusd")},
    "model.listener": Hold(BOUNDARY, "the kernel (the model door listens on the client's internal network, which "
                           "holds only that client, the net door and it)"),
}
