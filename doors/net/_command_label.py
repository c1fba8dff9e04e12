"""Which shell command an egress request says it comes from. Pure: request headers in, a command id or "" out.

The shell door gives each command its own proxy URL, `http://cmd-<id>@127.0.0.1:3128` (in HTTP(S)_PROXY), and
clients send its user as `Proxy-Authorization: Basic base64("cmd-<id>:")` on CONNECT and on plain HTTP (curl,
pip and requests do; urllib sends none without a password). A label, not an identity: every command runs as the
shell's uid in the shell's network namespace, so a command can send another's id, or none (an Expectation:
docs/decisions/net.md, "Command label"). Only the id's shape is taken, so nothing else reaches an audit line.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable

from pki.vocabulary import COMMAND_PROXY_USER_PREFIX

_USER = re.compile(re.escape(COMMAND_PROXY_USER_PREFIX) + r"(c[0-9]{1,12})")
MAX_TOKEN = 128


def command_label(headers: Iterable[tuple[bytes, bytes]]) -> str:
    """The command id a request's Proxy-Authorization names (`c5`), or "" when it names none."""
    for name, value in headers:
        if name.lower() != b"proxy-authorization":
            continue
        scheme, _, token = value.strip().partition(b" ")
        if scheme.lower() != b"basic" or len(token) > MAX_TOKEN:
            return ""
        try:
            user = base64.b64decode(token.strip(), validate=True).decode("ascii").partition(":")[0]
        except (binascii.Error, UnicodeDecodeError):
            return ""
        found = _USER.fullmatch(user)
        return found.group(1) if found else ""
    return ""
