"""Build the model door from its contract: the Messages API on mutual TLS and on plain-HTTP listeners by fd.

Each `model.<role>` listener was made by the launcher inside `<role>`'s network namespace (127.0.0.1), so only
that namespace can connect: every connection on it speaks for `<role>`, as the kernel admitted it. On mutual TLS
the caller is its SVID's role (edge already checked). Both serve the same `Gateway` routes. The upstream is the
built-in twin, in process, or an HTTPS client whose key the keys door releases for each call.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio

from doors._contract import DoorContract
from doors._door import DoorRuntime, run_reporting, serve_door
from doors._http import Limits, Router, serve_http
from doors._status import StatusSender
from doors._transport import AsyncDoorClient, Dial, listener_from_fd
from doors.keys.client import release
from doors.model._config import ModelConfig, config_from_rows
from doors.model._gateway import Gateway, KeySource
from doors.model._upstream import Upstream
from doors.model._upstream_https import HttpsUpstream
from doors.model.twin import TwinScript, TwinUpstream
from pki.vocabulary import MODEL_LISTENER_PREFIX

log = logging.getLogger(__name__)
HELD_ROWS = frozenset({"upstream", "secret", "budget_microusd", "models", "prices", "ca_bundle", "internal_ranges",
                       "max_body_bytes", "max_body_bytes_in_flight", "max_calls", "floor_tokens", "twin_script"})
# A streamed answer may pause while the model thinks; the caller must still drain each piece it is sent.
LIMITS = Limits(idle_timeout_s=120.0, send_timeout_s=60.0)


def model_listeners(listen_fds: Mapping[str, int]) -> list[tuple[str, trio.SocketListener]]:
    """(role, listener) for every `model.<role>` fd the launcher passed."""
    return [(name[len(MODEL_LISTENER_PREFIX):], listener_from_fd(fd))
            for name, fd in sorted(listen_fds.items()) if name.startswith(MODEL_LISTENER_PREFIX)]


def make_upstream(config: ModelConfig, test_internet: tuple[Any, ...] = ()) -> Upstream:
    """The twin in process, or the HTTPS client for `https://host:port`."""
    if config.upstream.twin:
        return TwinUpstream(TwinScript.parse(config.twin_script) if config.twin_script is not None else None)
    return HttpsUpstream(config, test_internet=test_internet)


class KeysRelease:
    """The provider key, released by the keys door for one call at a time over one kept connection."""

    def __init__(self, runtime: DoorRuntime, config: ModelConfig) -> None:
        assert config.keys_socket is not None and config.secret is not None
        contract = runtime.contract
        self._client = AsyncDoorClient(Dial("keys", config.keys_socket, runtime.client_ctx, contract.trust_domain,
                                            contract.session_id, contract.role))
        self._requester = runtime.identity.uri()
        self._secret, self._host = config.secret, config.upstream.host
        self._lock = trio.Lock()

    async def __call__(self) -> bytes:
        async with self._lock:
            return await release(self._client, self._requester, self._secret, self._host)


def key_source(runtime: DoorRuntime, config: ModelConfig) -> KeySource | None:
    """Where the key comes from: nowhere for the twin (it needs none), else the keys door."""
    if config.upstream.twin or config.secret is None or config.keys_socket is None:
        return None
    return KeysRelease(runtime, config)


async def serve_plain(listener: trio.SocketListener, role: str, router: Router,
                      max_connections: int = 256) -> None:
    """Plain HTTP on `listener`: every connection speaks for `role` (the kernel admitted it to that netns)."""
    slots = trio.Semaphore(max_connections)

    async def one(stream: trio.SocketStream) -> None:
        try:
            async with stream:
                await serve_http(stream, router, LIMITS, peer_role=role)
        except Exception as exc:  # one broken connection never ends the door: say what, not what was sent
            log.error("model door connection for %s failed: %s", role, type(exc).__name__)
        finally:
            slots.release()

    async with trio.open_nursery() as nursery:
        while True:
            await slots.acquire()
            try:
                stream = await listener.accept()
            except OSError:
                slots.release()
                await trio.sleep(0.1)  # out of fds: pause accepting rather than end the door
                continue
            nursery.start_soon(one, stream)


async def serve_model(contract: DoorContract, status: StatusSender, upstream: Upstream | None = None) -> None:
    """The door on mutual TLS plus one plain-HTTP loop per `model.<role>` listener; `upstream` is for tests."""
    config = config_from_rows(contract.rows)
    listeners = model_listeners(contract.listen_fds)
    gateway: Gateway | None = None

    def gateway_of(runtime: DoorRuntime) -> Gateway:  # made once the runtime (its audit queue) exists
        nonlocal gateway
        if gateway is None:
            gateway = Gateway(config, upstream or make_upstream(config), key_source(runtime, config),
                              runtime.audit, runtime.report)
        return gateway

    def background(runtime: DoorRuntime) -> list[Callable[[], Awaitable[None]]]:
        router = Router("model", gateway_of(runtime).routes())
        return [functools.partial(serve_plain, listener, role, router) for role, listener in listeners]

    await serve_door(contract, status, lambda runtime: gateway_of(runtime).routes(), held_rows=HELD_ROWS,
                     limits=LIMITS, background=background)


def serve(contract: DoorContract) -> None:
    """Run the model door process from its contract; exit 1 with a fatal status message on a crash."""
    run_reporting(contract, lambda status: trio.run(serve_model, contract, status))
