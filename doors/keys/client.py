"""The requesting side of a release, for the net and model doors: ask, open, return the secret's bytes.

The one-time key pair is made inside `release` and dropped with it: its private half never leaves the call.
The caller knows its own SPIFFE ID; with the name, host and request id it sent and the expiry the keys door
answered, it rebuilds the `info` the blob was sealed under, so a blob for any other context does not open.
"""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Callable
from typing import Any

from doors._refusal import DoorRefused, Refusal, read_refusal
from doors._transport import AsyncDoorClient
from doors.keys._policy import SEAL_TTL_S, WHO
from doors.keys._request import RELEASE_PATH
from doors.keys._seal import Binding, OneTimeKey


def new_request_id() -> str:
    """A random request id (the keys door refuses one it has seen)."""
    return secrets.token_urlsafe(24)


def _refused(detail: str) -> DoorRefused:
    return DoorRefused(Refusal(502, "keys.response", WHO, detail, "check the keys door's version and its log"))


def _sealed_of(body: Any, now: int) -> tuple[bytes, int]:
    if not isinstance(body, dict) or not isinstance(body.get("sealed"), str):
        raise _refused("the keys door answered without a sealed blob")
    expires_at = body.get("expires_at")
    if not isinstance(expires_at, int) or not now <= expires_at <= now + 2 * SEAL_TTL_S:
        raise _refused(f"the keys door answered an expiry that is not within {2 * SEAL_TTL_S} s from now")
    return base64.b64decode(body["sealed"], validate=True), expires_at


async def release(client: AsyncDoorClient, requester_id: str, name: str, host: str, *,
                  clock: Callable[[], float] = time.time) -> bytes:
    """Secret `name` for `host`, from the keys door behind `client`; DoorRefused when it is not released.

    `requester_id` is the caller's own SPIFFE ID (the one its SVID names).
    """
    key = OneTimeKey()
    request_id = new_request_id()
    issued_at = int(clock())
    body = {"name": name, "host": host, "request_id": request_id, "issued_at": issued_at,
            "public_key": base64.b64encode(key.public_bytes()).decode()}
    response = await client.request("POST", RELEASE_PATH, json=body)
    if not response.ok:
        try:
            shape = response.json()
        except ValueError:
            shape = {}
        raise DoorRefused(read_refusal(response.status, shape, who=WHO, row="http", detail=str(response.status)))
    sealed, expires_at = _sealed_of(response.json(), int(clock()))
    return key.open(sealed, Binding(requester_id, name, host, request_id, expires_at))
