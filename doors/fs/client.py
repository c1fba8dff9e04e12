"""The app's blocking fs API over `doors.client.DoorClient`: read, write, append, list, stat, delete, rename.

    from doors.fs.client import FsClient
    with FsClient.from_env() as fs:
        fs.write("notes.md", b"# hi\n")
        fs.append("log", b"line\n")

A refusal raises DoorRefused; its `refusal` holds the HTTP status, the row, who refused, the detail and
the hint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from doors._refusal import DoorRefused, Refusal, read_refusal
from doors.client import ClientResponse, DoorClient

READ_PIECE = 16 * 1024 * 1024  # under the blocking client's response cap (64 MiB)


def _url(kind: str, path: str) -> str:
    quoted = quote(path.strip("/"), safe="/")
    return f"/v0/fs/{kind}/{quoted}" if quoted else f"/v0/fs/{kind}"


def _checked(response: ClientResponse) -> ClientResponse:
    if response.ok:
        return response
    try:
        shape = response.json()
    except ValueError:
        shape = {}
    raise DoorRefused(read_refusal(response.status, shape, who="fs", row="http", detail=str(response.status)))


class FsClient:
    """Blocking calls to the fs door; one kept-alive mutual-TLS connection underneath."""

    def __init__(self, door: DoorClient) -> None:
        self.door = door

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **options: Any) -> FsClient:
        """Connect as the app of this session, from the SHARNESS_* variables the launcher sets."""
        return cls(DoorClient.from_env("fs", environ, **options))

    def _call(
        self,
        method: str,
        target: str,
        body: bytes | None = None,
        json_value: Any = None,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> ClientResponse:
        return _checked(self.door.request(method, target, json=json_value, body=body, headers=headers))

    def read(self, path: str, *, offset: int | None = None, length: int | None = None) -> bytes:
        """The file's bytes (or `length` bytes from `offset`); large files come in READ_PIECE ranges."""
        if offset is not None or length is not None:
            start = offset or 0
            end = "" if length is None else str(start + length - 1)
            return self._call("GET", _url("files", path), headers=(("range", f"bytes={start}-{end}"),)).body
        pieces: list[bytes] = []
        start, total, etag = 0, None, None
        while total is None or start < total:
            response = self._call("GET", _url("files", path),
                                  headers=(("range", f"bytes={start}-{start + READ_PIECE - 1}"),))
            if response.status == 200:  # an empty file: no range to give
                return response.body
            if etag is not None and response.header("etag") != etag:
                raise DoorRefused(Refusal(409, "changed", "fs", f"{path} changed while it was read in pieces",
                                          "read it again"))
            etag = response.header("etag")
            total = int((response.header("content-range") or "/0").rsplit("/", 1)[1])
            pieces.append(response.body)
            start += len(response.body)
            if not response.body:
                break
        return b"".join(pieces)

    def stat(self, path: str) -> dict[str, Any]:
        """kind, size, etag and executable of `path`."""
        return dict(self._call("GET", _url("stat", path)).json())

    def list(self, path: str = "") -> list[dict[str, Any]]:
        """The entries of a directory (hidden rows and the door's temporary files left out)."""
        return list(self._call("GET", _url("list", path)).json()["entries"])

    def write(
        self,
        path: str,
        data: bytes,
        *,
        if_match: str | None = None,
        create_only: bool = False,
        executable: bool = False,
    ) -> dict[str, Any]:
        """Create or replace `path` atomically; `if_match` makes a stale version a 409."""
        headers = tuple(
            (k, v)
            for k, v in (("if-match", if_match), ("if-none-match", "*" if create_only else None))
            if v is not None
        )
        target = _url("files", path) + ("?exec=1" if executable else "")
        return dict(self._call("PUT", target, body=data, headers=headers).json())

    def append(self, path: str, data: bytes) -> dict[str, Any]:
        """Append `data` in one piece (creates the file when missing)."""
        return dict(self._call("POST", _url("append", path), body=data).json())

    def mkdir(self, path: str) -> dict[str, Any]:
        return dict(self._call("POST", _url("mkdir", path)).json())

    def delete(self, path: str, *, if_match: str | None = None) -> dict[str, Any]:
        """Delete a file or an empty directory."""
        headers = (("if-match", if_match),) if if_match else ()
        return dict(self._call("DELETE", _url("files", path), headers=headers).json())

    def rename(self, source: str, dest: str) -> dict[str, Any]:
        """Rename within the workspace; an existing destination is refused (409)."""
        return dict(self._call("POST", "/v0/fs/rename", json_value={"from": source, "to": dest}).json())

    def close(self) -> None:
        self.door.close()

    def __enter__(self) -> FsClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


__all__ = ["DoorRefused", "FsClient"]
