"""The CA child mints the egress CA with the session's: the net door's memfd gets the leaves, the parent the CA."""

from __future__ import annotations

import datetime as dt
import fcntl
import os
from collections.abc import Iterator

import pytest
from cryptography import x509

from pki import ca, egress

TD = "test.sharness.test"
SID = "0123abcd"
HOSTS = ("git.sharness.test", "api.sharness.test")


@pytest.fixture
def fds() -> Iterator[tuple[int, int]]:
    svid, leaves = ca.new_svid_memfd("net"), ca.new_svid_memfd("egress")
    try:
        yield svid, leaves
    finally:
        os.close(svid)
        os.close(leaves)


def test_the_egress_leaves_go_to_their_memfd_and_verify_against_the_returned_ca(fds: tuple[int, int]) -> None:
    svid, leaves = fds
    minted = ca.mint_session(TD, SID, ("net",), 600, {"net": ca.MemfdDelivery(svid)},
                             ca.EgressDelivery(HOSTS, leaves))
    assert minted.egress_ca_pem is not None and b"PRIVATE" not in minted.egress_ca_pem
    egress_ca = x509.load_pem_x509_certificate(minted.egress_ca_pem)
    assert sorted(egress.constrained_hosts(egress_ca)) == sorted(HOSTS)
    per_host = egress.split_leaves(os.pread(leaves, 1 << 16, 0))
    assert sorted(per_host) == sorted(HOSTS)
    for host, pem in per_host.items():
        leaf = x509.load_pem_x509_certificate(pem[pem.index(b"-----BEGIN CERTIFICATE"):])
        egress.verify_host_leaf(egress_ca, leaf, host, dt.datetime.now(dt.UTC))
    session_ca = x509.load_pem_x509_certificate(minted.bundle_pem)
    assert session_ca.subject != egress_ca.subject  # two CAs: a session SVID is never an egress leaf, nor back
    assert fcntl.fcntl(leaves, fcntl.F_GET_SEALS) & fcntl.F_SEAL_WRITE


def test_without_bindings_there_is_no_egress_ca(fds: tuple[int, int]) -> None:
    svid, leaves = fds
    minted = ca.mint_session(TD, SID, ("net",), 600, {"net": ca.MemfdDelivery(svid)})
    assert minted.egress_ca_pem is None and os.fstat(leaves).st_size == 0


def test_a_bad_host_is_refused_before_the_child_starts(fds: tuple[int, int]) -> None:
    svid, leaves = fds
    with pytest.raises(egress.EgressError):
        ca.mint_session(TD, SID, ("net",), 600, {"net": ca.MemfdDelivery(svid)},
                        ca.EgressDelivery(("192.0.2.1",), leaves))
    assert os.fstat(svid).st_size == 0
