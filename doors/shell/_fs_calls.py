"""The fs door's write API for the shell door (edge shell→fs), over one kept-alive mutual-TLS connection.

The shell door is the fs door's client with its own SVID: the fs door admits it by its edge, judges every
request by its rows, audits each, and writes as the workspace owner. Paths are percent-encoded from their
bytes (a name that is not UTF-8 reaches the fs door as it is, and is refused there with its row).
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import quote

import trio

from doors._transport import AsyncDoorClient
from doors.shell._apply import FsAnswer


def _url(kind: str, path: str) -> str:
    quoted = quote(os.fsencode(path), safe="/")
    return f"/v0/fs/{kind}/{quoted}" if quoted else f"/v0/fs/{kind}"


def _body(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return {}


class FsDoorCalls:
    """FsCalls (doors/shell/_apply.py) over kept-alive AsyncDoorClients dialled to the fs door: as many requests
    at once as it holds clients (each one request at a time), so the fs door's fsyncs overlap."""

    def __init__(self, clients: list[AsyncDoorClient]) -> None:
        self.clients = clients
        self._free_send, self._free = trio.open_memory_channel[AsyncDoorClient](len(clients))
        for client in clients:
            self._free_send.send_nowait(client)

    @property
    def concurrency(self) -> int:
        return len(self.clients)

    async def _call(self, method: str, target: str, body: bytes | None = None, json_value: Any = None,
                    headers: tuple[tuple[str, str], ...] = ()) -> FsAnswer:
        client = await self._free.receive()
        try:
            response = await client.request(method, target, json=json_value, body=body, headers=headers)
        finally:
            self._free_send.send_nowait(client)
        return FsAnswer(response.status, _body(response.body))

    async def write(self, path: str, data: bytes, executable: bool, if_match: str | None = None) -> FsAnswer:
        headers = (("if-match", if_match),) if if_match is not None else ()
        return await self._call("PUT", _url("files", path) + ("?exec=1" if executable else ""), body=data,
                                headers=headers)

    async def mkdir(self, path: str) -> FsAnswer:
        return await self._call("POST", _url("mkdir", path))

    async def delete(self, path: str) -> FsAnswer:
        return await self._call("DELETE", _url("files", path))

    async def listing(self, path: str) -> FsAnswer:
        return await self._call("GET", _url("list", path))

    async def stat(self, path: str) -> FsAnswer:
        return await self._call("GET", _url("stat", path))

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()
