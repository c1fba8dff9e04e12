"""The public Manifest record: roles, edges (default and written), rows, limits, hash."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
from manifests.samples import DROP, FULL, encode, load, sample

from launcher.manifest import DOOR_DEFAULT_LIMITS, SHELL_DEFAULT_LIMITS, canonical_bytes, load_manifest
from pki.vocabulary import DEFAULT_EDGES

REPO = Path(__file__).resolve().parents[2]


def test_fields_of_the_full_sample() -> None:
    manifest = load(FULL)
    assert manifest.session.name == "t" and manifest.session.trust_domain == "t.sharness.test"
    assert manifest.session.ttl_s == 3600 and manifest.workspace == "/srv/sh-test/ws"
    assert manifest.app.argv == ("/opt/agent/bin/agent", "--flag")
    assert manifest.app.files_read == ("/opt/agent",) and manifest.app.files_exec == ("/opt/agent/bin",)
    assert (manifest.app.max_memory_mb, manifest.app.max_pids) == (512, 32)
    assert manifest.roles == ("app", "fs", "net", "keys", "shell", "model")
    assert manifest.edges == DEFAULT_EDGES
    assert manifest.document == FULL


def test_roles_follow_door_order_not_file_order() -> None:
    document = sample()
    document["doors"] = dict(reversed(list(document["doors"].items())))
    assert load(document).roles == ("app", "fs", "net", "keys", "shell", "model")


def test_default_edges_are_restricted_to_started_roles() -> None:
    manifest = load(sample(doors__keys=DROP, doors__model=DROP, doors__fs__hidden=[]))
    assert manifest.roles == ("app", "fs", "net", "shell")
    assert manifest.edges == {("app", "fs"), ("app", "net"), ("app", "shell"), ("shell", "net")}
    assert load(sample(doors=DROP)).edges == frozenset()


def test_written_edges_replace_the_defaults_and_stay_out_of_the_canonical_form_when_absent() -> None:
    edges = [["app", "fs"], ["app", "net"], ["app", "shell"], ["shell", "net"], ["app", "model"],
             ["model", "keys"]]
    manifest = load(sample(edges=edges))
    assert manifest.edges == {tuple(edge) for edge in edges}
    assert manifest.edges_in("keys") == ("model",) and manifest.edges_out("app") == ("fs", "net", "shell", "model")
    assert b'"edges"' not in load(FULL).canonical


def test_door_rows_are_a_copy() -> None:
    manifest = load(FULL)
    rows = manifest.door_rows("fs")
    rows["read_only"].append("src")
    assert manifest.door_rows("fs")["read_only"] == [".git"]
    assert manifest.door_rows("app") == {} and load(sample(doors=DROP)).door_rows("fs") == {}


def test_process_limits() -> None:
    manifest = load(FULL)
    assert manifest.process_limits("app") == (512, 32)
    assert manifest.process_limits("shell") == (1024, 128)
    assert manifest.process_limits("fs") == DOOR_DEFAULT_LIMITS == (256, 64)
    assert load(sample(doors__shell__process=DROP)).process_limits("shell") == SHELL_DEFAULT_LIMITS


@pytest.mark.parametrize(("process", "want"), [
    ({"max_memory_mb": 512, "max_pids": 1}, (128, 128 * 256)),  # a quarter of the memory, 256 inodes per MiB
    ({"max_memory_mb": 17, "max_pids": 1}, (4, 1024)),  # rounded down
    ({"max_memory_mb": 512, "max_pids": 1, "scratch_mb": 64}, (64, 64 * 256)),
    ({"max_memory_mb": 512, "max_pids": 1, "scratch_inodes": 100}, (128, 100)),
    ({"max_memory_mb": 512, "max_pids": 1, "scratch_mb": 511, "scratch_inodes": 64}, (511, 64)),
])
def test_scratch_limits_as_written_or_derived_from_the_memory_limit(process: dict[str, int],
                                                                    want: tuple[int, int]) -> None:
    manifest = load(sample(app__process=process, doors__shell__process=process))
    assert manifest.scratch_limits("app") == want == (manifest.app.scratch_mb, manifest.app.scratch_inodes)
    assert manifest.scratch_limits("shell") == want


def test_a_shell_without_process_rows_gets_scratch_from_its_default_memory() -> None:
    assert load(sample(doors__shell__process=DROP)).scratch_limits("shell") == (256, 256 * 256)


def test_manifest_is_frozen() -> None:
    manifest = load(FULL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        manifest.workspace = "/elsewhere"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        manifest.session.ttl_s = 1  # type: ignore[misc]


def test_hash_is_sha256_of_the_canonical_bytes() -> None:
    manifest = load_manifest(encode(FULL))
    assert manifest.canonical == canonical_bytes(FULL)
    assert manifest.sha256 == "sha256:" + hashlib.sha256(manifest.canonical).hexdigest()
    assert manifest.sha256 == manifest.sha256.lower() and len(manifest.sha256) == 7 + 64


@pytest.mark.parametrize("path", ["manifests/demo.json", "manifests/examples/coding-agent.json",
                                  "manifests/examples/research-agent.json",
                                  "manifests/examples/corporate-network.json"])
def test_shipped_manifests_load(path: str) -> None:
    manifest = load_manifest((REPO / path).read_bytes())
    assert manifest.canonical == canonical_bytes(json.loads((REPO / path).read_text()))


def test_the_examples_are_what_they_say() -> None:
    coding = load_manifest((REPO / "manifests/examples/coding-agent.json").read_bytes())
    assert {"fs", "net", "shell", "model"} <= set(coding.roles)
    assert "pypi.org:443" in coding.door_rows("net")["allow"]["app"]
    research = load_manifest((REPO / "manifests/examples/research-agent.json").read_bytes())
    assert "fs" not in research.roles and "shell" not in research.roles  # nothing can write
    assert {"net", "model"} <= set(research.roles)
    demo = load_manifest((REPO / "manifests/demo.json").read_bytes())
    assert demo.workspace == "/var/lib/sharness/demo/workspace"


def test_default_edges_are_frozen_for_manifest_v0() -> None:
    # A manifest without "edges" is hashed as written: its edges follow from the version and the started
    # doors. Changing this set therefore needs a new "sharness" version, never an edit here.
    frozen_for_v0 = {("app", "fs"), ("app", "net"), ("app", "shell"), ("app", "model"),
                     ("net", "keys"), ("model", "keys"), ("shell", "net")}
    assert frozen_for_v0 == DEFAULT_EDGES


def test_default_edges_match_pki_when_it_is_built() -> None:
    edges = pytest.importorskip("pki.edges", reason="pki.edges is not built yet")
    assert edges.DEFAULT_EDGES == DEFAULT_EDGES
