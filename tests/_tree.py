"""The product tree as `ast` sees it, for the fence and the vocabulary count (tests/test_fence.py,
tests/test_vocabulary_once.py). Pure over (module name, source) pairs, so a test can plant a violation in a
made-up tree and watch the check catch it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("launcher", "doors", "pki", "bench")
PROJECT = (*PRODUCT, "tests")
VOCABULARY = "pki.vocabulary"


@dataclass(frozen=True)
class Module:
    name: str  # dotted, "pki.vocabulary" for pki/vocabulary/__init__.py
    is_package: bool
    where: str  # path relative to the root, for messages
    tree: ast.Module


@dataclass(frozen=True)
class Import:
    importer: str
    target: str  # the dotted name brought in: a module, or module.attribute for `from module import attribute`
    where: str


def parse_module(name: str, source: str, *, is_package: bool = False, where: str = "") -> Module:
    return Module(name, is_package, where or name, ast.parse(source))


def product_modules(root: Path = ROOT) -> list[Module]:
    """Every .py file of the product packages, parsed."""
    found = []
    for package in PRODUCT:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            found.append(parse_module(name, path.read_text(), is_package=is_package,
                                      where=str(path.relative_to(root))))
    return found


def in_package(module: str, package: str) -> bool:
    """`module` is `package` itself or lies under it."""
    return module == package or module.startswith(package + ".")


def _base_of(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.name.split(".")
    anchor = parts if module.is_package else parts[:-1]
    anchor = anchor[: len(anchor) - (node.level - 1)]
    return ".".join([*anchor, *([node.module] if node.module else [])])


def imports_of(module: Module) -> Iterator[Import]:
    """Every import anywhere in the module (functions and TYPE_CHECKING blocks too), relative ones resolved."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module.name, alias.name, f"{module.where}:{node.lineno}")
        elif isinstance(node, ast.ImportFrom):
            base = _base_of(module, node)
            yield Import(module.name, base, f"{module.where}:{node.lineno}")
            for alias in node.names:
                if alias.name != "*":
                    yield Import(module.name, f"{base}.{alias.name}", f"{module.where}:{node.lineno}")


def is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def facade_breach(importer: str, target: str) -> str | None:
    """The package whose facade `importer` bypasses by importing `target`, or None.

    A module or name `pkg._x` belongs to `pkg`: only modules inside `pkg` may import it. Everyone else imports
    what `pkg/__init__.py` re-exports. Checked at every private step, so `doors._transport._server` is open
    to `doors._transport` only, while `doors._transport` itself is open to all of `doors`.
    """
    parts = target.split(".")
    if parts[0] not in PROJECT:
        return None
    for index, part in enumerate(parts):
        package = ".".join(parts[:index])
        if index and is_private(part) and not in_package(importer, package):
            return package
    return None


def module_level_names(module: Module, *, classes: bool = True) -> Iterator[tuple[str, int]]:
    """Names a module defines at its top level (and in its class bodies): assignments, defs, classes (line)."""
    bodies = [module.tree.body]
    if classes:
        bodies += [node.body for node in module.tree.body if isinstance(node, ast.ClassDef)]
    for body in bodies:
        for node in _flatten(body):
            yield from _defined(node)


def _flatten(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a body, looking inside if/try blocks (a definition under TYPE_CHECKING still counts)."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _flatten([*node.body, *node.orelse])
        elif isinstance(node, ast.Try):
            yield from _flatten([*node.body, *node.orelse, *node.finalbody,
                                 *(stmt for handler in node.handlers for stmt in handler.body)])


def _defined(node: ast.stmt) -> Iterator[tuple[str, int]]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name, node.lineno
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            yield from _target_names(target, node.lineno)
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        yield from _target_names(node.target, node.lineno)


def _target_names(target: ast.expr, line: int) -> Iterator[tuple[str, int]]:
    if isinstance(target, ast.Name):
        yield target.id, line
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _target_names(element, line)


def docstring_nodes(tree: ast.Module) -> set[int]:
    """ids of the string constants that are docstrings (module, class, function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def by_name(modules: Iterable[Module]) -> Mapping[str, Module]:
    return {module.name: module for module in modules}
