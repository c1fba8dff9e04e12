"""The Kubernetes render: golden files, strict schemas (kubernetes-validate, one pinned version), the semantic
checks schemas miss, the admission rule's CEL evaluated against the Pod, and the SPIFFE IDs the session CA's."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import kubernetes_validate
import pytest
import yaml
from render_cases import COVERING, EXAMPLES, FIXED, example
from render_golden import assert_golden

from launcher.manifest import Manifest
from launcher.render import render
from launcher.render.kubernetes_checks import problems
from launcher.render.kubernetes_policy import SID_TEMPLATE, spiffe_id_template
from launcher.render.seccomp_profile import filter_mode, oci_profile
from pki.spiffe import SessionIdentity, parse_spiffe_id

K8S_VERSION = "1.37.0"  # the one Kubernetes version the schemas are pinned to (kubernetes-validate 1.37.0)
CLUSTER_SPIFFE_ID = json.loads((Path(__file__).parent / "clusterspiffeid.schema.json").read_text())
MANIFESTS = {**COVERING, **{name: example(name) for name in EXAMPLES}}


def documents(manifest: Manifest) -> list[dict[str, Any]]:
    files = dict(render(manifest, "kubernetes", FIXED).files)
    return list(yaml.safe_load_all(files["session.yaml"]))


def schema_errors(document: dict[str, Any]) -> list[str]:
    """What the pinned schemas refuse, strictly (unknown fields too); our own schema for ClusterSPIFFEID."""
    try:
        if document["kind"] == "ClusterSPIFFEID":
            jsonschema.validate(document, CLUSTER_SPIFFE_ID)
        else:
            kubernetes_validate.validate(document, K8S_VERSION, strict=True)
    except (kubernetes_validate.ValidationError, jsonschema.ValidationError) as error:
        return [str(getattr(error, "message", error))]
    return []


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_golden(name: str) -> None:
    assert_golden("kubernetes", name, render(example(name), "kubernetes", FIXED))


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_every_document_passes_the_strict_schemas_and_the_semantic_checks(name: str) -> None:
    docs = documents(MANIFESTS[name])
    assert {doc["kind"] for doc in docs} >= {"Pod", "NetworkPolicy", "ClusterSPIFFEID", "ValidatingAdmissionPolicy",
                                             "ValidatingAdmissionPolicyBinding"}
    assert [error for doc in docs for error in schema_errors(doc)] == []
    assert problems(docs) == []


def test_the_yaml_is_the_documents() -> None:
    from launcher.render import kubernetes, kubernetes_policy
    from launcher.render.yaml_text import dump_all

    manifest = COVERING["every-row"]
    pod = kubernetes.pod(manifest, FIXED)
    expected = [pod, *kubernetes_policy.documents(manifest, pod, FIXED.sid)]
    assert list(yaml.safe_load_all(dump_all(expected))) == expected == documents(manifest)


def _pod(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return next(doc for doc in docs if doc["kind"] == "Pod")


def _container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in pod["spec"]["containers"] if c["name"] == name)


def _kind(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(doc for doc in docs if doc["kind"] == kind)


# Broken renders: (what, how to break the documents, "schema" or "semantic": which validator must catch it).
Breaker = Callable[[list[dict[str, Any]]], None]
BROKEN: list[tuple[str, Breaker, str]] = [
    ("unknown field", lambda d: _pod(d)["spec"].__setitem__("bogus", True), "schema"),
    ("uid as a string", lambda d: _container(_pod(d), "app")["securityContext"].__setitem__("runAsUser", "62000"),
     "schema"),
    ("name Bad_Name", lambda d: _pod(d)["metadata"].__setitem__("name", "Bad_Name"), "semantic"),
    ("label value with spaces", lambda d: _pod(d)["metadata"]["labels"].__setitem__("x", "has spaces!"), "semantic"),
    ("two containers named app", lambda d: _container(_pod(d), "fs").__setitem__("name", "app"), "semantic"),
    ("containerPort 70000", lambda d: _container(_pod(d), "net")["ports"][0].__setitem__("containerPort", 70000),
     "semantic"),
    ("policyTypes Sideways", lambda d: _kind(d, "NetworkPolicy")["spec"].__setitem__("policyTypes", ["Sideways"]),
     "semantic"),
    ("cidr 999.1.2.3/77", lambda d: [p for p in d if p["kind"] == "NetworkPolicy"][1]["spec"]["egress"][0]["to"][0]
     ["ipBlock"].__setitem__("cidr", "999.1.2.3/77"), "semantic"),
    ("endPort below port", lambda d: [p for p in d if p["kind"] == "NetworkPolicy"][1]["spec"]["egress"][0]["ports"][0]
     .__setitem__("endPort", 1), "semantic"),
    ("privilege escalation", lambda d: _container(_pod(d), "app")["securityContext"]
     .__setitem__("allowPrivilegeEscalation", True), "semantic"),
    ("a hostPath volume", lambda d: _pod(d)["spec"]["volumes"].append({"name": "host", "hostPath": {"path": "/"}}),
     "semantic"),
    ("no seccomp profile", lambda d: [c["securityContext"].pop("seccompProfile") for c in _pod(d)["spec"]["containers"]]
     and _pod(d)["spec"]["securityContext"].pop("seccompProfile"), "semantic"),
    ("ClusterSPIFFEID with a stray field", lambda d: _kind(d, "ClusterSPIFFEID")["spec"].__setitem__("class", "x"),
     "schema"),
]


@pytest.mark.parametrize(("what", "breaker", "caught_by"), BROKEN, ids=[case[0] for case in BROKEN])
def test_the_validators_catch_a_broken_render(what: str, breaker: Breaker, caught_by: str) -> None:
    docs = copy.deepcopy(documents(COVERING["every-row"]))
    breaker(docs)
    schema = [error for doc in docs for error in schema_errors(doc)]
    semantic = problems(docs)
    assert (schema if caught_by == "schema" else semantic), f"{what} went through: {schema} {semantic}"
    if caught_by == "semantic":  # why the semantic checks exist: the strict schemas let each of these through
        assert schema == [], f"kubernetes-validate {K8S_VERSION} now catches {what}: docs/render.md says it does not"


def _verdicts(manifest: Manifest, pod: dict[str, Any], namespace: str = "sharness") -> list[bool]:
    policy = _kind(documents(manifest), "ValidatingAdmissionPolicy")
    env = celpy.Environment()
    activation = {"object": celpy.json_to_cel(pod), "request": celpy.json_to_cel({"namespace": namespace})}
    verdicts = []
    for rule in policy["spec"]["validations"]:
        try:
            verdicts.append(bool(env.program(env.compile(rule["expression"])).evaluate(activation)))
        except celpy.CELEvalError:  # an expression in error refuses the Pod: the policy's failurePolicy is Fail
            verdicts.append(False)
    return verdicts


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_the_admission_rule_admits_the_rendered_pod(name: str) -> None:
    manifest = MANIFESTS[name]
    assert all(_verdicts(manifest, _pod(documents(manifest))))


Tamper = Callable[[dict[str, Any]], None]
TAMPERED: list[tuple[str, Tamper]] = [
    ("another manifest's hash", lambda p: p["metadata"]["annotations"].__setitem__("sharness.dev/manifest-sha256",
                                                                                  "sha256:" + "0" * 64)),
    ("no annotation", lambda p: p["metadata"].pop("annotations")),
    ("the app as the fs door's uid", lambda p: _container(p, "app")["securityContext"].__setitem__("runAsUser", 62001)),
    ("another app command", lambda p: _container(p, "app").__setitem__("command", ["/bin/sh"])),
    ("another image", lambda p: _container(p, "keys").__setitem__("image", "evil/keys:1")),
    ("the workspace writable in the app", lambda p: _container(p, "app")["volumeMounts"][0].pop("readOnly")),
    ("a container more", lambda p: p["spec"]["containers"].append(copy.deepcopy(_container(p, "app")) | {"name": "x"})),
    ("unconfined seccomp", lambda p: _container(p, "net")["securityContext"].__setitem__(
        "seccompProfile", {"type": "Unconfined"})),
    ("a capability added", lambda p: _container(p, "shell")["securityContext"]["capabilities"].__setitem__(
        "add", ["SYS_ADMIN"])),
    ("the host network", lambda p: p["spec"].__setitem__("hostNetwork", True)),
    ("a service-account token", lambda p: p["spec"].__setitem__("automountServiceAccountToken", True)),
    ("a hostPath volume", lambda p: p["spec"]["volumes"].append({"name": "host", "hostPath": {"path": "/"}})),
    ("an ephemeral container", lambda p: p["spec"].__setitem__("ephemeralContainers", [{"name": "debug"}])),
]


@pytest.mark.parametrize(("what", "tamper"), TAMPERED, ids=[case[0] for case in TAMPERED])
def test_the_admission_rule_refuses_a_tampered_pod(what: str, tamper: Tamper) -> None:
    manifest = COVERING["shell-reads"]  # the app mounts the workspace (read-only) there
    pod = copy.deepcopy(_pod(documents(manifest)))
    tamper(pod)
    assert not all(_verdicts(manifest, pod)), f"admitted with {what}"


def test_the_admission_rule_refuses_the_pod_in_another_namespace() -> None:
    manifest = COVERING["every-row"]
    assert not all(_verdicts(manifest, _pod(documents(manifest)), namespace="default"))


@pytest.mark.parametrize("role", ["app", "fs", "net", "keys", "shell", "model"])
def test_the_spiffe_id_is_the_session_cas(role: str) -> None:
    manifest = COVERING["every-row"]
    template = spiffe_id_template(manifest, FIXED.sid, role)
    assert SID_TEMPLATE in template
    identity = SessionIdentity.from_spiffe_id(parse_spiffe_id(template.replace(SID_TEMPLATE, FIXED.sid)))
    assert identity == SessionIdentity(manifest.session.trust_domain, FIXED.sid, role)
    spiffe = next(doc for doc in documents(manifest) if doc["kind"] == "ClusterSPIFFEID"
                  and doc["spec"]["workloadSelectorTemplates"] == [f"k8s:container-name:{role}"])
    assert spiffe["spec"]["spiffeIDTemplate"] == template


def _rules_of(profile: dict[str, Any]) -> list[tuple[str, int, tuple[tuple[int, str, int, int], ...]]]:
    return [(name, entry["errnoRet"], tuple((a["index"], a["op"], a["value"], a["valueTwo"])
                                             for a in entry.get("args", [])))
            for entry in profile["syscalls"] for name in entry["names"]]


@pytest.mark.parametrize("role", ["app", "fs", "net", "keys", "shell", "model"])
def test_each_profile_is_the_launchers_filter(role: str) -> None:
    """The Localhost profile holds every rule of the filter the launcher loads for the role, and no other."""
    from launcher.render.seccomp_profile import _OPS

    manifest = COVERING["every-row"]
    mode = filter_mode(manifest, role, FIXED.python, own_listener=True)
    profile = json.loads(dict(render(manifest, "kubernetes", FIXED).files)[f"seccomp/{role}.json"])
    assert profile == oci_profile(mode)
    expected = [(rule.syscall, rule.errno, tuple((a, _OPS[op], x, y) for a, op, x, y in rule.cmps))
                for rule in mode.rules()]
    assert sorted(_rules_of(profile)) == sorted(expected)
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
