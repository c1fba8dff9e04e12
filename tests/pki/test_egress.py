"""The egress CA: leaves for the bound hosts verify; a leaf its key signs for any other name does not."""

from __future__ import annotations

import datetime as dt
import ssl
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pki.egress import (
    EgressError,
    check_hosts,
    constrained_hosts,
    issue_host_leaf,
    leaves_pem,
    new_egress_ca,
    sign_host_leaf,
    split_leaves,
    verify_host_leaf,
)
from pki.issue import PrivateKey, new_key

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
HOSTS = ("git.sharness.test", "api.example.org")


@pytest.fixture(scope="module")
def ca() -> tuple[PrivateKey, x509.Certificate]:
    return new_egress_ca(HOSTS, 3600, NOW)


def _forged(ca: tuple[PrivateKey, x509.Certificate], name: str) -> x509.Certificate:
    """What a stolen egress key could sign: a leaf for `name` (issue_host_leaf refuses; sign_host_leaf does not)."""
    key, cert = ca
    return sign_host_leaf(key, cert, name, new_key(), NOW - dt.timedelta(minutes=1), NOW + dt.timedelta(minutes=30))


def test_the_constraint_is_critical_and_names_exactly_the_bound_hosts(ca: tuple[PrivateKey, x509.Certificate]) -> None:
    _, cert = ca
    ext = cert.extensions.get_extension_for_class(x509.NameConstraints)
    assert ext.critical
    assert sorted(constrained_hosts(cert)) == sorted(HOSTS)
    basic = cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert basic.critical and basic.value.ca and basic.value.path_length == 0


@pytest.mark.parametrize("host", HOSTS)
def test_a_leaf_for_a_bound_host_verifies(ca: tuple[PrivateKey, x509.Certificate], host: str) -> None:
    key, cert = ca
    _, leaf = issue_host_leaf(key, cert, host, NOW, 600)
    verify_host_leaf(cert, leaf, host, NOW)
    assert leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName) == [host]


@pytest.mark.parametrize("name", ["github.com", "sharness.test", "agit.sharness.test", "api.example.org.evil"])
def test_a_leaf_the_key_signs_for_another_name_fails_the_constraint(ca: tuple[PrivateKey, x509.Certificate],
                                                                     name: str) -> None:
    _, cert = ca
    with pytest.raises(EgressError, match="does not verify"):
        verify_host_leaf(cert, _forged(ca, name), name, NOW)


def test_openssl_refuses_the_forged_leaf_too(ca: tuple[PrivateKey, x509.Certificate], tmp_path: Path) -> None:
    """What curl, git and Python's ssl use: `openssl verify` with the egress CA as the only anchor."""
    _, cert = ca
    anchor = tmp_path / "ca.pem"
    anchor.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    for name, ok in (("git.sharness.test", True), ("github.com", False), ("sharness.test", False)):
        leaf = tmp_path / f"{name}.pem"
        leaf.write_bytes(_forged(ca, name).public_bytes(serialization.Encoding.PEM))
        done = subprocess.run(["openssl", "verify", "-CAfile", str(anchor), "-attime",
                               str(int(NOW.timestamp())), "-verify_hostname", name, str(leaf)],
                              capture_output=True, text=True, check=False)
        assert (done.returncode == 0) is ok, (name, done.stdout + done.stderr)
        if not ok:
            assert "name constraint" in done.stdout + done.stderr or "permitted" in done.stdout + done.stderr


def test_issue_refuses_a_host_the_ca_is_not_bound_to(ca: tuple[PrivateKey, x509.Certificate]) -> None:
    key, cert = ca
    with pytest.raises(EgressError, match="not a host this egress CA is bound to"):
        issue_host_leaf(key, cert, "github.com", NOW, 600)


@pytest.mark.parametrize("hosts", [(), ("localhost",), ("192.0.2.1",), ("*.example.org",), ("Git.Example.org",)])
def test_bound_hosts_are_dns_names(hosts: tuple[str, ...]) -> None:
    with pytest.raises(EgressError):
        check_hosts(hosts)


def test_leaves_go_through_the_memfd_form_and_back(ca: tuple[PrivateKey, x509.Certificate]) -> None:
    key, cert = ca
    leaves = {host: issue_host_leaf(key, cert, host, NOW, 600) for host in HOSTS}
    back = split_leaves(leaves_pem(leaves))
    assert sorted(back) == sorted(HOSTS)
    for host, pem in back.items():
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        path = Path(f"/dev/shm/egress-test-{host}.pem")
        try:
            path.write_bytes(pem)
            context.load_cert_chain(str(path))
        finally:
            path.unlink()
    with pytest.raises(EgressError):
        split_leaves(leaves_pem(leaves)[:-40])
