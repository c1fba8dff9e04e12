"""The plan: every row with its kind and holder, held only where kernel and holder both exist."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from manifests.samples import DROP, FULL, load, sample

from launcher.kernel.probe_facts import FULL_KERNEL, KernelFacts
from launcher.policy import plan as plan_module
from launcher.policy.plan import IMPLEMENTED_ROWS, build_plan
from launcher.policy.plan_render import render_plan
from pki.vocabulary import BOUNDARY, EXPECTATION, SETTING

CONFINEMENT = ("uid", "ipc", "landlock.fs", "landlock.tcp", "landlock.scope", "seccomp", "no_new_privs", "memory",
               "pids", "edges")
NOTHING = KernelFacts(landlock_abi=0, netns=False, seccomp_filter=False, openat2=False, cgroup_memory=None,
                      cgroup_pids=None, is_root=False)


def _ids(plan: plan_module.Plan, component: str) -> list[str]:
    return [row.row_id for row in plan.rows if row.component == component]


def _everything_built(monkeypatch: pytest.MonkeyPatch) -> None:
    every_id = {row.row_id for row in build_plan(load(FULL), FULL_KERNEL).rows}
    monkeypatch.setattr(plan_module, "IMPLEMENTED_ROWS", frozenset(every_id))


def test_a_row_is_held_exactly_when_its_holder_is_built_and_the_kernel_can_hold_it() -> None:
    plan = build_plan(load(FULL), FULL_KERNEL)
    assert all(row.kernel_can_hold for row in plan.rows)
    for row in plan.rows:
        built = row.row_id in IMPLEMENTED_ROWS or f"{row.component}:{row.row_id}" in IMPLEMENTED_ROWS
        assert row.held == built, row
        assert built or "this version of sharness-launch lacks" in row.why_unheld
    assert plan.unheld_count == sum(not row.held for row in plan.rows)  # every row of FULL is built by now


def test_every_started_component_has_the_confinement_rows() -> None:
    plan = build_plan(load(FULL), FULL_KERNEL)
    for role in ("app", "fs", "net", "keys", "shell", "model"):
        assert set(CONFINEMENT) <= set(_ids(plan, role)), role
    assert "netns" in _ids(plan, "app") and "netns" in _ids(plan, "fs") and "netns" not in _ids(plan, "net")
    assert "pidns" in _ids(plan, "app") and not any("pidns" in _ids(plan, door) for door in ("fs", "net", "keys"))
    assert _ids(plan, "session") == ["session.ttl", "session.audit"]


def test_door_rows_follow_the_manifest() -> None:
    plan = build_plan(load(FULL), FULL_KERNEL)
    fs = _ids(plan, "fs")
    for row_id in ("fs.within_root", "fs.read_only", "fs.append_only", "fs.hidden", "fs.exec",
                   "fs.refuse_secrets", "fs.max_file_bytes", "fs.max_total_bytes", "fs.max_files"):
        assert row_id in fs
    assert {"net.allow", "net.sni", "net.addresses", "net.ip_literals"} <= set(_ids(plan, "net"))
    assert "keys.secrets" in _ids(plan, "keys")
    assert {"shell.workspace", "shell.egress"} <= set(_ids(plan, "shell"))
    assert {"model.upstream", "model.secret", "model.budget_microusd"} <= set(_ids(plan, "model"))
    quiet = build_plan(load(sample(doors__fs={"refuse_secrets": False, "max_file_bytes": 1, "max_total_bytes": 1,
                                              "max_files": 1})), FULL_KERNEL)
    assert not {"fs.read_only", "fs.hidden", "fs.refuse_secrets"} & set(_ids(quiet, "fs"))


def test_the_upload_cap_row_shows_the_default_the_schema_and_the_door_share() -> None:
    from doors.fs._rules import DEFAULT_MAX_CONCURRENT_UPLOADS
    from launcher.manifest import FS_DEFAULT_MAX_CONCURRENT_UPLOADS
    from launcher.manifest._schema import schema

    declared = schema()["$defs"]["fs"]["properties"]["max_concurrent_uploads"]["default"]
    assert declared == FS_DEFAULT_MAX_CONCURRENT_UPLOADS == DEFAULT_MAX_CONCURRENT_UPLOADS
    rows = {row.row_id: row for row in build_plan(load(FULL), FULL_KERNEL).rows if row.component == "fs"}
    assert rows["fs.max_concurrent_uploads"].meaning == f"at most {declared} bodies in flight at once per client"
    assert rows["fs.max_concurrent_uploads"].held and rows["fs.max_concurrent_uploads"].kind == BOUNDARY
    fs = {"refuse_secrets": True, "max_file_bytes": 1, "max_total_bytes": 1, "max_files": 1,
          "max_concurrent_uploads": 3}
    capped = build_plan(load(sample(doors__fs=fs)), FULL_KERNEL)
    assert "at most 3 bodies" in next(r.meaning for r in capped.rows if r.row_id == "fs.max_concurrent_uploads")


def test_the_scratch_row_names_its_limits_and_is_held_for_the_app_and_the_shell() -> None:
    """The app's scratch tmpfs and the shell's (where its commands' HOME and TMPDIR live) are the same row."""
    plan = build_plan(load(sample(app__process={"max_memory_mb": 512, "max_pids": 1, "scratch_mb": 48})), FULL_KERNEL)
    rows = {row.component: row for row in plan.rows if row.row_id == "scratch"}
    assert set(rows) == {"app", "shell"}
    assert rows["app"].held and rows["app"].kind == BOUNDARY and "tmpfs" in rows["app"].held_by
    assert "48 MiB" in rows["app"].meaning and f"{48 * 256} inodes" in rows["app"].meaning
    assert "nosuid, nodev, noexec" in rows["app"].meaning
    assert rows["shell"].held and rows["shell"].kind == BOUNDARY
    app = next(component for component in plan.components if component.role == "app")
    assert app.writes == ("/dev/null", "/run/sharness/<sid>/app/home", "/run/sharness/<sid>/app/tmp")


def test_doors_not_started_have_no_rows() -> None:
    plan = build_plan(load(sample(doors=DROP)), FULL_KERNEL)
    assert {row.component for row in plan.rows} == {"session", "app"}
    assert [component.role for component in plan.components] == ["app"]
    assert "proxy_env" not in _ids(plan, "app")


def test_held_when_built_and_the_kernel_can(monkeypatch: pytest.MonkeyPatch) -> None:
    _everything_built(monkeypatch)
    plan = build_plan(load(FULL), FULL_KERNEL)
    assert plan.unheld_count == 0 and all(row.why_unheld == "" for row in plan.rows)


def test_the_kernel_decides_what_can_be_held(monkeypatch: pytest.MonkeyPatch) -> None:
    _everything_built(monkeypatch)
    old = dataclasses.replace(FULL_KERNEL, landlock_abi=3, cgroup_pids=None)
    plan = build_plan(load(FULL), old)
    unheld = {(row.component, row.row_id): row for row in plan.rows if not row.held}
    assert ("app", "landlock.tcp") in unheld and ("app", "landlock.scope") in unheld
    assert "ABI 4" in unheld[("app", "landlock.tcp")].why_unheld
    assert ("shell", "pids") in unheld and ("app", "landlock.fs") not in unheld
    assert all(not row.kernel_can_hold for row in unheld.values())
    nothing = build_plan(load(FULL), NOTHING)
    held = [(row.component, row.row_id) for row in nothing.rows if row.held]
    assert all(row_id in ("no_new_privs", "session.ttl", "session.audit", "proxy_env", "env") for _, row_id in held)


@pytest.mark.parametrize(("abi", "held"), [
    (0, set()),
    (1, {"landlock.fs"}),
    (3, {"landlock.fs"}),
    (4, {"landlock.fs", "landlock.tcp"}),
    (5, {"landlock.fs", "landlock.tcp"}),
    (6, {"landlock.fs", "landlock.tcp", "landlock.scope"}),
    (7, {"landlock.fs", "landlock.tcp", "landlock.scope"}),
])
def test_each_landlock_row_is_held_from_the_abi_that_brought_it(monkeypatch: pytest.MonkeyPatch, abi: int,
                                                                 held: set[str]) -> None:
    _everything_built(monkeypatch)
    plan = build_plan(load(FULL), dataclasses.replace(FULL_KERNEL, landlock_abi=abi))
    landlock = {row.row_id: row for row in plan.rows if row.component == "app" and row.row_id.startswith("landlock")}
    assert {row_id for row_id, row in landlock.items() if row.held} == held
    for row_id in landlock.keys() - held:
        assert f"this kernel has ABI {abi}" in landlock[row_id].why_unheld


@pytest.mark.parametrize(("abi", "covered"), [(8, False), (9, True), (10, True)])
def test_sockets_appearing_in_read_paths_are_covered_from_abi_9(abi: int, covered: bool) -> None:
    plan = build_plan(load(FULL), dataclasses.replace(FULL_KERNEL, landlock_abi=abi))
    assert load(FULL).app.files_read
    assert (not any("files.read" in gap for gap in plan.not_covered)) == covered


def test_a_row_can_be_built_for_one_component_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_module, "IMPLEMENTED_ROWS", frozenset({"app:uid", "seccomp"}))
    plan = build_plan(load(FULL), FULL_KERNEL)
    held = {(row.component, row.row_id) for row in plan.rows if row.held}
    assert ("app", "uid") in held and ("fs", "uid") not in held
    assert {("fs", "seccomp"), ("model", "seccomp"), ("app", "seccomp")} <= held


def test_kinds() -> None:
    plan = build_plan(load(FULL), FULL_KERNEL)
    kinds = {(row.component, row.row_id): row.kind for row in plan.rows}
    assert kinds[("app", "proxy_env")] == SETTING
    assert kinds[("app", "landlock.fs")] == kinds[("fs", "fs.read_only")] == kinds[("net", "net.allow")] == BOUNDARY
    assert set(kinds.values()) <= {"Boundary", "Setting", "Expectation"}


def test_components_say_what_each_may_touch() -> None:
    plan = build_plan(load(FULL), FULL_KERNEL)
    by_role = {component.role: component for component in plan.components}
    assert [component.role for component in plan.components] == ["app", "fs", "net", "keys", "shell", "model"]
    app = by_role["app"]
    assert "/opt/agent" in app.reads and "/opt/agent/bin" in app.executes
    assert "/srv/sh-test/ws" not in app.writes and "/srv/sh-test/ws" in by_role["fs"].writes
    assert "pypi.org:443 via the net door" in app.connects and app.edges_out == ("fs", "net", "shell", "model")
    # no component reads a secret source by its path, the keys door included (it gets an fd)
    assert by_role["keys"].edges_in == ("net", "model")
    assert "/etc/sharness/secrets/anthropic" not in by_role["keys"].reads
    assert "https://api.anthropic.com" in by_role["model"].connects
    assert (by_role["shell"].max_memory_mb, by_role["shell"].max_pids) == (1024, 128)
    assert "/srv/sh-test/ws" not in by_role["shell"].reads  # shell.workspace is "none"


def test_json_and_text() -> None:
    plan = build_plan(load(FULL), FULL_KERNEL)
    data = json.loads(json.dumps(plan.as_dict()))
    assert data["unheld_count"] == plan.unheld_count and data["row_count"] == len(plan.rows)
    assert set(data["rows"][0]) == {"component", "row_id", "meaning", "kind", "held_by", "held", "why_unheld",
                                    "kernel_can_hold"}
    text = render_plan(plan)
    assert f"{plan.unheld_count} of {len(plan.rows)} rows unheld on this machine" in text
    assert plan.sha256 in text and "\x1b" not in text


def test_known_gaps_are_said_not_hidden() -> None:
    plan = build_plan(load(FULL), FULL_KERNEL)
    assert any("files.read" in gap and "ABI 7" in gap for gap in plan.not_covered)
    assert all(f"not covered: {gap}" in render_plan(plan) for gap in plan.not_covered)
    assert plan.as_dict()["not_covered"] == list(plan.not_covered)


def test_check_says_which_allowed_hosts_a_shared_cdn_fronts() -> None:
    """SNI allowlisting cannot stop domain fronting there (docs/decisions/net.md); the FULL sample allows
    pypi.org, which Fastly serves."""
    plan = build_plan(load(FULL), FULL_KERNEL)
    fronted = [gap for gap in plan.not_covered if gap.startswith("net.allow ")]
    assert any("pypi.org:443: served by Fastly" in gap and "domain fronting" in gap for gap in fronted), fronted
    assert all(f"not covered: {gap}" in render_plan(plan) for gap in fronted)


def test_the_model_rows_say_the_upstream_the_budget_and_that_the_kernel_admits_the_caller() -> None:
    rows = {row.row_id: row for row in build_plan(load(FULL), FULL_KERNEL).rows if row.component == "model"}
    assert {"model.upstream", "model.secret", "model.models", "model.budget_microusd", "model.listener"} <= set(rows)
    listener = rows["model.listener"]
    assert listener.held and listener.held_by == "the kernel (network namespace)"
    assert "127.0.0.1:3129" in listener.meaning
    twin = build_plan(load(sample(doors__model={"upstream": "twin", "budget_microusd": 5})), FULL_KERNEL)
    twin_rows = {row.row_id: row for row in twin.rows if row.component == "model"}
    assert "model.secret" not in twin_rows and "no internet socket" in twin_rows["model.upstream"].meaning
    model = next(component for component in twin.components if component.role == "model")
    assert model.tcp_connect == () and model.connects[-1] == "nothing: the built-in twin"


EXAMPLES = Path(__file__).resolve().parents[3] / "manifests" / "examples"


@pytest.mark.parametrize("name", [*sorted(path.name for path in EXAMPLES.glob("*.json")), "demo/manifest.json"])
def test_every_row_of_the_bundled_examples_has_its_holder(name: str) -> None:
    """What the README says of manifests/examples: `check` finds no row this version cannot hold."""
    path = EXAMPLES / name
    plan = build_plan(load(json.loads(path.read_text())), FULL_KERNEL)
    assert plan.unheld_count == 0, [row.row_id for row in plan.rows if not row.held]


def test_the_workspace_mount_rows_are_held_only_where_fuse_is() -> None:
    """app.workspace "mount": two rows for the app, held with /dev/fuse and pyfuse3; without them unheld, saying
    why (run refuses the session with 78 naming the row); the app's Landlock then reads and writes the mount."""
    manifest = load(sample(app__workspace="mount"))
    rows = {row.row_id: row for row in build_plan(manifest, FULL_KERNEL).rows if row.component == "app"}
    assert rows["workspace.mount"].held and rows["workspace.unmount"].held
    assert rows["workspace.mount"].kind == BOUNDARY and "fuse" in rows["workspace.mount"].held_by.lower()
    missing = dataclasses.replace(FULL_KERNEL, fuse_missing="/dev/fuse is missing")
    unheld = {row.row_id: row for row in build_plan(manifest, missing).rows if row.component == "app"}
    assert not unheld["workspace.mount"].held and "/dev/fuse is missing" in unheld["workspace.mount"].why_unheld
    app = next(component for component in build_plan(manifest, FULL_KERNEL).components if component.role == "app")
    assert manifest.workspace in app.writes and manifest.workspace in app.reads
    without = load(sample())
    assert not any(row.row_id.startswith("workspace.") for row in build_plan(without, FULL_KERNEL).rows)


def _net_rows(document: dict[str, object]) -> dict[str, list[plan_module.PlanRow]]:
    found: dict[str, list[plan_module.PlanRow]] = {}
    for row in build_plan(load(document), FULL_KERNEL).rows:
        if row.component == "net":
            found.setdefault(row.row_id, []).append(row)
    return found


def test_an_internal_row_is_shown_as_a_weakening_with_its_kind() -> None:
    document = sample(doors__net={"allow": {"app": ["pypi.corp.example:443", "pypi.org:443"]},
                                  "internal": {"app": {"pypi.corp.example:443": ["10.20.0.0/16"]}}})
    [internal] = _net_rows(document)["net.internal"]
    assert internal.held and internal.kind == BOUNDARY
    assert internal.meaning.startswith("weakens net.addresses (kind: private destination) for app "
                                       "pypi.corp.example:443 only")
    assert "10.20.0.0/16" in internal.meaning and "never loopback, link-local or this host" in internal.meaning
    assert "net.internal" not in _net_rows(FULL)


def test_check_says_the_wildcard_cap_and_the_dns_channel_it_leaves() -> None:
    """FULL allows *.pythonhosted.org:443: the app picks names under it, each a query to that zone's servers."""
    plan = build_plan(load(FULL), FULL_KERNEL)
    [cap] = [row for row in plan.rows if row.row_id == "net.wildcard_names"]
    assert cap.held and "at most 256 distinct names" in cap.meaning
    [gap] = [gap for gap in plan.not_covered if "*.pythonhosted.org:443: the app chooses" in gap]
    assert "up to 256 names" in gap and "doors.net.max_wildcard_names" in gap
    lowered = build_plan(load(sample(doors__net__max_wildcard_names=16)), FULL_KERNEL)
    assert any("up to 16 names" in gap for gap in lowered.not_covered)
    no_wildcard = sample(doors__net={"allow": {"app": ["pypi.org:443"]}})
    assert "net.wildcard_names" not in _net_rows(no_wildcard)


def test_an_upstream_proxy_is_the_one_address_the_net_door_dials() -> None:
    document = sample(doors__net__upstream_proxy={"address": "proxy.corp.example:3128"})
    plan = build_plan(load(document), FULL_KERNEL)
    [net] = [component for component in plan.components if component.role == "net"]
    assert net.tcp_connect == (53, 3128)  # the kernel's port list: the proxy's and the resolver's only
    assert "the upstream proxy proxy.corp.example:3128 only" in net.connects
    rows = _net_rows(document)
    [proxy] = rows["net.upstream_proxy"]
    assert proxy.held and "no credential" in proxy.meaning
    [addresses] = rows["net.addresses"]
    assert addresses.kind == BOUNDARY


def test_when_the_upstream_proxy_resolves_the_address_rule_is_its_own() -> None:
    document = sample(doors__net__upstream_proxy={"address": "proxy.corp.example:3128", "resolve": "proxy"})
    [addresses] = _net_rows(document)["net.addresses"]
    assert addresses.kind == EXPECTATION and "not held by the net door" in addresses.meaning


def test_an_overlay_says_where_commands_write_and_that_only_the_fs_door_applies_it() -> None:
    plan = build_plan(load(sample(doors__shell__workspace="overlay", doors__shell__overlay_mb=96,
                                  doors__fs__hidden=[])), FULL_KERNEL)
    rows = {row.row_id: row for row in plan.rows if row.component == "shell"}
    assert "overlay" in rows["shell.workspace"].meaning and "96 MiB" in rows["shell.workspace"].meaning
    assert "never executable" in rows["shell.workspace"].held_by and rows["shell.workspace"].held
    apply = rows["shell.apply"]
    assert apply.held and apply.kind == BOUNDARY and "fs door" in apply.held_by and "refused stays" in apply.meaning
    shell = next(component for component in plan.components if component.role == "shell")
    assert "/srv/sh-test/ws" in shell.reads and "/srv/sh-test/ws" in shell.writes
    assert "/srv/sh-test/ws" not in shell.executes and "fs" in shell.edges_out
    assert "shell.apply" not in _ids(build_plan(load(FULL), FULL_KERNEL), "shell")
