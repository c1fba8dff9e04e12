"""The name of a kept secret, as the manifest writes it (`doors.keys.secrets.<name>`, `from: "sealed:<name>"`)."""

from __future__ import annotations

import re

SECRET_NAME_PATTERN = "[a-z0-9][a-z0-9_.-]{0,63}"  # manifests/schema.json's $defs.secret_name, anchored there
_SECRET_NAME = re.compile(SECRET_NAME_PATTERN)


def valid_secret_name(text: object) -> bool:
    """Whether `text` is exactly a secret name (nothing before or after, no newline)."""
    return isinstance(text, str) and _SECRET_NAME.fullmatch(text) is not None


# How the net door writes a bound credential into a request (doors.net.inject[i].format; the schema's enum).
INJECT_FORMATS = ("bearer", "token", "basic", "raw")
