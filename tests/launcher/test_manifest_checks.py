"""The checks a schema cannot express, one refusal class at a time, each with its pointer."""

from __future__ import annotations

from typing import Any

import pytest
from manifests.samples import DROP, FULL, load, sample

from launcher.manifest import ManifestError

FS = {"refuse_secrets": True, "max_file_bytes": 1, "max_total_bytes": 1, "max_files": 1}
SECRET = FULL["doors"]["keys"]["secrets"]["anthropic"]


def refusal(document: dict[str, Any]) -> ManifestError:
    with pytest.raises(ManifestError) as refused:
        load(document)
    assert refused.value.hint
    return refused.value


def test_the_full_sample_loads() -> None:
    assert load(FULL).roles == ("app", "fs", "net", "keys", "shell", "model")


@pytest.mark.parametrize(
    ("changes", "pointer"),
    [
        ({"workspace": "relative/ws"}, "/workspace"),
        ({"workspace": "/srv/../ws"}, "/workspace"),
        ({"workspace": "/srv/./ws"}, "/workspace"),
        ({"workspace": "/srv//ws"}, "/workspace"),
        ({"workspace": "/srv/ws/"}, "/workspace"),
        ({"workspace": "/srv/\x00ws"}, "/workspace"),
        ({"workspace": "/srv/\x1bws"}, "/workspace"),
        ({"workspace": "/"}, "/workspace"),
        ({"app__files__read": ["/opt", "opt"]}, "/app/files/read/1"),
        ({"app__files__exec": ["/opt/bin/"]}, "/app/files/exec/0"),
        ({"app__argv": ["./agent"]}, "/app/argv/0"),
        ({"app__argv": ["/opt/../agent"]}, "/app/argv/0"),
        ({"app__argv": [""]}, "/app/argv/0"),
        ({"app__argv": ["agent", "a\x00b"]}, "/app/argv/1"),
        ({"doors__fs__read_only": ["/srv/sh-test/ws/.git"]}, "/doors/fs/read_only/0"),
        ({"doors__fs__append_only": ["logs/"]}, "/doors/fs/append_only/0"),
        ({"doors__fs__exec": ["../bin"]}, "/doors/fs/exec/0"),
        ({"doors__keys__secrets__anthropic__from": "secrets/key"}, "/doors/keys/secrets/anthropic/from"),
    ],
)
def test_paths(changes: dict[str, Any], pointer: str) -> None:
    assert refusal(sample(**changes)).pointer == pointer


def test_a_bare_program_name_is_allowed() -> None:
    assert load(sample(app__argv=["python3", "agent.py"])).app.argv == ("python3", "agent.py")


@pytest.mark.parametrize("name", ["Upper.test", "spiffe://t.test", "t.test:443", "a..b", "t.test."])
def test_trust_domain(name: str) -> None:
    assert refusal(sample(session__trust_domain=name)).pointer == "/session/trust_domain"


@pytest.mark.parametrize(
    ("edges", "pointer", "words"),
    [
        ([["app", "fs"], ["app", "fs"]], "/edges/1", "twice"),
        ([["fs", "fs"]], "/edges/0", "self-edge"),
        ([["fs", "app"]], "/edges/0/1", "serves nothing"),
        ([["app", "net"]], "/edges/0/1", "not started"),
        ([["net", "fs"]], "/edges/0/0", "not started"),
    ],
)
def test_edges(edges: list[list[str]], pointer: str, words: str) -> None:
    document = sample(doors={"fs": FS}, edges=edges)
    error = refusal(document)
    assert error.pointer == pointer and words in error.message


def test_rows_only_for_started_roles() -> None:
    no_shell = sample(doors__shell=DROP, doors__fs__hidden=[])
    assert refusal(no_shell).pointer == "/doors/net/allow/shell"
    no_model = sample(doors__model=DROP)
    assert refusal(no_model).pointer == "/doors/keys/secrets/anthropic/roles/0"
    literals = sample(doors__shell=DROP, doors__net__allow={"app": ["pypi.org:443"]},
                      doors__net__allow_ip_literals=["shell"])
    assert refusal(literals).pointer == "/doors/net/allow_ip_literals/0"


def test_rows_need_their_edge() -> None:
    edges = [["app", "fs"], ["app", "net"], ["app", "model"], ["model", "keys"], ["net", "keys"]]
    assert refusal(sample(edges=edges)).pointer == "/doors/net/allow/shell"
    edges = [["app", "fs"], ["app", "net"], ["app", "shell"], ["shell", "net"], ["app", "model"]]
    assert refusal(sample(edges=edges)).pointer == "/doors/keys/secrets/anthropic/roles/0"


def test_model_secret_must_exist_and_fit() -> None:
    assert refusal(sample(doors__model__secret="other")).pointer == "/doors/model/secret"
    assert refusal(sample(doors__keys=DROP)).pointer == "/doors/model/secret"
    wrong_host = {"anthropic": {**SECRET, "hosts": ["api.example.com"]}}
    assert refusal(sample(doors__keys__secrets=wrong_host)).pointer == "/doors/model/secret"
    wrong_role = {"anthropic": {**SECRET, "roles": ["net"]}}
    assert refusal(sample(doors__keys__secrets=wrong_role)).pointer == "/doors/model/secret"
    assert refusal(sample(doors__model__upstream="https://pypi.org:0")).pointer == "/doors/model/upstream"


def test_secrets_stay_out_of_the_apps_reach() -> None:
    inside = {"anthropic": {**SECRET, "from": "/srv/sh-test/ws/.env"}}
    assert refusal(sample(doors__keys__secrets=inside)).pointer == "/doors/keys/secrets/anthropic/from"
    readable = sample(app__files__read=["/etc"])
    assert "read this file directly" in refusal(readable).message
    # The shell's commands read their files.read and files.exec directly too.
    for key in ("read", "exec"):
        by_shell = refusal(sample(**{f"doors__shell__files__{key}": ["/etc/sharness"]}))
        assert by_shell.pointer == "/doors/keys/secrets/anthropic/from" and "shell" in by_shell.message


def test_a_sealed_store_source_names_a_secret_and_keeps_the_role_checks() -> None:
    sealed = {"anthropic": {**SECRET, "from": "sealed:anthropic.v2"}}
    assert load(sample(doors__keys__secrets=sealed)).door_rows("keys")["secrets"]["anthropic"]["from"] == \
        "sealed:anthropic.v2"
    # Its file is under the state root, which the app's reads may not hold: no path check applies to it.
    assert load(sample(doors__keys__secrets=sealed, app__files__read=["/etc"]))
    for bad in ("sealed:", "sealed:../etc/shadow", "sealed:a/b", "sealed:.hidden", "sealed:UPPER"):
        refused = refusal(sample(doors__keys__secrets={"anthropic": {**SECRET, "from": bad}}))
        assert refused.pointer == "/doors/keys/secrets/anthropic/from", bad
    no_edge = {"anthropic": {**SECRET, "from": "sealed:anthropic", "roles": ["model", "shell"]}}
    assert refusal(sample(doors__keys__secrets=no_edge)).pointer.startswith("/doors/keys/secrets/anthropic/roles")


def test_hidden_paths_need_no_direct_reader() -> None:
    assert refusal(sample(doors__shell__workspace="read")).pointer == "/doors/fs/hidden/0"
    assert refusal(sample(app__files__read=["/srv/sh-test"])).pointer == "/doors/fs/hidden/0"
    assert load(sample(app__files__read=["/srv/sh-test/ws/src"])).app.files_read == ("/srv/sh-test/ws/src",)
    assert load(sample(doors__shell__workspace="read", doors__fs__hidden=[]))
    through_files = refusal(sample(doors__shell__files__read=["/srv/sh-test/ws"]))
    assert through_files.pointer == "/doors/fs/hidden/0" and "doors.shell.files.read" in through_files.message
    assert refusal(sample(doors__shell__files__exec=["/run/sharness"])).pointer == "/doors/shell/files/exec/0"


def test_a_path_in_two_fs_rows_is_refused() -> None:
    assert refusal(sample(doors__fs__append_only=[".git"])).pointer == "/doors/fs/append_only/0"


@pytest.mark.parametrize(
    ("entry", "words"),
    [("pypi.org", "host:port"), ("*.org:443", "top-level"), ("192.0.2.7:443", "IP literal"),
     ("PyPI.org:443", "lowercase"), ("pypi.org:99999", "port")],
)
def test_net_allow_entries(entry: str, words: str) -> None:
    error = refusal(sample(doors__net__allow={"app": ["pypi.org:443", entry]}))
    assert error.pointer == "/doors/net/allow/app/1" and words in error.message


def test_ip_literals_need_the_opt_in() -> None:
    document = sample(doors__net__allow={"app": ["192.0.2.7:443"]}, doors__net__allow_ip_literals=["app"])
    assert load(document).door_rows("net")["allow"] == {"app": ["192.0.2.7:443"]}


@pytest.mark.parametrize(("changes", "pointer", "words"), [
    ({"app__files__read": ["/"]}, "/app/files/read/0", "the whole file system"),
    ({"app__files__read": ["/opt", "/proc"]}, "/app/files/read/1", "is /proc"),
    ({"app__files__exec": ["/proc/self/root"]}, "/app/files/exec/0", "is under /proc: the kernel's processes"),
    ({"app__files__read": ["/proc/1/root/etc"]}, "/app/files/read/0", "under /proc"),
    ({"app__files__read": ["/sys/fs/cgroup"]}, "/app/files/read/0", "under /sys"),
    ({"app__files__read": ["/dev/shm"]}, "/app/files/read/0", "every user may write"),
    ({"app__files__exec": ["/dev"]}, "/app/files/exec/0", "is /dev"),
    ({"app__files__exec": ["/run"]}, "/app/files/exec/0", "holds /run/sharness: the launcher's runtime"),
    ({"app__files__read": ["/run/sharness/0123abcd/app/tmp"]}, "/app/files/read/0", "under /run/sharness"),
    ({"workspace": "/proc/self/cwd"}, "/workspace", "under /proc"),
    ({"workspace": "/run", "doors__fs__hidden": DROP}, "/workspace", "holds /run/sharness"),
    ({"doors__keys__secrets__anthropic__from": "/proc/self/environ"}, "/doors/keys/secrets/anthropic/from",
     "under /proc"),
    ({"doors__keys__secrets__anthropic__from": "/dev/stdin"}, "/doors/keys/secrets/anthropic/from", "under /dev"),
])
def test_the_kernels_places_and_the_launchers_own_are_never_a_manifest_path(
        changes: dict[str, Any], pointer: str, words: str) -> None:
    error = refusal(sample(**changes))
    assert error.pointer == pointer and words in error.message, error
    assert "/proc, /sys, /dev and /run/sharness are never given" in error.hint


@pytest.mark.parametrize("path", ["/procedures", "/system", "/devices", "/run/sharness-other", "/srv/proc",
                                  "/var/run", "/runtime"])
def test_names_that_only_look_like_them_are_left_to_the_preflight(path: str) -> None:
    """Spelling decides only what is certain from the text; /var/run (a symlink to /run) is the preflight's."""
    assert load(sample(app__files__read=[path])).app.files_read == (path,)


@pytest.mark.parametrize(("changes", "pointer"), [
    ({"app__process": {"max_memory_mb": 64, "max_pids": 1, "scratch_mb": 64}}, "/app/process/scratch_mb"),
    ({"app__process": {"max_memory_mb": 64, "max_pids": 1, "scratch_mb": 65}}, "/app/process/scratch_mb"),
    ({"doors__shell__process": {"max_memory_mb": 64, "max_pids": 1, "scratch_mb": 100}},
     "/doors/shell/process/scratch_mb"),
])
def test_scratch_must_fit_inside_the_memory_limit(changes: dict[str, Any], pointer: str) -> None:
    """The tmpfs's pages count against the memory cgroup: a scratch as large as the limit would end in an OOM
    kill, never in ENOSPC."""
    refused = refusal(sample(**changes))
    assert refused.pointer == pointer and "max_memory_mb" in refused.hint, refused


@pytest.mark.parametrize(("key", "value", "pointer"), [
    ("scratch_mb", 0, "/app/process/scratch_mb"),
    ("scratch_inodes", 63, "/app/process/scratch_inodes"),
    ("scratch_inodes", 16777217, "/app/process/scratch_inodes"),
    ("scratch_mb", True, "/app/process/scratch_mb"),
    ("scratch_size", 1, "/app/process/scratch_size"),
])
def test_scratch_rows_are_strict(key: str, value: object, pointer: str) -> None:
    refused = refusal(sample(app__process={"max_memory_mb": 512, "max_pids": 1, key: value}))
    assert refused.pointer == pointer, refused


def test_the_twin_needs_no_secret_and_an_https_upstream_does() -> None:
    twin = load(sample(doors__model={"upstream": "twin", "budget_microusd": 1000}, doors__keys=DROP,
                       edges=[["app", "fs"], ["app", "net"], ["app", "shell"], ["shell", "net"], ["app", "model"]]))
    assert twin.door_rows("model")["upstream"] == "twin"
    no_secret = sample(doors__model={"upstream": "https://api.anthropic.com", "budget_microusd": 1000})
    assert refusal(no_secret).pointer == "/doors/model/secret"


@pytest.mark.parametrize("network", ["127.0.0.0/8", "0.0.0.0/0", "169.254.0.0/16", "::1/128", "10.0.0.1/8"])
def test_internal_ranges_are_networks_that_never_reach_loopback_or_link_local(network: str) -> None:
    assert refusal(sample(doors__model__internal_ranges=[network])).pointer == "/doors/model/internal_ranges/0"


def test_a_private_gateway_row_is_accepted() -> None:
    manifest = load(sample(doors__model__internal_ranges=["10.20.0.0/16"], doors__model__ca_bundle="/etc/gw.pem",
                           doors__model__models=["claude-haiku-4-5"]))
    assert manifest.door_rows("model")["internal_ranges"] == ["10.20.0.0/16"]


INTERNAL_ALLOW = {"app": ["pypi.corp.example:443", "*.corp.example:443", "10.20.0.9:443"], "shell": ["pypi.org:443"]}


@pytest.mark.parametrize(("internal", "pointer"), [
    ({"app": {"nope.corp.example:443": ["10.20.0.0/16"]}}, "/doors/net/internal/app/nope.corp.example:443"),
    ({"app": {"*.corp.example:443": ["10.20.0.0/16"]}}, "/doors/net/internal/app/*.corp.example:443"),
    ({"app": {"10.20.0.9:443": ["10.20.0.0/16"]}}, "/doors/net/internal/app/10.20.0.9:443"),
    ({"app": {"pypi.corp.example:443": ["10.0.0.0/8", "127.0.0.0/8"]}},
     "/doors/net/internal/app/pypi.corp.example:443/1"),
    ({"app": {"pypi.corp.example:443": ["0.0.0.0/0"]}}, "/doors/net/internal/app/pypi.corp.example:443/0"),
    ({"app": {"pypi.corp.example:443": ["169.254.169.254/32"]}}, "/doors/net/internal/app/pypi.corp.example:443/0"),
    ({"app": {"pypi.corp.example:443": ["::ffff:10.20.0.0/112"]}}, "/doors/net/internal/app/pypi.corp.example:443/0"),
    ({"app": {"pypi.corp.example:443": ["fe80::/10"]}}, "/doors/net/internal/app/pypi.corp.example:443/0"),
    ({"shell": {"pypi.corp.example:443": ["10.20.0.0/16"]}}, "/doors/net/internal/shell/pypi.corp.example:443"),
])
def test_internal_rows_name_one_allowed_host_and_ranges_that_are_never_this_host(
        internal: dict[str, Any], pointer: str) -> None:
    document = sample(doors__net={"allow": INTERNAL_ALLOW, "allow_ip_literals": ["app"], "internal": internal})
    assert refusal(document).pointer == pointer


def test_an_internal_row_loads() -> None:
    document = sample(doors__net={"allow": INTERNAL_ALLOW, "allow_ip_literals": ["app"],
                                  "internal": {"app": {"pypi.corp.example:443": ["10.20.0.0/16", "fd00:20::/32"]}}})
    assert load(document).door_rows("net")["internal"] == {"app": {"pypi.corp.example:443": ["10.20.0.0/16",
                                                                                            "fd00:20::/32"]}}


PROXY_SECRET = {"from": "/etc/sharness/secrets/proxy", "roles": ["net"], "hosts": ["proxy.corp.example"]}


@pytest.mark.parametrize(("proxy", "secrets", "pointer"), [
    ({"address": "proxy.corp.example"}, {}, "/doors/net/upstream_proxy/address"),
    ({"address": "*.corp.example:3128"}, {}, "/doors/net/upstream_proxy/address"),
    ({"address": "tcp://proxy.corp.example:3128"}, {}, "/doors/net/upstream_proxy/address"),
    ({"address": "127.0.0.1:3128"}, {}, "/doors/net/upstream_proxy/address"),
    ({"address": "169.254.169.254:80"}, {}, "/doors/net/upstream_proxy/address"),
    ({"address": "proxy.corp.example:3128", "secret": "nope"}, {}, "/doors/net/upstream_proxy/secret"),
    ({"address": "proxy.corp.example:3128", "secret": "proxy"}, {"proxy": {**PROXY_SECRET, "roles": ["model"]}},
     "/doors/net/upstream_proxy/secret"),
    ({"address": "proxy.corp.example:3128", "secret": "proxy"}, {"proxy": {**PROXY_SECRET, "hosts": ["x.example"]}},
     "/doors/net/upstream_proxy/secret"),
    ({"address": "proxy.corp.example:3128", "resolve": "nobody"}, {}, "/doors/net/upstream_proxy/resolve"),
])
def test_an_upstream_proxy_row_names_one_proxy_and_a_credential_given_to_net(
        proxy: dict[str, Any], secrets: dict[str, Any], pointer: str) -> None:
    document = sample(doors__net__upstream_proxy=proxy, doors__keys__secrets={**FULL["doors"]["keys"]["secrets"],
                                                                             **secrets},
                      edges=[["app", "fs"], ["app", "net"], ["app", "shell"], ["shell", "net"], ["app", "model"],
                             ["model", "keys"], ["net", "keys"]])
    assert refusal(document).pointer == pointer


def test_an_upstream_proxy_row_with_its_credential_loads() -> None:
    document = sample(doors__net__upstream_proxy={"address": "proxy.corp.example:3128", "secret": "proxy"},
                      doors__keys__secrets={**FULL["doors"]["keys"]["secrets"], "proxy": PROXY_SECRET},
                      edges=[["app", "fs"], ["app", "net"], ["app", "shell"], ["shell", "net"], ["app", "model"],
                             ["model", "keys"], ["net", "keys"]])
    assert load(document).door_rows("net")["upstream_proxy"]["secret"] == "proxy"


OVERLAY = {"doors__shell__workspace": "overlay", "doors__fs__hidden": []}


def test_an_overlay_with_the_default_edges_gets_shell_to_fs_and_its_size_defaults_to_a_quarter() -> None:
    manifest = load(sample(**OVERLAY))
    assert ("shell", "fs") in manifest.edges and manifest.overlay_limits() == (256, 256 * 256)
    assert ("shell", "fs") not in load(sample(doors__shell__workspace="read", doors__fs__hidden=[])).edges
    assert load(sample(**OVERLAY, doors__shell__overlay_mb=100)).overlay_limits() == (100, 100 * 256)
    assert load(sample()).overlay_limits() is None


@pytest.mark.parametrize(("changes", "pointer", "words"), [
    ({"doors__shell__overlay_mb": 64}, "/doors/shell/overlay_mb", "is 'none'"),
    ({**OVERLAY, "doors__fs": DROP}, "/doors/shell/workspace", "no doors.fs"),
    ({**OVERLAY, "edges": [["app", "fs"], ["app", "net"], ["app", "shell"], ["app", "model"], ["net", "keys"],
                           ["model", "keys"], ["shell", "net"]]}, "/edges", "['shell', 'fs']"),
    ({**OVERLAY, "doors__shell__overlay_mb": 800}, "/doors/shell/overlay_mb", "not below max_memory_mb 1024"),
    ({**OVERLAY, "doors__shell__process": {"max_memory_mb": 64, "max_pids": 8, "scratch_mb": 50}},
     "/doors/shell/overlay_mb", "overlay_mb 16 and scratch_mb 50"),
    ({"doors__shell__workspace": "overlay"}, "/doors/fs/hidden/0", "an overlay's lower layer is the workspace"),
    ({**OVERLAY, "doors__shell__overlay_mb": 0}, "/doors/shell/overlay_mb", ""),
])
def test_an_overlay_needs_the_fs_door_its_edge_room_in_the_memory_limit_and_no_hidden_row(
        changes: dict[str, Any], pointer: str, words: str) -> None:
    refused = refusal(sample(**changes))
    assert refused.pointer == pointer and words in refused.message, refused
