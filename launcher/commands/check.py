"""`sharness-launch check FILE [--expect-hash H]`: validate and print the plan a person approves."""

from __future__ import annotations

import argparse
import hmac
import json

from launcher.commands import CommandError, expected_hash, fail, read_manifest
from launcher.kernel.probe_facts import KernelFacts
from launcher.manifest import Manifest
from pki.vocabulary import EXIT_HASH_MISMATCH, EXIT_OK

# What `check` assumes when it cannot probe: nothing can be held.
NO_KERNEL = KernelFacts(landlock_abi=0, netns=False, seccomp_filter=False, openat2=False,
                        cgroup_memory=None, cgroup_pids=None, is_root=False)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `check` subcommand."""
    parser = subparsers.add_parser("check", help="validate a manifest and print the plan: rows, kinds, unheld")
    parser.add_argument("manifest", metavar="FILE", help="the manifest (JSON); '-' reads stdin")
    parser.add_argument("--expect-hash", metavar="sha256:HEX", help="refuse (exit 125) unless the hash is this")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.set_defaults(func=run)


def probe() -> KernelFacts:
    """The kernel's facts from launcher.kernel.probe when it is built, else NO_KERNEL."""
    try:
        from launcher.kernel.probe import probe_kernel
    except ModuleNotFoundError as exc:
        if exc.name != "launcher.kernel.probe":
            raise
        return NO_KERNEL
    return probe_kernel()


def run(args: argparse.Namespace) -> int:
    """Print the plan; 65 bad manifest, 66 unreadable, 125 hash mismatch, 2 malformed --expect-hash."""
    from launcher.policy.plan import build_plan
    from launcher.policy.plan_render import render_plan

    try:
        want = expected_hash(args.expect_hash) if args.expect_hash is not None else None
        manifest = read_manifest(args.manifest)
        if want is not None and not hmac.compare_digest(want, manifest.sha256):
            raise CommandError(EXIT_HASH_MISMATCH, f"hash mismatch: expected {want}, actual {manifest.sha256}",
                               "the file is not the manifest that was approved: check it again",
                               error="hash_mismatch", expected=want, actual=manifest.sha256, file=args.manifest)
    except CommandError as error:
        return fail(args, error)
    plan = build_plan(manifest, probe())
    refused = _path_refusals(manifest) + _owner_refusals(manifest) + _seed_refusals(manifest)
    if args.json:
        print(json.dumps({"ok": True, "file": args.manifest, **plan.as_dict(), "refused_here": refused},
                         ensure_ascii=False, indent=2))
    else:
        print(render_plan(plan))
        if refused:
            print("refused on this machine, as this user sees it (`run` would exit 78, creating nothing):")
        for refusal in refused:
            print(f"  {refusal['pointer']}: {refusal['message']}\n      hint: {refusal['hint']}")
    return EXIT_OK


def _path_refusals(manifest: Manifest) -> list[dict[str, str]]:
    """What the manifest's paths resolve to here, as `run`'s preflight would judge them."""
    from launcher.lifecycle.preflight_paths import path_refusals
    from launcher.policy.confine_plan import python_paths
    from launcher.policy.layout import PLAN_PATHS

    refusals, _ = path_refusals(manifest, PLAN_PATHS, python_paths())
    return [{"pointer": refusal.pointer, "message": refusal.message, "hint": refusal.hint} for refusal in refusals]


def _owner_refusals(manifest: Manifest) -> list[dict[str, str]]:
    """What `run` would refuse about who owns the manifest's paths on this machine (lifecycle/path_owners.py)."""
    from launcher.lifecycle.path_owners import owners_to_avoid
    from launcher.lifecycle.preflight import PreflightError

    try:
        owners_to_avoid(manifest)
    except PreflightError as refusal:
        return [{"pointer": str(refusal.row), "message": refusal.message, "hint": refusal.hint}]
    return []


def _seed_refusals(manifest: Manifest) -> list[dict[str, str]]:
    """What `run` would refuse about app.home_seed here (launcher/lifecycle/home_seed.py), read as this user."""
    from launcher.lifecycle.home_seed import read_home_seed
    from launcher.lifecycle.preflight import PreflightError
    from launcher.policy.home_seed import seed_budget
    from launcher.policy.layout import PLAN_PATHS
    from launcher.policy.scratch import scratch_of

    scratch = scratch_of(manifest, "app", PLAN_PATHS)
    if manifest.app.home_seed is None or scratch is None:
        return []
    try:
        read_home_seed(manifest.app.home_seed, seed_budget(scratch.size_bytes, scratch.inodes))
    except PreflightError as refusal:
        return [{"pointer": str(refusal.row), "message": refusal.message, "hint": refusal.hint}]
    return []
