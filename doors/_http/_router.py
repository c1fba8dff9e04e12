"""Method + path -> handler. Pure: no I/O. A route ending in '/*' matches that prefix."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from doors._http._records import Request, Response
from doors._refusal import DoorRefused, Refusal

if TYPE_CHECKING:
    import trio

Handler = Callable[[Request], Awaitable[Response]]
# Gets the request and the connection's stream, which replays every byte the server read since that
# request began (its head included): the handler owns the connection from then on.
TakeoverHandler = Callable[[Request, "trio.abc.Stream"], Awaitable[None]]


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
class TakeoverRoute:
    """`method` with a target that is not a path (CONNECT host:port, GET http://...): `handler` takes over."""

    method: str
    handler: TakeoverHandler


@dataclass(frozen=True)
class Match:
    route: Route
    rest: str


class Router:
    """Routes of one door; `who` names the door in 404/405 refusals."""

    def __init__(self, who: str, routes: Iterable[Route | TakeoverRoute] = ()) -> None:
        self.who = who
        self._routes: list[Route] = []
        self._takeovers: dict[str, TakeoverRoute] = {}
        # The exact routes that no earlier '/*' route of their method shadows, by (method, path): a request
        # to one costs a lookup; any other request is decided by the list, in order, as before.
        self._exact: dict[tuple[str, str], Match] = {}
        for route in routes:
            self.add(route)

    @property
    def takes_over(self) -> bool:
        """Whether any route takes over connections (only then may a target be other than a path)."""
        return bool(self._takeovers)

    def takeover(self, method: str) -> TakeoverRoute | None:
        """The takeover route for `method` with a non-path target, if any."""
        return self._takeovers.get(method)

    def add(self, route: Route | TakeoverRoute) -> None:
        """Add `route`; a second route for the same method and path is a programming error."""
        if isinstance(route, TakeoverRoute):
            if route.method in self._takeovers:
                raise ValueError(f"takeover route {route.method} is already defined")
            self._takeovers[route.method] = route
            return
        if any(r.method == route.method and r.path == route.path for r in self._routes):
            raise ValueError(f"route {route.method} {route.path} is already defined")
        shadowed = any(self._match_path(r, route.path) for r in self._routes if r.method == route.method)
        self._routes.append(route)
        if route.prefix is None and not shadowed:
            self._exact[(route.method, route.path)] = Match(route, "")

    def route(
        self, method: str, path: str, *, stream_body: bool = False, max_body_bytes: int | None = None
    ) -> Callable[[Handler], Handler]:
        """Decorator form of `add`."""

        def register(handler: Handler) -> Handler:
            self.add(Route(method, path, handler, stream_body, max_body_bytes))
            return handler

        return register

    def match(self, method: str, path: str) -> Match:
        """Return the route for `method path`, or raise DoorRefused 404 / 405."""
        exact = self._exact.get((method, path))
        if exact is not None:
            return exact
        found = [m for m in (self._match_path(r, path) for r in self._routes) if m is not None]
        for candidate in found:
            if candidate.route.method == method:
                return candidate
        if found:
            allowed = sorted({m.route.method for m in found})
            raise DoorRefused(Refusal(405, "http.method", self.who, f"{method} is not allowed on {path}",
                                      f"use {', '.join(allowed)}"))
        raise DoorRefused(Refusal(404, "http.route", self.who, f"no route {path}",
                                  "GET /v0/hello lists what this door is"))

    @staticmethod
    def _match_path(route: Route, path: str) -> Match | None:
        prefix = route.prefix
        if prefix is None:
            return Match(route, "") if path == route.path else None
        if path.startswith(prefix) and len(path) > len(prefix):
            return Match(route, path[len(prefix):])
        return None
