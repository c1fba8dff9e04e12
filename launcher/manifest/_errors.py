"""The one error the manifest core raises, and JSON pointers (RFC 6901) to name where."""

from __future__ import annotations

from collections.abc import Iterable


class ManifestError(ValueError):
    """The manifest is refused: `pointer` (RFC 6901) names where, `message` what, `hint` what to change."""

    def __init__(self, pointer: str, message: str, hint: str) -> None:
        super().__init__(f"{describe_pointer(pointer)}: {message}")
        self.pointer = pointer
        self.message = message
        self.hint = hint

    def as_dict(self) -> dict[str, str]:
        """The refusal as a JSON-ready mapping (the CLI's --json shape)."""
        return {"error": "bad_manifest", "pointer": self.pointer, "message": self.message, "hint": self.hint}


def escape_token(token: str | int) -> str:
    """Escape one reference token: `~` becomes `~0`, `/` becomes `~1` (RFC 6901 section 3)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(tokens: Iterable[str | int]) -> str:
    """The JSON pointer for a path of keys and indices; the empty path is the whole document ('')."""
    return "".join("/" + escape_token(token) for token in tokens)


def child(parent: str, token: str | int) -> str:
    """The pointer of one member or element below `parent`."""
    return parent + "/" + escape_token(token)


def describe_pointer(ptr: str) -> str:
    """A pointer as a person reads it: the root is named, everything else shown as is."""
    return ptr if ptr else "(document root)"
