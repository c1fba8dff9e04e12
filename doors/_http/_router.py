"""Method + path -> handler. Pure: no I/O. A route ending in '/*' matches that prefix."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from doors._http._records import HttpError, Request, Response

Handler = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Route:
    """One route; `stream_body` hands the handler a BodyStream instead of a read body."""

    method: str
    path: str
    handler: Handler
    stream_body: bool = False
    max_body_bytes: int | None = None

    @property
    def prefix(self) -> str | None:
        return self.path[:-1] if self.path.endswith("/*") else None


@dataclass(frozen=True)
class Match:
    route: Route
    rest: str


class Router:
    """Routes of one door; `who` names the door in 404/405 refusals."""

    def __init__(self, who: str, routes: Iterable[Route] = ()) -> None:
        self.who = who
        self._routes: list[Route] = []
        for route in routes:
            self.add(route)

    def add(self, route: Route) -> None:
        """Add `route`; a second route for the same method and path is a programming error."""
        if any(r.method == route.method and r.path == route.path for r in self._routes):
            raise ValueError(f"route {route.method} {route.path} is already defined")
        self._routes.append(route)

    def route(
        self, method: str, path: str, *, stream_body: bool = False, max_body_bytes: int | None = None
    ) -> Callable[[Handler], Handler]:
        """Decorator form of `add`."""

        def register(handler: Handler) -> Handler:
            self.add(Route(method, path, handler, stream_body, max_body_bytes))
            return handler

        return register

    def match(self, method: str, path: str) -> Match:
        """Return the route for `method path`, or raise HttpError 404 / 405."""
        found = [m for m in (self._match_path(r, path) for r in self._routes) if m is not None]
        for candidate in found:
            if candidate.route.method == method:
                return candidate
        if found:
            allowed = sorted({m.route.method for m in found})
            raise HttpError(405, "http.method", self.who, f"{method} is not allowed on {path}",
                            f"use {', '.join(allowed)}")
        raise HttpError(404, "http.route", self.who, f"no route {path}",
                        "GET /v0/hello lists what this door is")

    @staticmethod
    def _match_path(route: Route, path: str) -> Match | None:
        prefix = route.prefix
        if prefix is None:
            return Match(route, "") if path == route.path else None
        if path.startswith(prefix) and len(path) > len(prefix):
            return Match(route, path[len(prefix):])
        return None
