"""What every fs handler shares: parse the path, judge the names, resolve, and refuse through the dispatch."""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import trio

from doors._http import Request, Response, json_body
from doors._refusal import DoorRefused, Refusal
from doors.fs._dispatch import Call, Dispatcher
from doors.fs._ops import Located, Workspace
from doors.fs._paths import WorkspacePath
from doors.fs._request import path_from_url
from doors.fs._rules import FsRows, Op, Target, decide_names, refuse
from doors.fs._secrets import kept_kind


class Answered(Exception):
    """Stop handling a call: its response (a refusal, already audited) is ready."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


def json_ok(value: Any, status: int = 200, headers: tuple[tuple[str, str], ...] = ()) -> Response:
    return Response(status, (("content-type", "application/json"), *headers), json_body(value))


def target_json(path: WorkspacePath, target: Target) -> dict[str, Any]:
    return {
        "path": path.text or ".",
        "kind": target.kind,
        "size": target.size,
        "etag": target.etag,
        "executable": target.executable,
    }


@dataclass
class FsHandlers:
    """The workspace and the dispatch every handler works through."""

    workspace: Workspace
    dispatch: Dispatcher

    @property
    def rows(self) -> FsRows:
        return self.dispatch.rows

    # -- the prelude every handler shares --
    def begin(self, request: Request, op: Op, raw: str, **extra: Any) -> Call:
        role = request.peer_role or "app"
        parsed = path_from_url(raw)
        if isinstance(parsed, Refusal):
            raise Answered(self.dispatch.refused(None, parsed, raw_path=raw, op=op.value, role=role))
        return self.judge_names(Call(op, parsed, role, **extra))

    def _kept_in_names(self, call: Call) -> Refusal | None:
        """A path naming a kept secret is refused like content holding one: a name is in the workspace too."""
        kept = self.rows.kept_secrets
        if kept is None or not self.rows.refuse_secrets:
            return None
        for path in (call.path, call.dest):
            found = kept.first(path.text.encode()) if path is not None else None
            if found is not None:
                detail = f"the path holds a {kept_kind(found.secret)}; nothing was done"
                return refuse(403, "refuse_secrets", detail,
                              "name files without the session's kept secrets (the keys door holds them)")
        return None

    def judge_names(self, call: Call) -> Call:
        """Refuse (audited) what the names alone refuse; return the call otherwise."""
        op, role = call.op, call.role
        refusal = decide_names(op, call.path, self.rows, dest=call.dest, want_exec=call.want_exec, role=role)
        refusal = refusal or self._kept_in_names(call)
        if refusal is not None:
            raise Answered(self.dispatch.refused(call, refusal))
        return call

    def check_real(self, call: Call, real: WorkspacePath | None, *, as_dest: bool = False) -> None:
        """Judge the names again where the path really leads (symlinks inside the workspace)."""
        if real is None or real == (call.dest if as_dest else call.path):
            return
        if as_dest:
            refusal = decide_names(call.op, call.path, self.rows, dest=real, role=call.role)
        else:
            refusal = decide_names(call.op, real, self.rows, want_exec=call.want_exec, role=call.role)
        if refusal is not None:
            detail = f"{call.dest if as_dest else call.path} leads through a symlink to {real}: {refusal.detail}"
            raise Answered(self.dispatch.refused(call, replace(refusal, detail=detail)))

    def locate_parent_sync(self, call: Call, *, as_dest: bool = False) -> Located:
        """Resolve the parent of the call's path (or its destination) beneath the root, then re-judge.

        Blocking (run it in a worker thread); refusals are audited and raised as Answered.
        """
        path = call.dest if as_dest and call.dest is not None else call.path
        try:
            located = self.workspace.locate_parent(path)
        except DoorRefused as refused:
            raise Answered(self.dispatch.refused(call, refused.refusal)) from None
        try:
            self.check_real(call, located.real, as_dest=as_dest)
        except Answered:
            os.close(located.parent_fd)
            raise
        return located

    async def locate_parent(self, call: Call, *, as_dest: bool = False) -> Located:
        """`locate_parent_sync` in a worker thread."""
        return await trio.to_thread.run_sync(functools.partial(self.locate_parent_sync, call, as_dest=as_dest))

    @staticmethod
    async def run(handler: Callable[[], Awaitable[Response]]) -> Response:
        """Await a handler body; an Answered stop becomes its (already audited) response."""
        try:
            return await handler()
        except Answered as answered:
            return answered.response


def query_value(request: Request, name: str) -> str | None:
    """The first value of a query parameter."""
    values = request.query.get(name)
    return values[0] if values else None
