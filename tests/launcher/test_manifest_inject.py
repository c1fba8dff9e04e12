"""`doors.net.inject` rows: what a manifest may bind, each refusal with its pointer, and what the plan says."""

from __future__ import annotations

from typing import Any

import pytest
from manifests.samples import FULL, load, sample

from launcher.kernel.probe_facts import FULL_KERNEL
from launcher.manifest import ManifestError
from launcher.policy.contracts import door_contract, door_fds
from launcher.policy.environment import app_env
from launcher.policy.layout import SessionPaths
from launcher.policy.plan import build_plan
from pki.vocabulary import BOUNDARY, TRUST_VARIABLES

ANTHROPIC = FULL["doors"]["keys"]["secrets"]["anthropic"]
GH = {"from": "/etc/sharness/secrets/gh", "roles": ["net"], "hosts": ["github.com"]}
RULE = {"host": "github.com:443", "secret": "gh", "format": "basic", "path_prefix": "/org/"}
SECRETS = {"anthropic": ANTHROPIC, "gh": GH}
ALLOW = {"app": ["pypi.org:443", "github.com:443"], "shell": ["pypi.org:443"]}


def bound(**changes: Any) -> dict[str, Any]:
    base = {"doors__keys__secrets": SECRETS, "doors__net__allow": ALLOW, "doors__net__inject": [RULE]}
    return sample(**{**base, **changes})


def refusal(document: dict[str, Any]) -> ManifestError:
    with pytest.raises(ManifestError) as refused:
        load(document)
    assert refused.value.hint
    return refused.value


def test_a_binding_loads_and_names_its_hosts() -> None:
    manifest = load(bound())
    assert manifest.bound_hosts == ("github.com",)
    assert load(sample()).bound_hosts == ()


@pytest.mark.parametrize(("changes", "pointer", "words"), [
    ({"doors__net__inject": [{**RULE, "secret": "nope"}]}, "/doors/net/inject/0/secret", "no secret"),
    ({"doors__keys__secrets": {**SECRETS, "gh": {**GH, "roles": ["model"]}}}, "/doors/net/inject/0/secret",
     "not given to role 'net'"),
    ({"doors__keys__secrets": {**SECRETS, "gh": {**GH, "hosts": ["gitlab.com"]}}}, "/doors/net/inject/0/secret",
     "not bound to 'github.com'"),
    ({"doors__net__allow": {"app": ["pypi.org:443"], "shell": ["pypi.org:443"]}}, "/doors/net/inject/0/host",
     "no doors.net.allow row"),
    ({"doors__net__inject": [{**RULE, "host": "192.0.2.1:443"}]}, "/doors/net/inject/0/host", "IP literal"),
    ({"doors__net__inject": [{**RULE, "host": "github.com"}]}, "/doors/net/inject/0/host", "host:port"),
    ({"doors__net__inject": [{**RULE, "format": "bearer", "header": "x-token"}]}, "/doors/net/inject/0/header",
     "use 'raw'"),
    ({"doors__net__inject": [{**RULE, "path_prefix": "/org/../x"}]}, "/doors/net/inject/0/path_prefix", "'..'"),
    ({"doors__net__ca_bundle": "certs/ca.pem"}, "/doors/net/ca_bundle", "path"),
])
def test_refusals(changes: dict[str, Any], pointer: str, words: str) -> None:
    error = refusal(bound(**changes))
    assert error.pointer == pointer and words in error.message, (error.pointer, error.message)


def test_a_wildcard_allow_row_reaches_a_bound_host() -> None:
    allow = {"app": ["pypi.org:443", "*.github.com:443"], "shell": ["pypi.org:443"]}
    rule = {**RULE, "host": "api.github.com:443"}
    secrets = {**SECRETS, "gh": {**GH, "hosts": ["api.github.com"]}}
    assert load(bound(doors__net__allow=allow, doors__net__inject=[rule], doors__keys__secrets=secrets))


def test_the_plan_shows_each_binding_as_a_boundary_of_the_net_door() -> None:
    plan = build_plan(load(bound(doors__net__ca_bundle="/etc/ssl/corp.pem")), FULL_KERNEL)
    rows = [row for row in plan.rows if row.row_id == "net.inject"]
    assert len(rows) == 1 and rows[0].held and rows[0].kind == BOUNDARY and rows[0].component == "net"
    assert "secret gh (basic" in rows[0].meaning and "github.com:443/org/*" in rows[0].meaning
    assert "/etc/ssl/corp.pem" in rows[0].meaning and "never holds it" in rows[0].meaning
    assert any("not redacted" in gap for gap in plan.not_covered)
    assert not [row for row in build_plan(load(sample()), FULL_KERNEL).rows if row.row_id == "net.inject"]


def test_the_app_trusts_the_egress_bundle_only_with_a_binding() -> None:
    manifest = load(bound())
    layout = SessionPaths(_SID)
    env = app_env(manifest, layout, "/usr")
    assert {env[name] for name in TRUST_VARIABLES} == {f"{layout.private_dir('app')}/egress-bundle.pem"}
    assert not set(TRUST_VARIABLES) & set(app_env(load(sample()), layout, "/usr"))


def test_the_net_door_gets_its_leaves_after_its_listeners_and_the_keys_socket() -> None:
    manifest = load(bound())
    fds = door_fds("net", ["app", "shell"], egress=True)
    assert (fds.proxies, fds.egress) == ({"app": 6, "shell": 7}, 8) and fds.keep[-1] == 8
    contract = door_contract(manifest, "net", _SID, "", fds, 0)
    assert contract.rows["egress_fd"] == 8 and contract.rows["keys_socket"].endswith("/doors/keys.sock")
    assert door_fds("net", ["app"]).egress is None
    assert "egress_fd" not in door_contract(load(sample()), "net", _SID, "", door_fds("net", ["app"]), 0).rows


_SID = "0123abcd"
