"""The fs door's HTTP API: every route under /v0/fs/…, over one workspace and one dispatch."""

from __future__ import annotations

from doors._http import Route
from doors.fs._reads import ReadHandlers
from doors.fs._writes import WriteHandlers

UNBOUNDED = 1 << 62  # the door counts body bytes itself, against its rows, to name the row it refuses with


class FsApi(ReadHandlers, WriteHandlers):
    """read, stat, list, write, append, mkdir, delete, rename."""

    def routes(self) -> list[Route]:
        """Every route (a path after a `/*` prefix is workspace-relative and percent-decoded once)."""
        routes = [
            Route("GET", "/v0/fs/files/*", self.read),
            Route("PUT", "/v0/fs/files/*", self.write, stream_body=True, max_body_bytes=UNBOUNDED),
            Route("DELETE", "/v0/fs/files/*", self.delete),
            Route("POST", "/v0/fs/append/*", self.append, stream_body=True, max_body_bytes=UNBOUNDED),
            Route("POST", "/v0/fs/mkdir/*", self.mkdir),
            Route("POST", "/v0/fs/rename", self.rename, max_body_bytes=16 * 1024),
        ]
        for name, handler in (("stat", self.stat), ("list", self.list)):
            routes += [Route("GET", f"/v0/fs/{name}", handler), Route("GET", f"/v0/fs/{name}/*", handler)]
        return routes
