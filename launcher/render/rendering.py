"""What a render is: the target's files, the seccomp programs to compile beside them, the matrix. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from launcher.manifest import Manifest
from launcher.policy.confinement import app_start_dir
from launcher.policy.layout import SessionPaths
from launcher.render.matrix import MatrixLine, unheld_count
from launcher.render.seccomp_profile import FilterMode


def start_dir(manifest: Manifest, layout: SessionPaths, role: str, workspace_visible: bool) -> str:
    """Where `role` starts in a render: the app in the workspace when app.cwd asks for it and the render shows the
    app the workspace (app.files.read; a render has no fs door to mount it), else the private dir the launcher
    gives the app and the shell; a door in /."""
    if role == "app":
        return app_start_dir(manifest, layout) if workspace_visible else layout.private_dir("app")
    return layout.private_dir(role) if role == "shell" else "/"


@dataclass(frozen=True)
class RenderInput:
    """What a renderer needs besides the manifest and its plan; all of it given, so a render is pure."""

    sid: str  # the session id the render names its objects with
    python: tuple[str, ...]  # the Python paths a component reads (launcher/policy/confine_plan.py python_paths)
    python_prefix: str  # the prefix whose bin/ leads the app's PATH (sys.prefix)
    root_links: tuple[tuple[str, str], ...] = ()  # the host's /bin → usr/bin links (bwrap recreates them)
    seccomp_default: bool = False  # kubernetes: RuntimeDefault instead of the launcher's filter as Localhost


@dataclass(frozen=True)
class Rendering:
    """One target's form of a manifest. `files` are (name, text), the first the target's main document;
    `programs` are (name, mode): BPF files the command compiles with libseccomp (bwrap --seccomp)."""

    target: str
    files: tuple[tuple[str, str], ...]
    matrix: tuple[MatrixLine, ...]
    programs: tuple[tuple[str, FilterMode], ...] = ()
    not_covered: tuple[str, ...] = ()

    @property
    def unheld_count(self) -> int:
        return unheld_count(self.matrix)

    def as_dict(self) -> dict[str, Any]:
        """The matrix and the file names as JSON-ready data (the `render --json` shape)."""
        return {
            "target": self.target,
            "files": [name for name, _ in self.files] + [name for name, _ in self.programs],
            "matrix": [line.as_dict() for line in self.matrix],
            "row_count": len(self.matrix), "unheld_count": self.unheld_count,
            "not_covered": list(self.not_covered),
        }
