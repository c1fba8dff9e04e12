"""Build the fs door from its contract: the workspace fd, the rows, the audit sink, the routes."""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from types import ModuleType
from typing import TYPE_CHECKING, Any

import trio

from doors._http import Limits, Route
from doors._secret_match import SecretFingerprint, SecretMatcher
from doors.fs._api import FsApi
from doors.fs._casefold import casefold_dirs
from doors.fs._dispatch import Audit, Dispatcher
from doors.fs._ops import Workspace
from doors.fs._rules import FsRows

if TYPE_CHECKING:
    from doors._contract import DoorContract
    from doors._door import DoorRuntime

WORKSPACE_FD_ROW = "workspace_fd"
WORKSPACE_ROW = "workspace"
# Rows this door holds itself (GET /v0/hello reports them as held); `workspace` is within_root's root.
HELD_ROWS = frozenset({"workspace", "workspace_fd", "read_only", "append_only", "hidden", "exec",
                       "refuse_secrets", "no_symlinks", "max_file_bytes", "max_total_bytes", "max_files",
                       "max_concurrent_uploads", "mount_fd", "mount_owner"})


@functools.cache
def mount_front() -> ModuleType | None:
    """The FUSE front (doors/fs/_fuse_serve.py, with pyfuse3: ~10 ms of import). The door, once its uid is dropped,
    may not read the interpreter's site-packages any more, so the launcher imports it before it forks an fs door
    that serves the mount (doors.serve.preload), and only then. None without pyfuse3 (the launcher then refuses a
    manifest asking for the mount: 78, app.workspace)."""
    try:
        return importlib.import_module("doors.fs._fuse_serve")
    except ImportError:
        return None

# What one connection may make the door hold (docs/decisions/fs.md, "Memory per connection"): bodies of the
# routes that do not stream them (mkdir, delete; rename sets its own) stay small, and a client that has not
# drained a 64 KiB piece of a response in 10 s is cut and audited (http.cut).
FS_LIMITS = Limits(max_body_bytes=16 * 1024, send_timeout_s=10.0)


def thread_safe(audit: Audit) -> Audit:
    """The door's audit sink is a trio channel: worker threads reach it through the trio loop."""

    def emit(event: dict[str, Any]) -> None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            trio.from_thread.run_sync(audit, event)
            return
        audit(event)

    return emit


def open_workspace(rows: Mapping[str, Any]) -> int:
    """The workspace directory fd: inherited (`rows["workspace_fd"]`) or opened from `rows["workspace"]`."""
    inherited = rows.get(WORKSPACE_FD_ROW)
    if isinstance(inherited, int) and not isinstance(inherited, bool):
        os.fstat(inherited)  # fail now, naming the fd, rather than on the first request
        return inherited
    path = rows.get(WORKSPACE_ROW)
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError("the fs door needs rows.workspace_fd (an inherited directory fd) or rows.workspace")
    return os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)


def build(rows: Mapping[str, Any], audit: Audit, *, report: Audit | None = None, workspace_fd: int | None = None,
          chown_to: tuple[int, int] | None = None, kept_secrets: Mapping[str, Any] | None = None) -> FsApi:
    """The door's handlers over the workspace, judging with `rows`, queueing each act's event with `audit`
    (AuditBackpressure: no act) and each refusal's with `report` (default `audit`); `kept_secrets` is the keys
    door's fingerprint (its wire form), whose secrets refuse_secrets refuses too."""
    fs_rows = FsRows.from_rows(rows)
    if kept_secrets is not None:
        fs_rows = replace(fs_rows, kept_secrets=SecretMatcher(SecretFingerprint.from_json(kept_secrets)))
    root_fd = open_workspace(rows) if workspace_fd is None else workspace_fd
    prefixes = (*fs_rows.read_only, *fs_rows.append_only, *fs_rows.hidden, *fs_rows.exec)
    fs_rows = replace(fs_rows, casefold_dirs=casefold_dirs(root_fd, prefixes))
    workspace = Workspace(root_fd, no_symlinks=fs_rows.no_symlinks, chown_to=chown_to)
    swept = workspace.sweep_temp()  # before the first request: a door killed mid-upload left these
    if swept:
        audit({"door": "fs", "op": "sweep", "path": ".", "removed": swept, "decision": "allow",
               "outcome": "temporary files a killed fs door left were removed"})
    return FsApi(workspace, Dispatcher(fs_rows, audit, report))


def routes(rows: Mapping[str, Any], audit: Audit) -> list[Route]:
    """The routes `run_door` serves for the fs door."""
    return build(rows, audit).routes()


def describe(rows: Mapping[str, Any]) -> dict[str, Any]:
    """The rows as `GET /v0/hello` shows them."""
    return FsRows.from_rows(rows).describe()


def serve(contract: DoorContract) -> None:
    """Run the fs door process from its contract (what the launcher calls in the forked child): its HTTP API, and
    the workspace mount when the contract hands it the FUSE device."""
    from doors._door import run_door, run_reporting, serve_door

    def api_of(runtime: DoorRuntime) -> FsApi:
        return build(contract.rows, thread_safe(runtime.audit), report=thread_safe(runtime.report),
                     kept_secrets=contract.kept_secrets)

    front = mount_front() if contract.rows.get("mount_fd") is not None else None
    device = front.mount_device(contract.rows) if front is not None else None
    if device is None:
        if contract.rows.get("mount_fd") is not None:
            raise RuntimeError("the fs door cannot serve the workspace mount: pyfuse3 is not installed")
        run_door(contract, lambda runtime: api_of(runtime).routes(), held_rows=HELD_ROWS, limits=FS_LIMITS)
        return
    built: list[FsApi] = []

    def routes(runtime: DoorRuntime) -> list[Route]:
        built.append(api_of(runtime))
        return built[0].routes()

    def background(runtime: DoorRuntime) -> list[Callable[[], Awaitable[None]]]:
        assert front is not None and device is not None
        ops = front.mount_ops(built[0], contract.rows)  # the router, built first, made the API
        return [functools.partial(front.serve_mount, ops, device)]

    run_reporting(contract, lambda status: trio.run(functools.partial(
        serve_door, contract, status, routes, held_rows=HELD_ROWS, limits=FS_LIMITS, background=background)))
