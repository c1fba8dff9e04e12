"""The admission rule of a Kubernetes render: a ValidatingAdmissionPolicy (CEL) and its binding. Pure.

A Pod labelled with the session's id is the only kind SPIRE gives the session's identities to
(kubernetes_policy.py); this rule makes the API server refuse such a Pod unless it carries the manifest's hash and
the confinement the render gave it: the same containers, uids, images, app command, seccomp profiles, security
fields, a workspace writable by fs alone, no host namespace and no service-account token. Fields the API server
defaults are not compared, so the rule holds for the Pod as stored. tests/launcher/render evaluate every
expression against the rendered Pod (true) and against Pods each tampered one way (false).
"""

from __future__ import annotations

import json
from typing import Any

from launcher.manifest import Manifest
from launcher.render.kubernetes_names import ANNOTATION_HASH, LABEL_SESSION, NAMESPACE, pod_name


def _cel(value: Any) -> str:
    """A CEL literal: JSON's strings, lists and maps are CEL's."""
    return json.dumps(value, ensure_ascii=True)


def _by_name(pod: dict[str, Any], field: str) -> dict[str, Any]:
    containers = pod["spec"]["containers"]
    values: dict[str, Any] = {}
    for container in containers:
        value: Any = container
        for part in field.split("."):
            value = value[part]
        values[container["name"]] = value
    return values


def validations(manifest: Manifest, pod: dict[str, Any]) -> list[dict[str, str]]:
    """The CEL rules, each with the sentence the API server answers when it fails."""
    each = "object.spec.containers.all(c, "
    names = [container["name"] for container in pod["spec"]["containers"]]
    rules = [
        (f"has(object.metadata.annotations) && {_cel(ANNOTATION_HASH)} in object.metadata.annotations && "
         f"object.metadata.annotations[{_cel(ANNOTATION_HASH)}] == {_cel(manifest.sha256)}",
         f"the Pod must carry the approved manifest's hash in {ANNOTATION_HASH}"),
        (f"request.namespace == {_cel(NAMESPACE)}", f"the session's Pods run in namespace {NAMESPACE} only"),
        (f"object.spec.containers.map(c, c.name) == {_cel(names)} && "
         "(!has(object.spec.initContainers) || size(object.spec.initContainers) == 0) && "
         "(!has(object.spec.ephemeralContainers) || size(object.spec.ephemeralContainers) == 0)",
         f"the Pod's containers are exactly {', '.join(names)}"),
        (f"{each}c.image == {_cel(_by_name(pod, 'image'))}[c.name] && "
         f"c.command == {_cel(_by_name(pod, 'command'))}[c.name])",
         "each container runs the rendered image and command (the app: the manifest's argv)"),
        (f"{each}has(c.securityContext) && c.securityContext.runAsUser == "
         f"{_cel(_by_name(pod, 'securityContext.runAsUser'))}[c.name] && c.securityContext.runAsGroup == "
         f"{_cel(_by_name(pod, 'securityContext.runAsGroup'))}[c.name])",
         "each container runs as its own uid and gid"),
        (f"{each}c.securityContext.runAsNonRoot == true && c.securityContext.readOnlyRootFilesystem == true && "
         "c.securityContext.allowPrivilegeEscalation == false && c.securityContext.capabilities.drop == ['ALL'] && "
         "!has(c.securityContext.capabilities.add) && "
         "(!has(c.securityContext.privileged) || c.securityContext.privileged == false))",
         "each container: non-root, read-only root, no privilege escalation, every capability dropped"),
        (f"{each}c.securityContext.seccompProfile == "
         f"{_cel(_by_name(pod, 'securityContext.seccompProfile'))}[c.name])",
         "each container has the seccomp profile rendered for its role"),
        (f"{each}!has(c.volumeMounts) || c.volumeMounts.all(m, m.name != 'workspace' || c.name == 'fs' || "
         "(has(m.readOnly) && m.readOnly == true)))",
         "the workspace is writable in the fs container alone"),
        (f"object.spec.volumes.map(v, v.name) == {_cel([volume['name'] for volume in pod['spec']['volumes']])} && "
         "object.spec.volumes.all(v, !has(v.hostPath))", "the Pod's volumes are the rendered ones, none a hostPath"),
        ("object.spec.automountServiceAccountToken == false && "
         "!(has(object.spec.hostNetwork) && object.spec.hostNetwork) && "
         "!(has(object.spec.hostPID) && object.spec.hostPID) && !(has(object.spec.hostIPC) && object.spec.hostIPC) "
         "&& !(has(object.spec.shareProcessNamespace) && object.spec.shareProcessNamespace)",
         "no service-account token, no host network, pid or IPC namespace, no shared pid namespace"),
    ]
    return [{"expression": expression, "message": message} for expression, message in rules]


def admission_documents(manifest: Manifest, pod: dict[str, Any], sid: str) -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy for Pods labelled with this session, and its binding (deny)."""
    name = f"{pod_name(manifest, sid)}-admission"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": {LABEL_SESSION: sid}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "objectSelector": {"matchLabels": {LABEL_SESSION: sid}},
                "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                                   "resources": ["pods", "pods/ephemeralcontainers"]}],
            },
            "validations": validations(manifest, pod),
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": {LABEL_SESSION: sid}},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }
    return [policy, binding]
