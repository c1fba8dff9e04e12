"""Each vocabulary item is declared once, in pki/vocabulary, and nowhere copied (read with `ast`).

- Every public name a pki/vocabulary module defines is assigned (or def'd) exactly once in the product tree
  (launcher, doors, pki, bench): there, and not again under the same name anywhere else.
- No copy of its values under another name: no bare exit-code literal (65 66 69 70 77 78 124 125), no string
  starting with a sharness root (/run/sharness, /var/lib/sharness, /run/netns), no barrier-kind word, no
  session-id pattern, and no literal set of the roles, the door order or the default edges.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable, Iterator

import pytest
from _tree import VOCABULARY, Module, docstring_nodes, in_package, module_level_names, parse_module
from _tree import product_modules as load_product

from pki import vocabulary

EXIT_LITERALS = frozenset({vocabulary.EXIT_BAD_MANIFEST, vocabulary.EXIT_NO_INPUT, vocabulary.EXIT_UNAVAILABLE,
                           vocabulary.EXIT_FAIL_CLOSED, vocabulary.EXIT_NOT_ROOT, vocabulary.EXIT_UNHELD,
                           vocabulary.EXIT_TTL, vocabulary.EXIT_HASH_MISMATCH})
ROOTS = (vocabulary.RUN_ROOT, vocabulary.STATE_ROOT, vocabulary.NETNS_ROOT)
WORDS = frozenset(vocabulary.BARRIER_KINDS)
SETS = {"ROLES": frozenset(vocabulary.ROLES), "DOOR_ORDER": frozenset(vocabulary.DOOR_ORDER),
        "DEFAULT_EDGES": frozenset(vocabulary.DEFAULT_EDGES)}


def vocabulary_names(modules: Iterable[Module]) -> dict[str, str]:
    """Public name → the pki.vocabulary module that defines it."""
    return {name: module.name for module in modules
            if in_package(module.name, VOCABULARY) and not module.is_package
            for name, _ in module_level_names(module, classes=False) if not name.startswith("_")}


def definition_counts(modules: Iterable[Module], names: Iterable[str]) -> list[str]:
    """A sentence for each vocabulary name not defined exactly once in `modules`."""
    wanted = set(names)
    places: dict[str, list[str]] = {name: [] for name in wanted}
    for module in modules:
        for name, line in module_level_names(module):
            if name in wanted:
                places[name].append(f"{module.where}:{line}")
    return [f"{name} is defined {len(where)} times ({', '.join(where) or 'nowhere'}): once, in {VOCABULARY}"
            for name, where in sorted(places.items()) if len(where) != 1]


def _literal_set(node: ast.expr) -> frozenset[object] | None:
    """The elements of a tuple, list or set display made of literals only (so frozenset({...}) too)."""
    if not isinstance(node, ast.Tuple | ast.List | ast.Set):
        return None
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    try:
        return frozenset(value)
    except TypeError:
        return None


def _copy_of(node: ast.AST, docstrings: set[int]) -> str | None:
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value in EXIT_LITERALS:
        return f"the exit code {node.value} as a bare literal"
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
        text = node.value
        if text in WORDS:
            return f"the barrier kind {text!r}"
        if any(text == root or text.startswith(root + "/") for root in ROOTS):
            return f"the path {text!r}, under a root pki.vocabulary.paths names"
        if "[0-9a-f]{8}" in text:
            return "the session-id pattern (pki.vocabulary.SID_PATTERN, valid_sid)"
    if isinstance(node, ast.expr):
        found = _literal_set(node)
        for name, value in SETS.items():
            if found is not None and found == value:
                return f"a literal copy of {name}"
    return None


def copied_values(modules: Iterable[Module]) -> Iterator[str]:
    """A sentence for each literal, outside pki.vocabulary, that copies a vocabulary value."""
    for module in modules:
        if in_package(module.name, VOCABULARY):
            continue
        docstrings = docstring_nodes(module.tree)
        for node in ast.walk(module.tree):
            what = _copy_of(node, docstrings)
            if what is not None:
                yield f"{module.where}:{getattr(node, 'lineno', '?')}: {what}: import it from {VOCABULARY}"


@pytest.fixture(scope="module")
def product() -> list[Module]:
    return load_product()


def test_the_vocabulary_defines_what_its_facade_exports(product: list[Module]) -> None:
    assert set(vocabulary_names(product)) == set(vocabulary.__all__)


def test_each_vocabulary_item_is_defined_exactly_once(product: list[Module]) -> None:
    assert definition_counts(product, vocabulary_names(product)) == []


def test_no_literal_copies_a_vocabulary_value(product: list[Module]) -> None:
    assert list(copied_values(product)) == []


def test_every_name_is_defined_once_in_the_vocabulary_itself(product: list[Module]) -> None:
    counts = Counter(name for module in product if in_package(module.name, VOCABULARY) and not module.is_package
                     for name, _ in module_level_names(module, classes=False) if not name.startswith("_"))
    assert [name for name, count in counts.items() if count != 1] == []


# Planted copies: each made-up module must be caught; the neighbour beside it that imports must not be.
PLANTED_DEFINITIONS = [
    "DOOR_ORDER = ('fs', 'net')",
    "def valid_sid(text):\n    return True",
    "class Holder:\n    STATUS_FD = 3",
    "if True:\n    AUDIT_ROOT: str = '/tmp/x'",
    "EXIT_NOT_ROOT, EXIT_OK = 1, 0",
]
PLANTED_LITERALS = [
    ("def run():\n    return 77", "exit code 77"),
    ("Ending('a door died', 70)", "exit code 70"),
    ("code = 125", "exit code 125"),
    ("sys.exit(78)", "exit code 78"),
    ("ROOT = '/run/sharness'", "the path"),
    ("path = f'/var/lib/sharness/sessions/{sid}'", "the path"),
    ("ns = '/run/netns/' + name", "the path"),
    ("KIND = 'Boundary'", "barrier kind"),
    ("import re\nSID = re.compile(r'^[0-9a-f]{8}$')", "session-id pattern"),
    ("ORDER = ('fs', 'net', 'keys', 'shell', 'model')", "copy of DOOR_ORDER"),
    ("WHO = frozenset({'model', 'app', 'fs', 'net', 'keys', 'shell'})", "copy of ROLES"),
    ("E = {('app', 'fs'), ('app', 'net'), ('app', 'shell'), ('app', 'model'), ('net', 'keys'), "
     "('model', 'keys'), ('shell', 'net')}", "copy of DEFAULT_EDGES"),
]
CLEAN = [
    "from pki.vocabulary import DOOR_ORDER, EXIT_NOT_ROOT\ndef run():\n    return EXIT_NOT_ROOT",
    "def f():\n    '''Writes under /run/sharness/<sid>/ and exits 77 when not root.'''\n    return 0",
    "WIDTH = 80\nshown = text[:WIDTH]",
    "ROOTS = ('fs', 'net')",
    "kind = 'boundary of the page'",
]


def _one(source: str) -> Module:
    return parse_module("launcher.planted", source, where="launcher/planted.py")


@pytest.mark.parametrize("source", PLANTED_DEFINITIONS)
def test_a_planted_second_definition_is_counted(product: list[Module], source: str) -> None:
    names = vocabulary_names(product)
    assert definition_counts([*product, _one(source)], names) != []


@pytest.mark.parametrize(("source", "what"), PLANTED_LITERALS)
def test_a_planted_literal_copy_is_caught(source: str, what: str) -> None:
    found = list(copied_values([_one(source)]))
    assert len(found) == 1 and what in found[0], found


@pytest.mark.parametrize("source", CLEAN)
def test_a_clean_module_passes(source: str) -> None:
    assert list(copied_values([_one(source)])) == []
