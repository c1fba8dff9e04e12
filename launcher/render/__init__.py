"""`render`: one manifest for other enforcers (Kubernetes, bubblewrap, Docker), each with its matrix. Pure.

Each target module turns the parsed manifest and its plan (the rows `check` lists) into the target's files and
says, row by row, how the target holds each (launcher/render/matrix.py). Nothing here does I/O: the command
(launcher/commands/render.py) reads the host's facts, compiles the BPF programs and writes the files.
"""

from __future__ import annotations

from collections.abc import Callable

from launcher.kernel.probe_facts import KernelFacts
from launcher.manifest import Manifest
from launcher.policy.plan import Plan, build_plan
from launcher.render import bwrap, docker, kubernetes
from launcher.render.matrix import NO_LINE, Hold, MatrixLine
from launcher.render.rendering import Rendering, RenderInput
from launcher.render.seccomp_profile import FilterMode, oci_profile

Renderer = Callable[[Manifest, Plan, RenderInput], Rendering]
RENDERERS: dict[str, Renderer] = {kubernetes.TARGET: kubernetes.render, bwrap.TARGET: bwrap.render,
                                   docker.TARGET: docker.render}
TARGETS: tuple[str, ...] = tuple(RENDERERS)
# The plan's rows do not depend on the kernel (only whether this machine holds them does): any facts do.
_ANY_KERNEL = KernelFacts(landlock_abi=0, netns=False, seccomp_filter=False, openat2=False,
                          cgroup_memory=None, cgroup_pids=None, is_root=False)


def render(manifest: Manifest, target: str, given: RenderInput) -> Rendering:
    """`manifest` in the form of `target` (one of TARGETS), with its matrix."""
    return RENDERERS[target](manifest, build_plan(manifest, _ANY_KERNEL, given.python), given)


__all__ = ["NO_LINE", "TARGETS", "FilterMode", "Hold", "MatrixLine", "RenderInput", "Rendering", "oci_profile",
           "render"]
