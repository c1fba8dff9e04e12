"""The names a Kubernetes render gives things: labels, uids, objects, paths. Pure."""

from __future__ import annotations

from launcher.manifest import Manifest

NAMESPACE = "sharness"
LABEL_SESSION = "sharness.dev/session"  # the session id: what the NetworkPolicies and ClusterSPIFFEIDs select
LABEL_NAME = "sharness.dev/name"  # the manifest's session name
ANNOTATION_HASH = "sharness.dev/manifest-sha256"
SPIFFE_MOUNT = "/run/spiffe"  # the SPIFFE CSI driver's Workload API socket, in every container
MIB = "Mi"


def pod_name(manifest: Manifest, sid: str) -> str:
    """The Pod's name, and the prefix of every object of the session."""
    return f"sharness-{manifest.session.name}-{sid}"


def profile_path(manifest: Manifest, role: str) -> str:
    """The Localhost profile's path under the kubelet's seccomp root, by manifest hash: one filter per hash."""
    return f"sharness/{manifest.sha256.partition(':')[2][:16]}/{role}.json"
