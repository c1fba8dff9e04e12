"""`render`: one manifest for other enforcers (Kubernetes, bubblewrap, Docker), each with its matrix. Pure.

Each target module turns the parsed manifest and its plan (the rows `check` lists) into the target's files and
says, row by row, how the target holds each (launcher/render/matrix.py). Nothing here does I/O: the command
(launcher/commands/render.py) reads the host's facts, compiles the BPF programs and writes the files. This
facade imports a target's module only when asked to render (the plan's imports cost every CLI start ~0.5 s).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from launcher.manifest import Manifest
    from launcher.render.rendering import Rendering, RenderInput

TARGETS: tuple[str, ...] = ("kubernetes", "bwrap", "docker")  # each the module launcher/render/<target>.py


def render(manifest: Manifest, target: str, given: RenderInput) -> Rendering:
    """`manifest` in the form of `target` (one of TARGETS), with its matrix."""
    from launcher.kernel.probe_facts import KernelFacts
    from launcher.policy.plan import build_plan

    if target not in TARGETS:
        raise ValueError(f"no render target {target!r}: one of {', '.join(TARGETS)}")
    module = importlib.import_module(f"launcher.render.{target}")
    # The plan's rows do not depend on the kernel (only whether this machine holds them does): any facts do.
    any_kernel = KernelFacts(landlock_abi=0, netns=False, seccomp_filter=False, openat2=False, cgroup_memory=None,
                             cgroup_pids=None, is_root=False)
    rendering: Rendering = module.render(manifest, build_plan(manifest, any_kernel, given.python), given)
    return rendering
