"""The manifest for Kubernetes: one Pod per session, one container per component. Pure.

Each container runs as its own uid, non-root, with a read-only root, no privilege escalation, no capability and
the launcher's own seccomp filter for its role as a Localhost profile (written beside the YAML) or RuntimeDefault.
The workspace is a volume mounted read-write in the fs container alone. Each door listens on a Unix socket in a
volume of its own, mounted only in its container and in the containers of its edges' clients, so the kernel still
keeps a component off a door it has no edge to; the proxy and the model door's plain-HTTP listener are on the
Pod's loopback. The NetworkPolicies, identities and admission rule are in kubernetes_policy.py; the matrix in
kubernetes_holds.py.
"""

from __future__ import annotations

import json
from typing import Any

from launcher.manifest import Manifest
from launcher.policy.environment import app_env, door_env
from launcher.policy.layout import PROXY_PORT, SessionPaths
from launcher.policy.plan import Plan
from launcher.render import kubernetes_policy
from launcher.render.containers import IMAGE_PATH, command_of, image_of, socket_dir, socket_path, uid_of
from launcher.render.kubernetes_holds import HOLDS, RUNTIME_DEFAULT_HOLDS
from launcher.render.kubernetes_names import (
    ANNOTATION_HASH,
    LABEL_NAME,
    LABEL_SESSION,
    MIB,
    NAMESPACE,
    SPIFFE_MOUNT,
    pod_name,
    profile_path,
)
from launcher.render.matrix import matrix_of
from launcher.render.rendering import Rendering, RenderInput, start_dir
from launcher.render.seccomp_profile import filter_mode, profile_text

TARGET = "kubernetes"
DOCUMENTS_FILE = "session.yaml"


def _security(manifest: Manifest, role: str, given: RenderInput) -> dict[str, Any]:
    seccomp: dict[str, Any] = {"type": "RuntimeDefault"} if given.seccomp_default else {
        "type": "Localhost", "localhostProfile": profile_path(manifest, role)}
    return {"runAsUser": uid_of(role), "runAsGroup": uid_of(role), "runAsNonRoot": True,
            "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False, "privileged": False,
            "capabilities": {"drop": ["ALL"]}, "seccompProfile": seccomp}


def _mounts(manifest: Manifest, role: str, layout: SessionPaths) -> list[dict[str, Any]]:
    rows = manifest.door_rows(role)
    mounts: list[dict[str, Any]] = []
    if role == "fs":
        mounts.append({"name": "workspace", "mountPath": manifest.workspace})
    elif (role == "app" and manifest.workspace in manifest.app.files_read) or \
            (role == "shell" and rows.get("workspace") == "read"):
        mounts.append({"name": "workspace", "mountPath": manifest.workspace, "readOnly": True})
    if role != "app":
        mounts.append({"name": f"door-{role}", "mountPath": socket_dir(layout, role)})
    mounts += [{"name": f"door-{server}", "mountPath": socket_dir(layout, server), "readOnly": True}
               for server in manifest.edges_out(role)]
    if role in ("app", "shell"):
        mounts.append({"name": f"scratch-{role}", "mountPath": layout.private_dir(role)})
    if role == "keys":
        mounts += [{"name": f"secret-{name}", "mountPath": secret["from"], "subPath": "value", "readOnly": True}
                   for name, secret in sorted(rows.get("secrets", {}).items())]
    mounts.append({"name": "spiffe", "mountPath": SPIFFE_MOUNT, "readOnly": True})
    return mounts


def _env(manifest: Manifest, role: str, layout: SessionPaths, given: RenderInput) -> list[dict[str, str]]:
    if role == "app":
        env = app_env(manifest, layout, given.python_prefix)
        env["PATH"] = IMAGE_PATH
        for name in ("SHARNESS_SVID", "SHARNESS_BUNDLE"):  # from SPIRE's Workload API instead
            env.pop(name, None)
        env.update({f"SHARNESS_DOOR_{server.upper()}": socket_path(layout, server)
                    for server in manifest.edges_out(role)})
    else:
        env = {**door_env(), "SHARNESS_DOOR_ROLE": role, "SHARNESS_DOOR_LISTEN": socket_path(layout, role),
               "SHARNESS_DOOR_ROWS": json.dumps(manifest.door_rows(role), sort_keys=True, separators=(",", ":"))}
    env["SPIFFE_ENDPOINT_SOCKET"] = f"unix://{SPIFFE_MOUNT}/socket"
    return [{"name": name, "value": value} for name, value in env.items()]


def _container(manifest: Manifest, role: str, layout: SessionPaths, given: RenderInput) -> dict[str, Any]:
    memory_mb, _ = manifest.process_limits(role)
    container: dict[str, Any] = {
        "name": role,
        "image": image_of(manifest, role),
        "command": command_of(manifest, role),
        "env": _env(manifest, role, layout, given),
        "securityContext": _security(manifest, role, given),
        "resources": {"limits": {"memory": f"{memory_mb}{MIB}"}, "requests": {"memory": f"{memory_mb}{MIB}"}},
        "volumeMounts": _mounts(manifest, role, layout),
        "workingDir": start_dir(manifest, layout, role, manifest.workspace in manifest.app.files_read),
    }
    if role == "net":
        container["ports"] = [{"name": "proxy", "containerPort": PROXY_PORT, "protocol": "TCP"}]
    return container


def _volumes(manifest: Manifest, sid: str) -> list[dict[str, Any]]:
    name = pod_name(manifest, sid)
    volumes: list[dict[str, Any]] = []
    shell_reads = "shell" in manifest.roles and manifest.door_rows("shell").get("workspace") == "read"
    if "fs" in manifest.roles or manifest.workspace in manifest.app.files_read or shell_reads:
        volumes.append({"name": "workspace", "persistentVolumeClaim": {"claimName": f"{name}-workspace"}})
    volumes += [{"name": f"door-{door}", "emptyDir": {}} for door in manifest.roles if door != "app"]
    for role in ("app", "shell"):
        if role in manifest.roles:
            scratch_mb, _ = manifest.scratch_limits(role)
            volumes.append({"name": f"scratch-{role}", "emptyDir": {"medium": "Memory",
                                                                     "sizeLimit": f"{scratch_mb}{MIB}"}})
    for secret in sorted(manifest.door_rows("keys").get("secrets", {})):
        volumes.append({"name": f"secret-{secret}", "secret": {"secretName": f"{name}-{secret}"}})
    volumes.append({"name": "spiffe", "csi": {"driver": "csi.spiffe.io", "readOnly": True}})
    return volumes


def pod(manifest: Manifest, given: RenderInput) -> dict[str, Any]:
    """The session's Pod: every component a container, the manifest's hash in an annotation."""
    layout = SessionPaths(given.sid)
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod_name(manifest, given.sid), "namespace": NAMESPACE,
                     "labels": {LABEL_SESSION: given.sid, LABEL_NAME: manifest.session.name},
                     "annotations": {ANNOTATION_HASH: manifest.sha256}},
        "spec": {
            "restartPolicy": "Never",
            "activeDeadlineSeconds": manifest.session.ttl_s,
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "shareProcessNamespace": False,
            "hostNetwork": False, "hostPID": False, "hostIPC": False,
            "securityContext": {"runAsNonRoot": True, "fsGroup": uid_of("fs"),
                                "fsGroupChangePolicy": "OnRootMismatch",
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [_container(manifest, role, layout, given) for role in manifest.roles],
            "volumes": _volumes(manifest, given.sid),
        },
    }


def render(manifest: Manifest, plan: Plan, given: RenderInput) -> Rendering:
    """The Kubernetes form: the Pod, its NetworkPolicies, ClusterSPIFFEIDs and admission rule in one YAML
    stream, a seccomp profile per component beside it, and the matrix."""
    from launcher.render.yaml_text import dump_all

    the_pod = pod(manifest, given)
    documents = [the_pod, *kubernetes_policy.documents(manifest, the_pod, given.sid)]
    modes = {role: filter_mode(manifest, role, given.python, own_listener=True) for role in manifest.roles}
    profiles = () if given.seccomp_default else tuple(
        (f"seccomp/{role}.json", profile_text(mode)) for role, mode in modes.items())
    hold_table = HOLDS if not given.seccomp_default else {**HOLDS, **RUNTIME_DEFAULT_HOLDS}
    return Rendering(
        target=TARGET, files=((DOCUMENTS_FILE, dump_all(documents)), *profiles),
        matrix=matrix_of(manifest, plan, hold_table), not_covered=kubernetes_policy.NOT_COVERED,
    )
