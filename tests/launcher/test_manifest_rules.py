"""Path, trust-domain and host:port rules."""

from __future__ import annotations

import pytest

from launcher.manifest._rules import (
    absolute_path_problem,
    allow_entry_problem,
    covers,
    relative_path_problem,
    trust_domain_problem,
)


@pytest.mark.parametrize("path", ["/", "/a", "/a/b.c", "/a/.hidden", "/a/..b", "/日本/ü", "/a b"])
def test_absolute_paths_accepted(path: str) -> None:
    assert absolute_path_problem(path) is None


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("a/b", "relative"), ("", "relative"), ("./a", "relative"), ("/a/", "empty component"),
        ("//a", "empty component"), ("/a//b", "empty component"), ("/a/./b", "'.'"), ("/.", "'.'"),
        ("/a/..", "'..'"), ("/../etc", "'..'"), ("/a\x00b", "U+0000"), ("/a\nb", "U+000A"),
        ("/a\x7fb", "U+007F"), ("/a\tb", "U+0009"), ("/" + "x" * 256, "longer than 255"),
    ],
)
def test_absolute_paths_refused(path: str, words: str) -> None:
    problem = absolute_path_problem(path)
    assert problem is not None and words in problem


@pytest.mark.parametrize("path", [".git", "log", "src/gen", ".env.local"])
def test_relative_paths_accepted(path: str) -> None:
    assert relative_path_problem(path) is None


@pytest.mark.parametrize("path", ["/.git", "a/", "a//b", "./a", "a/..", "..", ".", "a\x00", ""])
def test_relative_paths_refused(path: str) -> None:
    assert relative_path_problem(path) is not None


def test_covers_is_by_component_not_by_prefix() -> None:
    assert covers("/srv", "/srv/a") and covers("/srv", "/srv") and covers("/", "/anything")
    assert not covers("/srv", "/srvx") and not covers("/srv/a", "/srv")


@pytest.mark.parametrize("name", ["demo.sharness.test", "a", "a_b-c.d", "x" * 255, "123"])
def test_trust_domains_accepted(name: str) -> None:
    assert trust_domain_problem(name) is None


@pytest.mark.parametrize(
    "name", ["Demo.test", "spiffe://a", "a:443", "a/b", "a..b", ".a", "a.", "x" * 256, "ü.test", "a@b"]
)
def test_trust_domains_refused(name: str) -> None:
    assert trust_domain_problem(name) is not None


@pytest.mark.parametrize(
    ("entry", "literal"),
    [("pypi.org:443", False), ("*.pythonhosted.org:443", False), ("localhost:8080", False),
     ("tcp://git.example.org:22", False), ("192.0.2.7:443", True), ("[2001:db8::7]:443", True),
     ("xn--bcher-kva.example:443", False), ("a:65535", False)],
)
def test_allow_entries_accepted(entry: str, literal: bool) -> None:
    assert allow_entry_problem(entry) == (None, literal)


@pytest.mark.parametrize(
    "entry",
    ["pypi.org", "pypi.org:", ":443", "pypi.org:0", "pypi.org:65536", "pypi.org:0443", "PyPI.org:443",
     "*.org:443", "*.:443", "a.*.org:443", "pypi.org.:443", "bücher.example:443", "1.2.3:80", "0x7f.1:80",
     "01.2.3.4:443", "[0:0::1]:443", "-a.org:443", "a_b.org:443", "pypi.org:443/path"],
)
def test_allow_entries_refused(entry: str) -> None:
    assert allow_entry_problem(entry)[0] is not None
