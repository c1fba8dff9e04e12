"""What each door is told: its rows (the fs door also its workspace), its fd numbers, its DoorContract."""

from __future__ import annotations

import copy
import json

import pytest
from manifest_shapes import SHAPES, WORKSPACE
from manifests.samples import load, sample

from doors._contract import DoorContract
from launcher.manifest import load_manifest
from launcher.policy.contracts import DoorFds, door_contract, door_fds, door_rows

FULL = SHAPES["full"]


@pytest.mark.parametrize("role", ["fs", "net", "shell", "model"])
def test_door_rows_are_the_manifests_and_the_fs_door_also_gets_its_workspace(role: str) -> None:
    rows = door_rows(FULL, role)
    want = {**FULL.door_rows(role), **({"workspace": WORKSPACE} if role == "fs" else {})}
    assert rows == want
    rows["injected"] = True
    if isinstance(rows.get("allow"), dict):
        rows["allow"]["app"] = ["evil.test:443"]
    assert door_rows(FULL, role) == want  # a copy: the manifest's rows cannot be changed through it


def test_the_keys_door_is_not_told_where_its_secrets_lie() -> None:
    rows = door_rows(FULL, "keys")
    manifest_rows = FULL.door_rows("keys")["secrets"]
    assert manifest_rows and all("from" in row for row in manifest_rows.values())
    assert rows["secrets"] == {name: {k: v for k, v in row.items() if k != "from"}
                               for name, row in manifest_rows.items()}
    assert "from" in FULL.door_rows("keys")["secrets"][next(iter(manifest_rows))]  # the manifest's own, kept


def test_the_keys_door_gets_one_fd_per_secret_after_its_listener() -> None:
    fds = door_fds("keys", ("app",), ("openai", "anthropic"))
    assert fds.secrets == {"anthropic": 6, "openai": 7} and fds.keep == (0, 1, 2, 3, 4, 5, 6, 7)
    assert door_fds("net", ("app",), ("anthropic",)).secrets == {}  # no other door holds a secret
    contract = door_contract(FULL, "keys", "0123abcd", "", fds, 0)
    assert contract.rows["secret_fds"] == {"anthropic": 6, "openai": 7}
    assert contract.listen_fds == {"door": 5}
    assert all(row["from"] not in contract.to_json() for row in FULL.door_rows("keys")["secrets"].values())


def test_a_sealed_secret_is_named_sealed_and_the_machine_key_follows_the_secrets() -> None:
    document = copy.deepcopy(FULL.document)
    secrets = document["doors"]["keys"]["secrets"]
    first = sorted(secrets)[0]
    secrets[first]["from"] = "sealed:in-store"
    manifest = load_manifest(json.dumps(document).encode())
    rows = door_rows(manifest, "keys")
    assert rows["secrets"][first]["sealed"] == "in-store" and "from" not in rows["secrets"][first]
    assert all("sealed" not in row for name, row in rows["secrets"].items() if name != first)
    fds = door_fds("keys", ("app",), tuple(secrets), sealed=True)
    assert fds.machine_key == 6 + len(secrets) and fds.keep == tuple(range(7 + len(secrets)))
    assert door_contract(manifest, "keys", "0123abcd", "", fds, 0).rows["machine_key_fd"] == 6 + len(secrets)
    assert door_fds("net", ("app",), tuple(secrets), sealed=True).machine_key is None
    assert door_fds("keys", ("app",), tuple(secrets)).machine_key is None


@pytest.mark.parametrize(("role", "proxy_clients", "listen_fds", "keep"), [
    ("fs", (), {"door": 5}, (0, 1, 2, 3, 4, 5)),
    ("keys", ("app",), {"door": 5}, (0, 1, 2, 3, 4, 5)),  # only the net door holds proxy listeners
    ("net", (), {"door": 5}, (0, 1, 2, 3, 4, 5)),
    ("net", ("app",), {"door": 5, "proxy.app": 6}, (0, 1, 2, 3, 4, 5, 6)),
    ("net", ("shell", "app"), {"door": 5, "proxy.app": 6, "proxy.shell": 7}, (0, 1, 2, 3, 4, 5, 6, 7)),
])
def test_the_fd_contract(role: str, proxy_clients: tuple[str, ...], listen_fds: dict[str, int],
                         keep: tuple[int, ...]) -> None:
    fds = door_fds(role, proxy_clients)
    assert (fds.svid, fds.door) == (4, 5)  # docs/contracts.md: 3 status, 4 SVID memfd, 5.. listeners
    assert fds.listen_fds == listen_fds and fds.keep == keep
    targets = [fds.svid, fds.door, *fds.proxies.values()]
    assert len(set(targets)) == len(targets) and 3 not in targets


def test_the_contract_says_who_the_door_is_and_nothing_more() -> None:
    fds = DoorFds(svid=4, door=5, proxies={"app": 6})
    contract = door_contract(FULL, "net", "0123abcd", "-----BEGIN CERTIFICATE-----\n", fds, 1_700_000_000)
    assert contract == DoorContract(
        role="net", session_id="0123abcd", trust_domain="t.sharness.test", edges=tuple(sorted(FULL.edges)),
        bundle_pem="-----BEGIN CERTIFICATE-----\n", rows=FULL.door_rows("net"),
        listen_fds={"door": 5, "proxy.app": 6}, not_after=1_700_000_000,
    )
    assert DoorContract.from_json(contract.to_json()) == contract
    assert door_contract(FULL, "fs", "0123abcd", "", door_fds("fs", ()), 0).rows["workspace"] == WORKSPACE


def test_the_model_door_holds_one_plain_http_listener_per_client_and_is_told_where_keys_listens() -> None:
    fds = door_fds("model", ("app",), ("anthropic",), ("shell", "app"))
    assert fds.listen_fds == {"door": 5, "model.app": 6, "model.shell": 7} and fds.keep == tuple(range(8))
    assert door_fds("net", ("app",), (), ("app",)).models == {}  # no other door holds one
    contract = door_contract(FULL, "model", "0123abcd", "", fds, 0)
    assert contract.listen_fds == {"door": 5, "model.app": 6, "model.shell": 7}
    assert contract.rows["keys_socket"] == "/run/sharness/0123abcd/doors/keys.sock"


def test_a_shell_with_an_overlay_is_told_its_workspace_its_upper_layer_and_the_fs_doors_socket() -> None:
    overlay = load(sample(doors__shell__workspace="overlay", doors__fs__hidden=[]))
    rows = door_contract(overlay, "shell", "0123abcd", "", door_fds("shell", ()), 0).rows
    assert (rows["workspace"], rows["workspace_dir"]) == ("overlay", WORKSPACE)
    assert rows["overlay_upper"] == "/run/sharness/0123abcd/shell/upper"
    assert rows["fs_socket"] == "/run/sharness/0123abcd/doors/fs.sock"
    plain = door_contract(FULL, "shell", "0123abcd", "", door_fds("shell", ()), 0).rows
    assert not {"overlay_upper", "fs_socket", "workspace_dir"} & set(plain)
