"""The gate of a run request, in order: the fds are stdio, the manifest loads, the pure rule admits it
(launcher/daemon/deputy.py), and the caller could reach every path itself (checked as the caller). Nothing is
created before all of it passes; every answer is a Refusal or the manifest to run."""

from __future__ import annotations

from launcher.daemon.deputy import Caller, Load, Refusal, admit, judge_reach, paths_to_check
from launcher.daemon.policy import LaunchdPolicy
from launcher.daemon.protocol import RunRequest
from launcher.daemon.reach import caller_reach
from launcher.daemon.stdio_fds import stdio_refusal
from launcher.manifest import Manifest, ManifestError, load_manifest
from pki.vocabulary import EXIT_BAD_MANIFEST, EXIT_FAIL_CLOSED, EXIT_USAGE


def gate_run(policy: LaunchdPolicy, caller: Caller, request: RunRequest, fds: list[int],
             load: Load) -> Manifest | Refusal:
    """The manifest when the request may run as it is; else the Refusal naming the row and the reason."""
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
    try:
        reach = caller_reach(caller, paths_to_check(manifest))
    except OSError as exc:
        return Refusal(f"the paths could not be checked as the caller: {exc}", "try again; see the daemon's log",
                       EXIT_FAIL_CLOSED)
    return judge_reach(manifest, caller, reach) or manifest
