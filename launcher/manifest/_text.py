"""Every string of the manifest, keys and values, is one a person can read for what it is. Pure.

Run on the parsed document before the schema, so no later message quotes an unreadable string. Refused:
controls (C0, DEL, C1), bidi controls, zero-width and other format or default-ignorable characters, line and
paragraph separators, private use and unassigned code points (pki/vocabulary/legible.py says why each hides text).
One exception: a tab or a newline in an argument after the program (`sh -c` and `python -c` scripts), which
the plan shows escaped, so it hides nothing.
"""

from __future__ import annotations

from typing import Any

from launcher.manifest._errors import ManifestError, child, describe_pointer
from pki.vocabulary import escaped, unreadable

_SCRIPT_WHITESPACE = frozenset("\t\n")


def _script_argument(ptr: str) -> bool:
    """Whether `ptr` names an argument after the program: /app/argv/1 and on."""
    head, _, index = ptr.rpartition("/")
    return head == "/app/argv" and index.isdigit() and index != "0"


def _refuse(ptr: str, what: str, text: str, allow: frozenset[str] = frozenset()) -> None:
    found = unreadable(text, unsettled=True, allow=allow)
    if found is None:
        return
    raise ManifestError(
        ptr, f"the {what} \"{escaped(text)}\" holds {found.describe()}",
        f"remove {found.code} from {describe_pointer(ptr)}: what a person approves must be what they see "
        "(tabs and newlines are allowed only in app.argv after the program)",
    )


def check_strings(value: Any, ptr: str = "") -> None:
    """Raise ManifestError at the first key or string value holding a character a person cannot read.

    A bad key is named at the object holding it, so the pointer itself never carries the character."""
    if isinstance(value, str):
        _refuse(ptr, "string", value, _SCRIPT_WHITESPACE if _script_argument(ptr) else frozenset())
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse(ptr, "key", key)
            check_strings(item, child(ptr, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_strings(item, child(ptr, index))
