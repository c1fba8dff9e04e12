"""How a Kubernetes session Pod holds each row (launcher/render/kubernetes.py renders it). Pure.

The one fact that shapes most lines: the containers of a Pod share one network namespace and one IPC namespace,
and a NetworkPolicy selects Pods, not containers, and knows addresses, not host names. So what the launcher holds
with a namespace per component is held here only where the launcher's own seccomp filter takes internet sockets
away altogether (fs, keys, the model door with the twin), and unheld elsewhere, saying why.
"""

from __future__ import annotations

from launcher.manifest import Manifest
from launcher.policy.plan import PlanRow
from launcher.render.matrix import Hold, HoldTable
from launcher.render.seccomp_profile import filter_mode
from pki.vocabulary import BOUNDARY, EXPECTATION, SETTING, UNHELD

SHARED_NETNS = "the Pod's containers share one network namespace"
_NO_INET = "the kernel (seccomp: its filter refuses every internet socket, so the Pod's shared network namespace " \
           "gives it nothing)"


def _no_inet(manifest: Manifest, role: str) -> bool:
    return role in manifest.roles and filter_mode(manifest, role, (), own_listener=True).deny_inet


def _netns(manifest: Manifest, row: PlanRow) -> Hold:
    if _no_inet(manifest, row.component):
        return Hold(BOUNDARY, _NO_INET)
    return Hold(UNHELD, f"{SHARED_NETNS}: it reaches every loopback listener of the Pod, and any public address on "
                "the ports the NetworkPolicy lets the net and model doors dial")


def _tcp(manifest: Manifest, row: PlanRow) -> Hold:
    if _no_inet(manifest, row.component):
        return Hold(BOUNDARY, _NO_INET)
    return Hold(UNHELD, f"no Landlock in a container: it may bind on the Pod's loopback and connect to any port "
                f"there and to any the NetworkPolicy lets out ({SHARED_NETNS})")


def _direct(manifest: Manifest) -> tuple[str, ...]:
    """The components that can dial out past the net door: internet sockets in the Pod's one namespace."""
    return tuple(role for role in ("app", "shell") if role in manifest.roles and not _no_inet(manifest, role))


def _past_the_door(manifest: Manifest, row: PlanRow) -> Hold:
    direct = _direct(manifest)
    if not direct:
        return Hold(BOUNDARY, "the net door (its own container and uid): no other component has internet sockets")
    return Hold(UNHELD, f"{SHARED_NETNS} and a NetworkPolicy knows no host names: {', '.join(direct)} can dial any "
                "public address on the allowed ports itself, past the net door (a Landlock wrapper as its "
                "entrypoint, not built, would hold it)")


def _shell_egress(manifest: Manifest, row: PlanRow) -> Hold:
    if _no_inet(manifest, "shell"):
        return Hold(BOUNDARY, _NO_INET)
    return Hold(UNHELD, f"{SHARED_NETNS}: commands can dial what the Pod's NetworkPolicy lets out, past the net door")


def _addresses(manifest: Manifest, row: PlanRow) -> Hold:
    if row.kind == EXPECTATION:  # an upstream proxy that resolves: no render holds more than the launcher does
        return Hold(EXPECTATION, row.held_by)
    return Hold(BOUNDARY, "the net door (its own container and uid), and the NetworkPolicy, which lets out no "
                "private, loopback, link-local or CGNAT address but the internal ranges listed")


_FS_DOOR = Hold(BOUNDARY, "the fs door (its own container and uid; the workspace volume is writable in its container "
                "alone; openat2 RESOLVE_BENEATH)")
_MODEL_DOOR = Hold(BOUNDARY, "the model door (its own container and uid)")
_SECCOMP = "the kernel (seccomp: the launcher's filter for its role as a Localhost profile, seccomp/<role>.json " \
           "installed under each node's kubelet seccomp root"
_OWN_LISTENER = ", less what a door needs to make its own listener: socket(), listen(), and TCP for the net and " \
                "model doors' listeners"

HOLDS: HoldTable = {
    "session.audit": Hold(UNHELD, "no launcher writes a session audit log here: the doors' lines are container logs, "
                          "which the kubelet rotates at containerLogMaxSize (old lines lost, the Pod not ended)"),
    "session.ttl": Hold(BOUNDARY, "the kubelet (activeDeadlineSeconds: the Pod is ended at the TTL)"),
    "uid": Hold(BOUNDARY, "the kernel (its own runAsUser and runAsGroup, set by the container runtime; "
                "runAsNonRoot)"),
    "fs:uid": Hold(BOUNDARY, "the kernel (its own runAsUser; the workspace volume's group is the Pod's fsGroup, its "
                   "gid)"),
    "netns": _netns,
    "ipc": Hold(UNHELD, "the Pod's containers share one IPC namespace"),
    "root": Hold(BOUNDARY, "the container runtime (its own mount namespace: its image, read-only, and its volumes "
                 "only; the image must hold no more than the plan's paths)"),
    "app:pidns": Hold(BOUNDARY, "the container runtime (shareProcessNamespace: false, its own pid namespace)"),
    "landlock.fs": Hold(UNHELD, "no Landlock in a container: its image and volumes bound what exists, but an "
                        "emptyDir it writes is executable"),
    "landlock.tcp": _tcp,
    "landlock.scope": Hold(UNHELD, f"abstract Unix sockets are per network namespace, and {SHARED_NETNS} (signals "
                           "are held: each container has its own pid namespace)"),
    "app:seccomp": Hold(BOUNDARY, f"{_SECCOMP})"),
    "seccomp": Hold(BOUNDARY, f"{_SECCOMP}{_OWN_LISTENER})"),
    "no_new_privs": Hold(BOUNDARY, "the kernel (allowPrivilegeEscalation: false sets no_new_privs)"),
    "memory": Hold(BOUNDARY, "the kernel (resources.limits.memory: the container's memory cgroup)"),
    "pids": Hold(UNHELD, "Kubernetes limits pids per Pod only, in the kubelet's configuration (podPidsLimit), never "
                 "per container"),
    "scratch": Hold(UNHELD, "an emptyDir (medium Memory) with sizeLimit: past it the kubelet evicts the Pod (no "
                    "ENOSPC); no inode limit, no noexec"),
    "edges": Hold(BOUNDARY, "the kernel (each door's socket volume is mounted only in its edges' clients) and the "
                  "called door (mTLS edge check, SVIDs from SPIRE)"),
    "app:proxy_env": Hold(SETTING, "the app's environment (HTTP(S)_PROXY to the net door on the Pod's loopback)"),
    "app:env": Hold(SETTING, "the container's environment (the manifest's variables in the Pod spec; the launcher "
                    "refused a secret-shaped one at load)"),
    "app:home_seed": Hold(UNHELD, "nothing copies the seed into the Pod: the scratch emptyDir starts empty"),
    "app:children": Hold(BOUNDARY, "the kernel (uid, namespaces, seccomp, no_new_privs and cgroups pass across fork "
                         "and execve)"),
    "app:workspace.mount": Hold(UNHELD, "no FUSE mount in a container here (it needs /dev/fuse and a mount the "
                                "runtime makes): the app reaches the workspace through the fs door's API only"),
    "app:workspace.unmount": Hold(UNHELD, "no FUSE mount of the workspace in a container"),
    **{f"fs.{key}": _FS_DOOR for key in ("within_root", "read_only", "append_only", "hidden", "exec",
                                         "refuse_secrets", "no_symlinks", "max_file_bytes", "max_total_bytes",
                                         "max_files", "max_concurrent_uploads")},
    "net.allow": _past_the_door,
    "net.ip_literals": _past_the_door,
    "net.internal": _past_the_door,
    "net.wildcard_names": Hold(BOUNDARY, "the net door (its own container and uid), for every name resolved through "
                               "it"),
    "net.upstream_proxy": Hold(BOUNDARY, "the net door (its own check; no Landlock TCP in a container to hold it to "
                               "the proxy's port)"),
    "net.inject": Hold(UNHELD, "nothing mints the egress CA in a container render: the bound credential is not "
                       "injected"),
    "net.sni": Hold(BOUNDARY, "the net door (its own container and uid), for every tunnel through it"),
    "net.addresses": _addresses,
    "keys.secrets": Hold(BOUNDARY, "the keys door (its own container and uid); each Secret is mounted in the keys "
                         "container alone"),
    "shell.workspace": Hold(BOUNDARY, "the kernel (the workspace volume is read-only in the shell container, or "
                            "absent)"),
    "shell.egress": _shell_egress,
    "shell.commands": Hold(UNHELD, "a container has no cgroup delegation: the shell door cannot give each command a "
                           "cgroup of its own"),
    "shell.max_live": Hold(BOUNDARY, "the shell door (its own container and uid)"),
    "model.upstream": Hold(BOUNDARY, "the model door (its own check); the NetworkPolicy lets out the upstream's port "
                           "only (the twin: no internet socket at all)"),
    "model.secret": _MODEL_DOOR,
    "model.models": _MODEL_DOOR,
    "model.budget_microusd": _MODEL_DOOR,
    "model.listener": Hold(UNHELD, f"{SHARED_NETNS}: every container reaches the listener on the Pod's loopback"),
}

_RUNTIME_DEFAULT = Hold(UNHELD, "RuntimeDefault is the runtime's own list, not the launcher's: it allows what the "
                        "launcher refuses (internet sockets where a component needs none, socket families, listen(), "
                        "TCP Fast Open)")
# With --seccomp-default: the lines that lean on the launcher's filter no longer hold.
RUNTIME_DEFAULT_HOLDS: HoldTable = {
    "seccomp": _RUNTIME_DEFAULT, "app:seccomp": _RUNTIME_DEFAULT,
    "netns": Hold(UNHELD, f"{SHARED_NETNS}, and RuntimeDefault lets every component make internet sockets"),
    "landlock.tcp": Hold(UNHELD, f"no Landlock in a container, and {SHARED_NETNS}"),
    "shell.egress": Hold(UNHELD, f"{SHARED_NETNS}: commands can dial what the Pod's NetworkPolicy lets out"),
    "net.allow": Hold(UNHELD, f"{SHARED_NETNS}: any component can dial past the net door"),
    "net.ip_literals": Hold(UNHELD, f"{SHARED_NETNS}: any component can dial past the net door"),
}
