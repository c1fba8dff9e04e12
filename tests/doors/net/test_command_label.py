"""The command label of an egress request: the id a Proxy-Authorization's user names, nothing else. Pure."""

from __future__ import annotations

import base64

import pytest

from doors.net._command_label import command_label
from doors.net._policy import Allowlist
from doors.net.proxy import Proxy, ProxyConfig


def _basic(user: str) -> list[tuple[bytes, bytes]]:
    return [(b"host", b"x"), (b"proxy-authorization", b"Basic " + base64.b64encode(f"{user}:".encode()))]


@pytest.mark.parametrize(("headers", "label"), [
    (_basic("cmd-c5"), "c5"),
    (_basic("cmd-c123456789012"), "c123456789012"),
    ([(b"Proxy-Authorization", b"basic " + base64.b64encode(b"cmd-c7:anything"))], "c7"),
    (_basic("cmd-c1234567890123"), ""),  # longer than an id
    (_basic("cmd-x5"), ""),
    (_basic("cmd-c5\ninjected"), ""),
    (_basic("someone"), ""),
    ([(b"proxy-authorization", b"Bearer " + base64.b64encode(b"cmd-c5:"))], ""),
    ([(b"proxy-authorization", b"Basic !!notbase64")], ""),
    ([(b"proxy-authorization", b"Basic " + b"A" * 200)], ""),
    ([(b"host", b"x")], ""),
    ([], ""),
])
def test_only_a_command_ids_shape_is_taken(headers: list[tuple[bytes, bytes]], label: str) -> None:
    assert command_label(headers) == label


async def test_the_shells_requests_carry_the_label_in_both_events_and_the_apps_do_not() -> None:
    proxy = Proxy(ProxyConfig(Allowlist.from_rows({})), audit=lambda event: None)
    shell = proxy.exchange("shell", b"CONNECT", b"pypi.org:443", _basic("cmd-c9"))
    assert shell.open_event("allow")["command"] == "c9" and shell.event(0.0)["command"] == "c9"
    app = proxy.exchange("app", b"CONNECT", b"pypi.org:443", _basic("cmd-c9"))
    assert "command" not in app.open_event("allow") and "command" not in app.event(0.0)
