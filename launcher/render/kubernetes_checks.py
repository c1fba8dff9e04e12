"""What schema validation misses in a Kubernetes render, checked as the API server would. Pure.

kubernetes-validate (the schemas, strict) lets through a name `Bad_Name`, a label value with spaces, two
containers of one name, port 70000, `policyTypes: [Sideways]`, `cidr: 999.1.2.3/77` and a Pod Pod Security
"restricted" would refuse (docs/render.md). These checks mirror apimachinery's validation for what a render
writes; each problem is a sentence naming the document and the field.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from typing import Any

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # DNS-1123 label
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
_MEMORY = re.compile(r"[0-9]+(Ki|Mi|Gi|Ti|k|M|G|T)?")
# Pod Security "restricted" (pod-security-standards): the volume types it admits, the capability it lets add.
RESTRICTED_VOLUMES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                                "projected", "secret"})
RESTRICTED_ADD = frozenset({"NET_BIND_SERVICE"})
SECCOMP_TYPES = frozenset({"RuntimeDefault", "Localhost"})
POLICY_TYPES = frozenset({"Ingress", "Egress"})


def _where(document: dict[str, Any]) -> str:
    return f"{document.get('kind', '?')}/{document.get('metadata', {}).get('name', '?')}"


def dns_label_problem(text: object) -> str | None:
    """Why `text` is not a DNS-1123 label (container names, ports' names), or None."""
    if not isinstance(text, str) or len(text) > 63 or not _LABEL.fullmatch(text):
        return f"{text!r} is not a DNS-1123 label (a-z 0-9 '-', at most 63, alphanumeric at both ends)"
    return None


def subdomain_problem(text: object) -> str | None:
    """Why `text` is not a DNS-1123 subdomain (object names), or None."""
    if not isinstance(text, str) or len(text) > 253 or not _SUBDOMAIN.fullmatch(text):
        return f"{text!r} is not a DNS-1123 subdomain (a-z 0-9 '-' '.', at most 253)"
    return None


def qualified_name_problem(key: object) -> str | None:
    """Why `key` is not a label or annotation key ([prefix/]name), or None."""
    if not isinstance(key, str):
        return f"{key!r} is not a string"
    prefix, slash, name = key.rpartition("/")
    if slash and subdomain_problem(prefix):
        return f"key {key!r}: its prefix is not a DNS-1123 subdomain"
    if len(name) > 63 or not _QUALIFIED.fullmatch(name):
        return f"key {key!r}: its name is not 1-63 of A-Z a-z 0-9 '-' '_' '.', alphanumeric at both ends"
    return None


def label_value_problem(value: object) -> str | None:
    """Why `value` is not a label value (empty, or a qualified name's form), or None."""
    if not isinstance(value, str) or (value and (len(value) > 63 or not _QUALIFIED.fullmatch(value))):
        return f"label value {value!r} is not 0-63 of A-Z a-z 0-9 '-' '_' '.', alphanumeric at both ends"
    return None


def port_problem(port: object) -> str | None:
    """Why `port` is not a TCP/UDP port number, or None."""
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        return f"port {port!r} is not in 1-65535"
    return None


def _metadata(document: dict[str, Any]) -> Iterator[str]:
    meta = document.get("metadata", {})
    if problem := subdomain_problem(meta.get("name")):
        yield f"{_where(document)}: metadata.name {problem}"
    if "namespace" in meta and (problem := dns_label_problem(meta["namespace"])):
        yield f"{_where(document)}: metadata.namespace {problem}"
    for key, value in meta.get("labels", {}).items():
        for problem in (qualified_name_problem(key), label_value_problem(value)):
            if problem:
                yield f"{_where(document)}: label {problem}"
    for key in meta.get("annotations", {}):
        if problem := qualified_name_problem(key):
            yield f"{_where(document)}: annotation {problem}"


def _unique(items: list[str], what: str, where: str) -> Iterator[str]:
    seen: set[str] = set()
    for item in items:
        if item in seen:
            yield f"{where}: two {what} named {item!r}"
        seen.add(item)


def _restricted_container(container: dict[str, Any], pod_context: dict[str, Any], where: str) -> Iterator[str]:
    """Pod Security "restricted" for one container (its securityContext, or the Pod's where it inherits)."""
    context = container.get("securityContext", {})
    if context.get("allowPrivilegeEscalation") is not False:
        yield f"{where}: allowPrivilegeEscalation must be false (Pod Security restricted)"
    if context.get("privileged"):
        yield f"{where}: privileged (Pod Security restricted)"
    capabilities = context.get("capabilities", {})
    if "ALL" not in capabilities.get("drop", []):
        yield f"{where}: capabilities.drop must hold ALL (Pod Security restricted)"
    if set(capabilities.get("add", [])) - RESTRICTED_ADD:
        yield f"{where}: capabilities.add beyond NET_BIND_SERVICE (Pod Security restricted)"
    if not context.get("runAsNonRoot", pod_context.get("runAsNonRoot")):
        yield f"{where}: runAsNonRoot must be true (Pod Security restricted)"
    if context.get("runAsUser", pod_context.get("runAsUser")) == 0:
        yield f"{where}: runAsUser 0 (Pod Security restricted)"
    seccomp = context.get("seccompProfile", pod_context.get("seccompProfile", {}))
    if seccomp.get("type") not in SECCOMP_TYPES:
        yield f"{where}: seccompProfile.type must be RuntimeDefault or Localhost (Pod Security restricted)"
    profile = seccomp.get("localhostProfile")
    if seccomp.get("type") == "Localhost" and (not profile or profile.startswith("/") or ".." in profile.split("/")):
        yield f"{where}: localhostProfile {profile!r} must be a relative path under the kubelet's seccomp root"
    for port in container.get("ports", []):
        if "hostPort" in port:
            yield f"{where}: hostPort (Pod Security restricted)"


def _container(container: dict[str, Any], volumes: set[str], pod_context: dict[str, Any], pod: str) -> Iterator[str]:
    where = f"{pod} container {container.get('name')!r}"
    if problem := dns_label_problem(container.get("name")):
        yield f"{where}: name {problem}"
    yield from _restricted_container(container, pod_context, where)
    mounts = container.get("volumeMounts", [])
    yield from _unique([mount["mountPath"] for mount in mounts], "mounts at one path", where)
    for mount in mounts:
        if mount["name"] not in volumes:
            yield f"{where}: volumeMount names no volume: {mount['name']!r}"
    for port in container.get("ports", []):
        if problem := port_problem(port.get("containerPort")):
            yield f"{where}: containerPort {problem}"
    for entry in container.get("env", []):
        if not _ENV_NAME.fullmatch(entry.get("name", "")):
            yield f"{where}: env name {entry.get('name')!r} is not a C-like identifier"
    for kind, quantity in container.get("resources", {}).get("limits", {}).items():
        if kind == "memory" and not _MEMORY.fullmatch(str(quantity)):
            yield f"{where}: memory limit {quantity!r} is not a quantity"


def _pod(document: dict[str, Any]) -> Iterator[str]:
    spec, where = document["spec"], _where(document)
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(flag):
            yield f"{where}: {flag} (Pod Security restricted)"
    volumes = spec.get("volumes", [])
    yield from _unique([volume["name"] for volume in volumes], "volumes", where)
    for volume in volumes:
        if problem := dns_label_problem(volume["name"]):
            yield f"{where}: volume name {problem}"
        if kinds := set(volume) - {"name"} - RESTRICTED_VOLUMES:
            yield f"{where}: volume {volume['name']!r} of type {sorted(kinds)} (Pod Security restricted)"
    containers = [*spec.get("initContainers", []), *spec.get("containers", [])]
    yield from _unique([container["name"] for container in containers], "containers", where)
    names = {volume["name"] for volume in volumes}
    for container in containers:
        yield from _container(container, names, spec.get("securityContext", {}), where)


def _peer_problems(peer: dict[str, Any], where: str) -> Iterator[str]:
    block = peer.get("ipBlock")
    if block is None:
        return
    try:
        cidr = ipaddress.ip_network(block["cidr"])
    except ValueError as exc:
        yield f"{where}: cidr {block['cidr']!r}: {exc}"
        return
    for text in block.get("except", []):
        try:
            excluded = ipaddress.ip_network(text)
        except ValueError as exc:
            yield f"{where}: except {text!r}: {exc}"
            continue
        if excluded.version != cidr.version or not excluded.subnet_of(cidr) or excluded == cidr:  # type: ignore[arg-type]
            yield f"{where}: except {text} is not strictly inside {cidr}"


def _network_policy(document: dict[str, Any]) -> Iterator[str]:
    spec, where = document["spec"], _where(document)
    if bad := set(spec.get("policyTypes", [])) - POLICY_TYPES:
        yield f"{where}: policyTypes {sorted(bad)} are neither Ingress nor Egress"
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for rule in spec.get(direction, []):
            for peer in rule.get(peers, []):
                yield from _peer_problems(peer, where)
            for port in rule.get("ports", []):
                if problem := port_problem(port.get("port")):
                    yield f"{where}: {problem}"
                if "endPort" in port and (port_problem(port["endPort"]) or port["endPort"] < port["port"]):
                    yield f"{where}: endPort {port['endPort']!r} is below port {port['port']!r} or out of range"
                if port.get("protocol", "TCP") not in ("TCP", "UDP", "SCTP"):
                    yield f"{where}: protocol {port['protocol']!r}"


def problems(documents: list[dict[str, Any]]) -> list[str]:
    """Every problem the API server (with Pod Security "restricted") would find in `documents`."""
    found: list[str] = []
    for document in documents:
        found += _metadata(document)
        if document.get("kind") == "Pod":
            found += _pod(document)
        elif document.get("kind") == "NetworkPolicy":
            found += _network_policy(document)
    return found
