"""The door client's policy without I/O: events in, the next action out, for every rule it holds."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from doors._transport._pyossl_errors import as_ssl_error
from doors._transport.client_policy import (
    IDEMPOTENT,
    Action,
    ClientPolicy,
    Connect,
    Dial,
    Failure,
    Finish,
    Probe,
    Raise,
    Receive,
    Send,
    failure_error,
)
from doors.client import DoorNotTrusted, DoorRefused, DoorUnavailable
from pki.testing import SessionPKI

PKI = SessionPKI.create()
NOW = dt.datetime.now(dt.UTC)
SESSION = object()  # a TLS session is opaque to the policy
DIAL = Dial("fs", "/run/sharness/0123abcd/doors/fs.sock", None, PKI.trust_domain, PKI.session_id, "app")  # type: ignore[arg-type]


def _der(pem: bytes) -> bytes:
    return x509.load_pem_x509_certificates(pem)[0].public_bytes(Encoding.DER)


FS_DER = PKI.cert("fs").public_bytes(Encoding.DER)
NET_DER = PKI.cert("net").public_bytes(Encoding.DER)


def _http(status: int = 200, body: bytes = b"{}", close: bool = False) -> bytes:
    head = f"HTTP/1.1 {status} X\r\ncontent-length: {len(body)}\r\n" + ("connection: close\r\n" if close else "")
    return head.encode() + b"\r\n" + body


REFUSED_EDGE = _http(403, json.dumps({"error": "edges", "who": "fs", "detail": "edge app->fs is not listed",
                                      "hint": "add it to the manifest row `edges`"}).encode(), close=True)
FORBIDDEN_ROW = _http(403, json.dumps({"error": "read_only", "who": "fs", "detail": "x", "hint": "y"}).encode())


def _through(policy: ClientPolicy, step: Action, answer: bytes = b"") -> Action:
    """Drive `step` the way a driver does when every I/O succeeds and the door answers `answer`."""
    while isinstance(step, (Connect, Probe, Send, Receive)):
        if isinstance(step, Connect):
            step = policy.connected(FS_DER, NOW)
        elif isinstance(step, Probe):
            step = policy.probed(False)
        elif isinstance(step, Send):
            step = policy.sent()
        else:
            step = policy.received(answer or _http())
    return step


def _kept(resume: bool = True) -> ClientPolicy:
    """A policy whose driver holds a kept-alive connection after one GET."""
    policy = ClientPolicy(DIAL, resume=resume)
    finish = _through(policy, policy.begin("GET", "/v0/hello"))
    assert isinstance(finish, Finish) and not finish.close
    if finish.read_session:
        policy.keep_session(SESSION)
    return policy


# --- dialling, reuse, and a stale connection --------------------------------------------------------------


@pytest.mark.parametrize(("resume", "offered"), [(True, SESSION), (False, None)])
def test_a_new_connection_offers_the_kept_session_only_when_resuming(resume: bool, offered: object) -> None:
    policy = ClientPolicy(DIAL, resume=resume, tls_session=SESSION)
    assert policy.begin("GET", "/v0/hello") == Connect(offered)  # type: ignore[arg-type]


def test_a_kept_connection_is_probed_and_reused_when_quiet() -> None:
    policy = _kept()
    assert isinstance(policy.begin("GET", "/v0/hello"), Probe)
    step = policy.probed(False)
    assert isinstance(step, Send) and step.data.startswith(b"GET /v0/hello HTTP/1.1")


def test_a_kept_connection_readable_while_idle_was_closed_by_the_door_and_is_replaced() -> None:
    policy = _kept()
    assert isinstance(policy.begin("GET", "/v0/hello"), Probe)
    assert policy.probed(True) == Connect(SESSION)  # type: ignore[arg-type]
    assert not policy.holding


def test_without_a_kept_connection_nothing_is_probed() -> None:
    policy = _kept()
    policy.dropped()
    assert isinstance(policy.begin("GET", "/v0/hello"), Connect)


@pytest.mark.parametrize(("resume", "reads"), [(True, [True, False, False]), (False, [False, False, False])])
def test_the_tls_session_is_read_once_per_connection(resume: bool, reads: list[bool]) -> None:
    policy = ClientPolicy(DIAL, resume=resume)
    told = []
    for _ in reads:
        finish = _through(policy, policy.begin("GET", "/v0/hello"))
        assert isinstance(finish, Finish)
        told.append(finish.read_session)
    assert told == reads


def test_a_new_connection_reads_its_session_again_and_offers_the_last_one() -> None:
    policy = _kept()
    assert isinstance(policy.begin("GET", "/"), Probe)
    assert policy.probed(True) == Connect(SESSION)  # type: ignore[arg-type]
    finish = _through(policy, policy.connected(FS_DER, NOW))
    assert isinstance(finish, Finish) and finish.read_session
    newer = object()
    policy.keep_session(newer)
    policy.dropped()
    assert policy.begin("GET", "/") == Connect(newer)  # type: ignore[arg-type]


@pytest.mark.parametrize(("answer", "close"), [(_http(), False), (_http(close=True), True)])
def test_a_response_that_closes_the_connection_is_not_kept(answer: bytes, close: bool) -> None:
    policy = ClientPolicy(DIAL)
    finish = _through(policy, policy.begin("GET", "/"), answer)
    assert isinstance(finish, Finish) and finish.close is close and finish.response.status == 200
    assert policy.holding is not close


def test_a_response_comes_in_pieces() -> None:
    policy = ClientPolicy(DIAL)
    policy.begin("POST", "/v0/echo", b"hi")
    step = policy.connected(FS_DER, NOW)
    assert isinstance(step, Send) and step.data.endswith(b"\r\n\r\nhi")
    assert isinstance(policy.sent(), Receive)
    whole = _http(body=b"hi")
    assert isinstance(policy.received(whole[:10]), Receive)
    finish = policy.received(whole[10:])
    assert isinstance(finish, Finish) and finish.response.body == b"hi"


# --- the door's identity and its refusals -----------------------------------------------------------------


@pytest.mark.parametrize(("peer", "reason"), [
    (NET_DER, "role 'net', expected 'fs'"),
    (None, "presented no certificate"),
    (_der(PKI.odd_leaf("other_session", "fs")), "session"),
    (_der(PKI.odd_leaf("other_trust_domain", "fs")), "trust domain"),
    (_der(PKI.odd_leaf("two_uris", "fs")), "URI"),
])
def test_a_peer_that_is_not_the_dialled_door_of_this_session_is_not_trusted(peer: bytes | None, reason: str) -> None:
    policy = ClientPolicy(DIAL)
    policy.begin("GET", "/v0/hello")
    step = policy.connected(peer, NOW)
    assert isinstance(step, Raise) and isinstance(step.error, DoorNotTrusted)
    assert reason in step.error.reason
    assert not policy.holding and policy.phase == "idle"


def test_the_door_is_checked_on_every_connection_also_a_resumed_one() -> None:
    policy = _kept()
    policy.begin("GET", "/")
    assert policy.probed(True) == Connect(SESSION)  # type: ignore[arg-type]
    step = policy.connected(NET_DER, NOW)
    assert isinstance(step, Raise) and isinstance(step.error, DoorNotTrusted)


def test_a_transport_refusal_raises_and_a_door_rows_403_is_an_answer() -> None:
    policy = ClientPolicy(DIAL)
    step = _through(policy, policy.begin("GET", "/v0/hello"), REFUSED_EDGE)
    assert isinstance(step, Raise) and isinstance(step.error, DoorRefused)
    refusal = step.error.refusal
    assert (refusal.who, refusal.row) == ("fs", "edges") and "edge app->fs" in refusal.detail
    finish = _through(policy, policy.begin("PUT", "/v0/fs/files/x", b"x"), FORBIDDEN_ROW)
    assert isinstance(finish, Finish) and finish.response.status == 403


# --- failures in words, and the one retry ------------------------------------------------------------------

ALERT = as_ssl_error([("SSL routines", "", "tls alert unknown ca")], None)
VERIFY = as_ssl_error([("SSL routines", "", "certificate verify failed")], "unable to get local issuer certificate")
EOF_ERROR = as_ssl_error([("SSL routines", "", "unexpected eof while reading")], None)


@pytest.mark.parametrize(("failure", "connecting", "kind", "words"), [
    (Failure("unreachable", PermissionError(13, "Permission denied")), True, DoorRefused,
     "does not admit this process's uid"),
    (Failure("unreachable", FileNotFoundError(2, "No such file or directory")), True, DoorUnavailable,
     "cannot be reached: No such file or directory"),
    (Failure("tls", ALERT, ALERT), True, DoorRefused, "does not trust the CA"),
    (Failure("tls", ALERT, ALERT), False, DoorRefused, "does not trust the CA"),
    (Failure("tls", VERIFY, VERIFY), True, DoorNotTrusted, "not one of this session's SVIDs"),
    (Failure("tls", EOF_ERROR, EOF_ERROR), True, DoorUnavailable, "closed the connection during the TLS handshake"),
    (Failure("tls", ConnectionResetError(), None), True, DoorUnavailable, "during the TLS handshake"),
    (Failure("tls", ConnectionResetError("reset"), None), False, DoorUnavailable, "the TLS connection failed"),
    (Failure("timeout", TimeoutError()), True, DoorUnavailable, "did not finish the TLS handshake in time"),
    (Failure("timeout", TimeoutError()), False, DoorUnavailable, "did not answer in time"),
    (Failure("closed", BrokenPipeError(32, "Broken pipe")), True, DoorUnavailable,
     "maximum number of connections"),
    (Failure("closed", ConnectionResetError(104, "Connection reset by peer")), False, DoorUnavailable,
     "door 'fs': [Errno 104] Connection reset by peer"),
])
def test_each_failure_is_the_error_a_person_can_act_on(failure: Failure, connecting: bool, kind: type,
                                                       words: str) -> None:
    error = failure_error(DIAL, failure, connecting=connecting)
    assert type(error) is kind and words in str(error)
    assert error.__cause__ is failure.cause


def test_the_kernels_refusal_names_the_edge_to_list() -> None:
    error = failure_error(DIAL, Failure("unreachable", PermissionError(13, "Permission denied")), connecting=True)
    assert isinstance(error, DoorRefused) and error.refusal.who == "kernel" and "app->fs" in error.refusal.hint


BROKEN = Failure("closed", ConnectionResetError(104, "Connection reset by peer"))


def _fail_once_kept(method: str, failure: Failure | None, answer: bytes = b"") -> Action:
    """On a kept connection, begin `method` and fail while receiving (`failure`, or `answer` from the door)."""
    policy = _kept()
    policy.begin(method, "/x")
    policy.probed(False)
    policy.sent()
    return policy.failed(failure) if failure is not None else policy.received(answer)


@pytest.mark.parametrize("method", sorted(IDEMPOTENT))
@pytest.mark.parametrize(("failure", "answer"), [(BROKEN, b""), (None, b""), (None, b"not http\r\n\r\n")],
                         ids=["reset", "eof", "not-http"])
def test_an_idempotent_request_on_a_kept_connection_is_retried_on_a_new_one(
        method: str, failure: Failure | None, answer: bytes) -> None:
    assert _fail_once_kept(method, failure, answer) == Connect(SESSION)  # type: ignore[arg-type]


@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_a_request_that_is_not_idempotent_is_not_retried(method: str) -> None:
    step = _fail_once_kept(method, BROKEN)
    assert isinstance(step, Raise) and isinstance(step.error, DoorUnavailable)


def test_a_request_on_a_new_connection_is_not_retried() -> None:
    policy = ClientPolicy(DIAL)
    policy.begin("GET", "/x")
    policy.connected(FS_DER, NOW)
    policy.sent()
    step = policy.failed(BROKEN)
    assert isinstance(step, Raise) and isinstance(step.error, DoorUnavailable)


def test_a_refusal_is_not_retried() -> None:
    step = _fail_once_kept("GET", Failure("tls", ALERT, ALERT))
    assert isinstance(step, Raise) and isinstance(step.error, DoorRefused)


@pytest.mark.parametrize("second", ["connect", "exchange"])
def test_the_retry_happens_once(second: str) -> None:
    policy = _kept()
    policy.begin("GET", "/x")
    policy.probed(False)
    policy.sent()
    assert isinstance(policy.failed(BROKEN), Connect)
    if second == "connect":
        step = policy.failed(Failure("unreachable", ConnectionRefusedError(111, "Connection refused")))
    else:
        policy.connected(FS_DER, NOW)
        policy.sent()
        step = policy.failed(BROKEN)
    assert isinstance(step, Raise) and isinstance(step.error, DoorUnavailable)
    assert policy.phase == "idle" and not policy.holding


def test_a_stale_connection_then_a_failed_dial_still_gets_its_retry() -> None:
    # The request began on a kept connection: it counts as reused even when the probe dropped that one.
    policy = _kept()
    policy.begin("GET", "/x")
    policy.probed(True)
    assert isinstance(policy.failed(BROKEN), Connect)


# --- the order of events ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("event", "args"), [("received", (b"",)), ("sent", ()), ("probed", (False,)),
                                             ("connected", (FS_DER, NOW)), ("failed", (BROKEN,))])
def test_an_event_out_of_order_is_a_driver_bug(event: str, args: tuple[Any, ...]) -> None:
    with pytest.raises(RuntimeError, match="client policy"):
        getattr(ClientPolicy(DIAL), event)(*args)


def test_one_request_at_a_time() -> None:
    policy = ClientPolicy(DIAL)
    policy.begin("GET", "/")
    with pytest.raises(RuntimeError, match="expected idle"):
        policy.begin("GET", "/")
