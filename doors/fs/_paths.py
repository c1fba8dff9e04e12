"""Workspace path validation and normalisation. Pure: no I/O.

A path from a client is relative to the workspace root. It is checked before anything touches the
disk: no character a person cannot read for what it is (controls, bidi, zero-width and other format or
default-ignorable characters, line separators: pki/vocabulary/legible.py), bounded length, not absolute, no `..`.
`.` components, repeated and trailing slashes are normalised away, so one file has exactly one spelling in
the rules and the audit.
"""

from __future__ import annotations

from dataclasses import dataclass

from doors._refusal import Refusal
from pki.vocabulary import unreadable

WHO = "fs"  # who refuses in the fs door's own refusals
MAX_PATH_BYTES = 4096  # PATH_MAX, counting the UTF-8 bytes of the normalised path
MAX_COMPONENT_BYTES = 255  # NAME_MAX
MAX_DEPTH = 64
# Names the door uses for its own temporary files; a client can neither see nor name them.
TEMP_PREFIX = ".sh-fs-"
TEMP_SUFFIX = ".tmp"


def path_refusal(row: str, detail: str, hint: str) -> Refusal:
    """A path refused before anything touched the disk: 403 when it leaves the root, 400 when malformed."""
    return Refusal(403 if row == "within_root" else 400, row, WHO, detail, hint)


@dataclass(frozen=True, order=True)
class WorkspacePath:
    """A validated path relative to the workspace root; `parts == ()` is the root itself."""

    parts: tuple[str, ...]

    @property
    def text(self) -> str:
        return "/".join(self.parts)

    @property
    def is_root(self) -> bool:
        return not self.parts

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else ""

    @property
    def parent(self) -> WorkspacePath:
        return WorkspacePath(self.parts[:-1])

    def is_within(self, prefix: WorkspacePath) -> bool:
        """True when this path is `prefix` or lies beneath it."""
        return self.parts[: len(prefix.parts)] == prefix.parts

    def child(self, name: str) -> WorkspacePath:
        return WorkspacePath((*self.parts, name))

    def __str__(self) -> str:
        return self.text or "."


ROOT = WorkspacePath(())


def parse_path(raw: str) -> WorkspacePath | Refusal:
    """Validate and normalise a client path, or say why it is refused."""
    bad = unreadable(raw)
    if bad is not None:
        return path_refusal(
            "path",
            f"the path holds {bad.describe()}",
            "name files with characters a person reads for what they are: no control, bidi, zero-width, "
            "format or line-separator characters",
        )
    if raw.startswith("/"):
        return path_refusal("within_root", "absolute paths are refused", "give the path relative to the workspace root")
    parts = tuple(part for part in raw.split("/") if part not in ("", "."))
    if ".." in parts:
        return path_refusal(
            "within_root",
            "`..` components are refused",
            "give the path relative to the workspace root, without `..`",
        )
    return _check_lengths(WorkspacePath(parts))


def _check_lengths(path: WorkspacePath) -> WorkspacePath | Refusal:
    if len(path.parts) > MAX_DEPTH:
        return path_refusal(
            "path", f"the path is {len(path.parts)} levels deep (at most {MAX_DEPTH})", "use a shallower path"
        )
    for part in path.parts:
        size = len(part.encode("utf-8"))
        if size > MAX_COMPONENT_BYTES:
            return path_refusal(
                "path",
                f"a path component is {size} bytes (at most {MAX_COMPONENT_BYTES})",
                "use shorter file names",
            )
        if part.startswith(TEMP_PREFIX) and part.endswith(TEMP_SUFFIX):
            return path_refusal(
                "path",
                f"names like {TEMP_PREFIX}*{TEMP_SUFFIX} are the door's temporary files",
                "choose another name",
            )
    total = len(path.text.encode("utf-8"))
    if total > MAX_PATH_BYTES:
        return path_refusal("path", f"the path is {total} bytes (at most {MAX_PATH_BYTES})", "use a shorter path")
    return path


def parse_prefix(raw: str) -> WorkspacePath:
    """Parse a manifest prefix (read_only, hidden, …); raise ValueError when it is not a valid path."""
    parsed = parse_path(raw)
    if isinstance(parsed, Refusal):
        raise ValueError(f"fs row path {raw!r}: {parsed.detail}")
    return parsed


def is_temp_name(name: str) -> bool:
    """True for the door's own temporary file names (hidden from listings)."""
    return name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX)
