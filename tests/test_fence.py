"""The import fence, read from the source with `ast`: who may import whom.

- A door (anything under doors/) never imports the launcher: the privileged code stays out of its process.
- pki imports neither doors nor the launcher (nor bench): it is the root both of them stand on.
- pki.vocabulary imports nothing of the project outside itself: everyone may import it, it imports no one.
- Nobody reaches past a facade: `pkg._x` (a module or name starting with `_`) is imported only by modules
  inside `pkg`; everyone else imports what `pkg/__init__.py` re-exports (tests/_tree.py `facade_breach`).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Mapping

import pytest
from _tree import (
    PRODUCT,
    PROJECT,
    ROOT,
    VOCABULARY,
    Module,
    facade_breach,
    imports_of,
    in_package,
    parse_module,
    product_modules,
)

# (importer's package, imported package, why) — a module of the first never imports the second.
FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    ("doors", "launcher", "a door never imports the launcher (DESIGN.md: the hazmat stays out of doors)"),
    ("pki", "launcher", "pki is the pure root: it imports neither the launcher nor doors"),
    ("pki", "doors", "pki is the pure root: it imports neither the launcher nor doors"),
    ("pki", "bench", "pki is the pure root: it imports no bench code"),
)


# (importer, package whose facade it bypasses) → why it still may, and what ends it. Each entry must still be
# needed (test_each_known_breach_is_still_there), so none outlives its reason.
KNOWN_BREACHES: dict[tuple[str, str], str] = {}


def fence_violations(modules: Iterable[Module], known: Mapping[tuple[str, str], str] = KNOWN_BREACHES) -> list[str]:
    """One sentence per import that crosses the fence."""
    found = []
    for module in modules:
        for imported in imports_of(module):
            top = imported.target.split(".")[0]
            for importer_package, imported_package, why in FORBIDDEN:
                if in_package(module.name, importer_package) and top == imported_package:
                    found.append(f"{imported.where}: {module.name} imports {imported.target}: {why}")
            if in_package(module.name, VOCABULARY) and top in PROJECT and not in_package(imported.target,
                                                                                          VOCABULARY):
                found.append(f"{imported.where}: {module.name} imports {imported.target}: "
                             f"{VOCABULARY} imports nothing of the project")
            package = facade_breach(module.name, imported.target)
            if package is not None and (module.name, package) not in known:
                found.append(f"{imported.where}: {module.name} imports {imported.target}, past the facade of "
                             f"{package}: import it from {package} (its __init__ re-exports what others need)")
    return sorted(set(found))


def test_the_product_tree_keeps_the_fence() -> None:
    modules = product_modules()
    assert {module.name.split(".")[0] for module in modules} == set(PRODUCT)
    assert fence_violations(modules) == []


def test_each_known_breach_is_still_there() -> None:
    modules = product_modules()
    for importer, package in KNOWN_BREACHES:
        unexcused = fence_violations([m for m in modules if m.name == importer], known={})
        assert any(f"past the facade of {package}:" in sentence for sentence in unexcused), (
            f"{importer} no longer reaches past the facade of {package}: delete its KNOWN_BREACHES entry")


def test_the_vocabulary_loads_nothing_else_of_the_project() -> None:
    """Importing pki.vocabulary in a fresh interpreter loads pki (which re-exports nothing) and itself only."""
    code = ("import sys, pki.vocabulary; print(' '.join(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('pki', 'doors', 'launcher', 'bench'))))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert {name for name in loaded.stdout.split() if not in_package(name, VOCABULARY)} == {"pki"}


# Planted violations: each made-up module must be caught, and the legal neighbour beside it must not be.
PLANTED = [
    ("doors.fs.server", "import launcher.kernel.landlock", "a door never imports the launcher"),
    ("doors.fs.server", "from launcher.policy import layout", "a door never imports the launcher"),
    ("doors._door", "from ..launcher import cli", "a door never imports the launcher"),
    ("pki.svid", "from doors import DoorContract", "pki is the pure root"),
    ("pki.ca", "import launcher.lifecycle.journal", "pki is the pure root"),
    ("pki.vocabulary.exits", "from pki.spiffe import ROLES", "imports nothing of the project"),
    ("pki.vocabulary.roles", "import doors", "imports nothing of the project"),
    ("bench._door", "from doors._transport._server import serve_mtls", "past the facade of doors"),
    ("bench._door", "from doors._transport import serve_mtls", "past the facade of doors"),
    ("bench._door", "import doors._contract", "past the facade of doors"),
    ("launcher.lifecycle.session", "from doors._contract import DoorContract", "past the facade of doors"),
    ("doors.fs.server", "from doors._transport._server import serve_mtls", "past the facade of doors._transport"),
    ("doors.client", "from doors._transport import _alerts", "past the facade of doors._transport"),
    ("launcher.commands.run", "from launcher.kernel._sys import libc", "past the facade of launcher.kernel"),
    ("launcher.policy.plan", "from launcher.manifest._model import ROLES", "past the facade of launcher.manifest"),
    ("doors.net.server", "from doors.fs._ops import Workspace", "past the facade of doors.fs"),
    ("doors.net.server", "from doors.fs.server import _private_helper", "past the facade of doors.fs.server"),
]
ALLOWED = [
    ("doors.net.server", "from doors._transport import listener_from_fd"),
    ("doors._door", "from doors._contract import DoorContract"),
    ("doors._transport._tls", "from doors._transport import _pyossl_tls"),
    ("doors._transport._client", "from ._server import utc_now"),
    ("launcher.kernel.confine", "from launcher.kernel._sys import libc"),
    ("launcher.kernel._sys.libc", "from launcher.kernel._sys._ffi import ffi"),
    ("launcher.lifecycle.session", "from doors import DoorContract"),
    ("launcher.lifecycle.session", "import doors.serve"),
    ("bench._door", "from doors import serve_mtls"),
    ("bench.explore", "from bench import _clients"),
    ("pki.vocabulary", "from pki.vocabulary.roles import ROLES"),
    ("pki.ca", "from pki.vocabulary import ROLES"),
    ("doors._door", "from pki.vocabulary import BOUNDARY"),
    ("doors._transport._pyossl", "from OpenSSL._util import lib"),
    ("doors.fs.server", "if TYPE_CHECKING:\n    from doors._contract import DoorContract"),
]


@pytest.mark.parametrize(("name", "source", "rule"), PLANTED)
def test_a_planted_violation_is_caught(name: str, source: str, rule: str) -> None:
    found = fence_violations([parse_module(name, source, is_package=name == "pki.vocabulary")])
    assert any(rule in sentence for sentence in found), found


@pytest.mark.parametrize(("name", "source"), ALLOWED)
def test_a_legal_import_passes(name: str, source: str) -> None:
    assert fence_violations([parse_module(name, source, is_package=name == "pki.vocabulary")]) == []


def test_a_violation_inside_a_function_or_type_checking_block_is_caught() -> None:
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import launcher\n"
              "def f():\n    import launcher.cli\n")
    assert len(fence_violations([parse_module("doors.fs.cli", source)])) == 2
