"""The doors facade loads lazily: every name it exports resolves, and importing a door module loads no runtime."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import doors

FACADE = Path(doors.__file__)


def _type_checking_imports() -> set[str]:
    tree = ast.parse(FACADE.read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If))
    return {alias.name for node in ast.walk(block) if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_every_exported_name_resolves_to_what_the_typed_import_names() -> None:
    assert set(doors.__all__) == _type_checking_imports()
    for name in doors.__all__:
        assert getattr(doors, name) is not None, name


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        doors.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("doors.NoSuchThing resolved")


def test_importing_a_door_module_does_not_load_the_door_runtime() -> None:
    code = ("import sys, doors.shell._wire; "
            "print(sorted(m for m in ('trio', 'h11', 'OpenSSL', 'cryptography') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
