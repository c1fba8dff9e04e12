"""What a Kubernetes session Pod stands in: NetworkPolicies, SPIRE identities, the admission rule. Pure.

- NetworkPolicies: deny everything in and out by default; let out only the net door's and the model door's
  ports (their hosts' ports; NetworkPolicy knows no host names, so every public address, less the ranges the
  net door refuses), the model's internal ranges, and DNS. The edges are inside the Pod (loopback and socket
  volumes), where no NetworkPolicy reaches: the socket volumes and the doors' mTLS check hold them.
- A ClusterSPIFFEID per role: the session CA's SPIFFE ID (pki/spiffe.py), the session id read from the Pod's
  label, one container of one Pod in the session's namespace each.
- A ValidatingAdmissionPolicy (CEL) and its binding: a Pod labelled with this session must carry this manifest's
  hash and the confinement this render gave it, or the API server refuses it.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from doors.net import IPV4_REFUSED, IPV6_REFUSED
from launcher.manifest import Manifest
from launcher.policy.confine_plan import DNS_PORT, egress_ports
from launcher.render.kubernetes_names import LABEL_SESSION, NAMESPACE, pod_name
from pki.spiffe import SessionIdentity

SID_TEMPLATE = f'{{{{ index .PodMeta.Labels "{LABEL_SESSION}" }}}}'
NOT_COVERED = (
    "the doors' container entrypoint: this version's doors start from the launcher's fd contract; one that starts "
    "from SHARNESS_DOOR_LISTEN and the SPIFFE Workload API (SPIFFE_ENDPOINT_SOCKET) is not built",
    "the images: the app's image must hold only what app.files lists, the doors' image this project",
    "the containers start together: the app does not wait for its doors, and a door that dies leaves the app "
    "running (its calls to that door fail) where the launcher fails the session closed",
    "rendered and validated offline (schemas, own checks, CEL evaluated against the Pod): not run on a cluster",
)


def _selector(sid: str) -> dict[str, Any]:
    return {"matchLabels": {LABEL_SESSION: sid}}


def _public(networks: tuple[tuple[Any, str], ...], everything: str) -> dict[str, Any]:
    refused = [network for network, _ in networks if network.prefixlen > 0]
    collapsed = ipaddress.collapse_addresses(refused)
    return {"ipBlock": {"cidr": everything, "except": [str(network) for network in collapsed]}}


def egress_ports_of(manifest: Manifest) -> tuple[int, ...]:
    """The TCP ports the Pod may dial out: the net door's hosts' and the model door's upstream's."""
    ports: set[int] = set()
    for role in ("net", "model"):
        if role in manifest.roles:
            ports.update(egress_ports(manifest.door_rows(role), role))
    return tuple(sorted(ports))


def network_policies(manifest: Manifest, sid: str) -> list[dict[str, Any]]:
    """Deny by default; then the egress the net and model doors need, and DNS for them."""
    name = pod_name(manifest, sid)
    meta = {"namespace": NAMESPACE, "labels": {LABEL_SESSION: sid}}
    policies: list[dict[str, Any]] = [{
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": f"{name}-deny", **meta},
        "spec": {"podSelector": _selector(sid), "policyTypes": ["Ingress", "Egress"]},
    }]
    ports = egress_ports_of(manifest)
    if not ports:
        return policies
    internal = manifest.door_rows("model").get("internal_ranges", []) if "model" in manifest.roles else []
    net_internal = manifest.door_rows("net").get("internal", {}) if "net" in manifest.roles else {}
    internal = sorted({*internal, *(cidr for entries in net_internal.values() for ranges in entries.values()
                                    for cidr in ranges)})
    to = [_public(IPV4_REFUSED, "0.0.0.0/0"), _public(IPV6_REFUSED, "::/0"),
          *({"ipBlock": {"cidr": cidr}} for cidr in internal)]
    dns = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
           "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}
    policies.append({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": f"{name}-egress", **meta},
        "spec": {"podSelector": _selector(sid), "policyTypes": ["Egress"], "egress": [
            {"to": to, "ports": [{"protocol": "TCP", "port": port} for port in ports]},
            {"to": [dns], "ports": [{"protocol": "UDP", "port": DNS_PORT}, {"protocol": "TCP", "port": DNS_PORT}]},
        ]},
    })
    return policies


def spiffe_id_template(manifest: Manifest, sid: str, role: str) -> str:
    """The session CA's SPIFFE ID for `role`, its session id read from the Pod's label by the SPIRE controller."""
    uri = SessionIdentity(manifest.session.trust_domain, sid, role).uri()
    template = uri.replace(f"/session/{sid}/", f"/session/{SID_TEMPLATE}/")
    if template == uri:
        raise ValueError(f"the SPIFFE ID {uri} no longer holds /session/<sid>/: update spiffe_id_template")
    return template


def cluster_spiffe_ids(manifest: Manifest, sid: str) -> list[dict[str, Any]]:
    """One ClusterSPIFFEID per role: one container name, in Pods of this session, in the session's namespace."""
    return [{
        "apiVersion": "spire.spiffe.io/v1alpha1", "kind": "ClusterSPIFFEID",
        "metadata": {"name": f"{pod_name(manifest, sid)}-{role}", "labels": {LABEL_SESSION: sid}},
        "spec": {
            "spiffeIDTemplate": spiffe_id_template(manifest, sid, role),
            "podSelector": _selector(sid),
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}},
            "workloadSelectorTemplates": [f"k8s:container-name:{role}"],
            "ttl": f"{manifest.session.ttl_s}s",
        },
    } for role in manifest.roles]


def documents(manifest: Manifest, pod: dict[str, Any], sid: str) -> list[dict[str, Any]]:
    """Everything but the Pod, in the order to apply it: admission rule first, then identities and policies."""
    from launcher.render.kubernetes_admission import admission_documents

    return [*admission_documents(manifest, pod, sid), *network_policies(manifest, sid),
            *cluster_spiffe_ids(manifest, sid)]

