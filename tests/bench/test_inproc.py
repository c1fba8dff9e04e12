"""bench._inproc and bench._tls: both ends in one process; resumption really resumes, groups are as asked."""

from __future__ import annotations

import pytest
from OpenSSL._util import lib

from bench import _inproc
from bench._tls import TlsOptions, pyopenssl_context, stdlib_context
from bench.handshake import SessionFiles


def test_stdlib_resumption_resumes(session: SessionFiles) -> None:
    server = stdlib_context(session.server, True, TlsOptions())
    client = stdlib_context(session.client, False, TlsOptions())
    first = _inproc._stdlib_once(server, client, None)
    assert not first.session_reused
    assert _inproc._stdlib_once(server, client, first.session).session_reused


def test_pyopenssl_resumption_resumes_after_a_clean_shutdown(session: SessionFiles) -> None:
    server = pyopenssl_context(session.server, True, TlsOptions())
    client = pyopenssl_context(session.client, False, TlsOptions())
    ticket = _inproc._pyopenssl_once(server, client, None).get_session()
    again = _inproc._pyopenssl_once(server, client, ticket)
    assert lib.SSL_session_reused(again._ssl) == 1


@pytest.mark.parametrize(("group", "negotiated"), [("", "X25519MLKEM768"), ("X25519", "x25519"),
                                                   ("P-256", "secp256r1")])
def test_pyopenssl_group_is_the_one_asked_for(session: SessionFiles, group: str, negotiated: str) -> None:
    options = TlsOptions(group=group)
    server = pyopenssl_context(session.server, True, options)
    client = pyopenssl_context(session.client, False, options)
    assert _inproc._pyopenssl_once(server, client, None).get_group_name() == negotiated


def test_cpu_figures_are_positive(session: SessionFiles) -> None:
    assert _inproc.stdlib_cpu_ms(session.server, session.client, TlsOptions(num_tickets=0), 2) > 0
    assert _inproc.pyopenssl_cpu_ms(session.server, session.client, TlsOptions(), 2, resume=True) > 0
