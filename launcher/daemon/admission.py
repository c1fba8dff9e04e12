"""The gate of a run request, in order: the fds are stdio, the manifest loads, the pure rule admits it
(launcher/daemon/deputy.py), and the caller could reach every path itself (checked as the caller, by a child the
daemon's loop waits for without blocking: launcher/daemon/reach.py). Nothing is created before all of it passes;
every answer is a Refusal or the manifest to run."""

from __future__ import annotations

from collections.abc import Mapping

from launcher.daemon.deputy import Caller, Load, Reach, Refusal, admit, judge_reach, paths_to_check
from launcher.daemon.policy import LaunchdPolicy
from launcher.daemon.protocol import RunRequest
from launcher.daemon.stdio_fds import stdio_refusal
from launcher.manifest import Manifest, ManifestError, load_manifest
from pki.vocabulary import EXIT_BAD_MANIFEST, EXIT_FAIL_CLOSED, EXIT_USAGE


def gate_before_reach(policy: LaunchdPolicy, caller: Caller, request: RunRequest, fds: list[int],
                      load: Load) -> tuple[Manifest, tuple[str, ...]] | Refusal:
    """The manifest and the paths to check as the caller, when all else admits it; else the Refusal."""
    wrong_fds = stdio_refusal(fds)
    if wrong_fds is not None:
        return Refusal(wrong_fds, "pass your own stdin, stdout and stderr (a terminal, pipes or files)", EXIT_USAGE)
    try:
        manifest = load_manifest(request.manifest)
    except ManifestError as error:
        return Refusal(f"the manifest is invalid: {error.message}", error.hint, EXIT_BAD_MANIFEST,
                       row=error.pointer or "/")
    admitted = admit(policy, caller, manifest, request.expect_hash, load)
    if isinstance(admitted, Refusal):
        return admitted
    return manifest, tuple(paths_to_check(manifest))


def gate_after_reach(policy: LaunchdPolicy, caller: Caller, request: RunRequest, manifest: Manifest,
                     reach: Mapping[str, Reach], load: Load) -> Manifest | Refusal:
    """Once the checker answered: admitted again with the load of now (other sessions may have started while it
    looked), then judged on what the caller could reach."""
    admitted = admit(policy, caller, manifest, request.expect_hash, load)
    if isinstance(admitted, Refusal):
        return admitted
    return judge_reach(manifest, caller, reach) or manifest


def unchecked(reason: str) -> Refusal:
    """The refusal when the paths could not be checked as the caller (fail closed)."""
    return Refusal(f"the paths could not be checked as the caller: {reason}", "try again; see the daemon's log",
                   EXIT_FAIL_CLOSED)
