"""The names a Kubernetes render gives things: labels, uids, objects, paths. Pure."""

from __future__ import annotations

from launcher.manifest import Manifest
from launcher.policy.layout import SessionPaths
from pki.vocabulary import ROLES

NAMESPACE = "sharness"
LABEL_SESSION = "sharness.dev/session"  # the session id: what the NetworkPolicies and ClusterSPIFFEIDs select
LABEL_NAME = "sharness.dev/name"  # the manifest's session name
ANNOTATION_HASH = "sharness.dev/manifest-sha256"
UID_BASE = 62000  # each component runs as UID_BASE + its index in ROLES, its group the same number
SPIFFE_MOUNT = "/run/spiffe"  # the SPIFFE CSI driver's Workload API socket, in every container
DOORS_IMAGE = "sharness-launch/doors:0.1.0"  # this project, whose `python -m doors` serves every door
MIB = "Mi"


def uid_of(role: str) -> int:
    """The uid (and gid) the container of `role` runs as."""
    return UID_BASE + ROLES.index(role)


def pod_name(manifest: Manifest, sid: str) -> str:
    """The Pod's name, and the prefix of every object of the session."""
    return f"sharness-{manifest.session.name}-{sid}"


def profile_path(manifest: Manifest, role: str) -> str:
    """The Localhost profile's path under the kubelet's seccomp root, by manifest hash: one filter per hash."""
    return f"sharness/{manifest.sha256.partition(':')[2][:16]}/{role}.json"


def socket_dir(layout: SessionPaths, door: str) -> str:
    """The directory of door `door`'s socket: a volume of its own."""
    return f"{layout.doors_dir}/{door}"


def socket_path(layout: SessionPaths, door: str) -> str:
    """Where door `door` listens, in its socket volume."""
    return f"{socket_dir(layout, door)}/{door}.sock"
