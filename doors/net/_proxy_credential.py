"""The upstream proxy's credential, released by the keys door for each CONNECT the door opens through it.

The value (`user:password`) is asked for with the proxy's host, sealed to a one-time key, opened here and put
in that one request's Proxy-Authorization; it is never kept between requests, logged or sent to the app.
"""

from __future__ import annotations

import trio

from doors._door import DoorRuntime
from doors._transport import AsyncDoorClient, Dial
from doors.keys.client import release

KEYS_SOCKET_ROW = "keys_socket"


class ProxyCredential:
    """Secret `name` for `host` from the keys door at `keys_socket`, one release at a time on one kept connection."""

    def __init__(self, runtime: DoorRuntime, keys_socket: str, name: str, host: str) -> None:
        contract = runtime.contract
        self._client = AsyncDoorClient(Dial("keys", keys_socket, runtime.client_ctx, contract.trust_domain,
                                            contract.session_id, contract.role))
        self._requester = runtime.identity.uri()
        self._name, self._host = name, host
        self._lock = trio.Lock()

    async def __call__(self) -> bytes:
        """The credential's bytes, released now (DoorRefused when keys refuses)."""
        async with self._lock:
            return await release(self._client, self._requester, self._name, self._host)
