"""Timing of the session PKI: the CA child minting every SVID, and the same work in-process."""

from __future__ import annotations

import os
import time

from bench._stats import percentile
from pki.ca import MemfdDelivery, mint_session, new_svid_memfd
from pki.testing import SessionPKI
from pki.vocabulary import ROLES

TRUST_DOMAIN = "bench.sharness.test"
SESSION_ID = "0badbe9c"


def _one_child_mint() -> float:
    fds = {role: new_svid_memfd(role) for role in ROLES}
    try:
        start = time.perf_counter_ns()
        mint_session(TRUST_DOMAIN, SESSION_ID, ROLES, 3600, {role: MemfdDelivery(fd) for role, fd in fds.items()})
        return (time.perf_counter_ns() - start) / 1e6
    finally:
        for fd in fds.values():
            os.close(fd)


def _one_in_process() -> float:
    start = time.perf_counter_ns()
    SessionPKI.create(TRUST_DOMAIN, SESSION_ID, ROLES, 3600)
    return (time.perf_counter_ns() - start) / 1e6


def measure(repeats: int) -> dict[str, float | int]:
    """Median of ``repeats`` CA-child mints (CA + one SVID per role into memfds) and in-process mints."""
    child = [_one_child_mint() for _ in range(repeats)]
    in_process = [_one_in_process() for _ in range(repeats)]
    return {
        "ca_and_svids_ms": round(percentile(child, 50), 3),
        "ca_and_svids_max_ms": round(max(child), 3),
        "ca_and_svids_n": repeats,
        "ca_and_svids_roles": len(ROLES),
        "pki_in_process_ms": round(percentile(in_process, 50), 3),
    }
