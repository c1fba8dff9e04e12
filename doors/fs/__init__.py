"""The fs door: the only writer to the workspace. See README.md for its API and rows."""

from doors.fs._api import FsApi
from doors.fs._batches import RECEIVE_BATCH
from doors.fs._decide import decide, file_mode
from doors.fs._dispatch import Call, Dispatcher, UsageMeter
from doors.fs._openat2 import RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, openat2
from doors.fs._ops import Workspace
from doors.fs._paths import MAX_DEPTH, MAX_PATH_BYTES, ROOT, WorkspacePath, parse_path
from doors.fs._rules import Facts, FsRows, Op, Target, Usage, decide_names
from doors.fs._secrets import Finding, SecretScanner, scan
from doors.fs._version import etag_of, version_conflict
from doors.fs.server import build, describe, open_workspace, routes

__all__ = [
    "MAX_DEPTH",
    "MAX_PATH_BYTES",
    "RECEIVE_BATCH",
    "RESOLVE_BENEATH",
    "RESOLVE_NO_MAGICLINKS",
    "ROOT",
    "Call",
    "Dispatcher",
    "Facts",
    "Finding",
    "FsApi",
    "FsRows",
    "Op",
    "SecretScanner",
    "Target",
    "Usage",
    "UsageMeter",
    "Workspace",
    "WorkspacePath",
    "build",
    "decide",
    "decide_names",
    "describe",
    "etag_of",
    "file_mode",
    "open_workspace",
    "openat2",
    "parse_path",
    "routes",
    "scan",
    "version_conflict",
]
