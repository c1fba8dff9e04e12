"""Which `net.allow` entries a shared CDN serves, where SNI allowlisting cannot stop domain fronting."""

from __future__ import annotations

import pytest

from launcher.policy.cdn_fronting import fronted_by, fronting_notes


@pytest.mark.parametrize(("entry", "cdn"), [
    ("pypi.org:443", "Fastly"), ("files.pythonhosted.org:443", "Fastly"), ("PyPI.org.:443", "Fastly"),
    ("registry.npmjs.org:443", "Cloudflare"), ("*.crates.io:443", "Fastly"),
    ("d111111abcdef8.cloudfront.net:443", "CloudFront"), ("cloudfront.net:443", "CloudFront"),
    ("storage.googleapis.com:443", "Google"), ("x.azureedge.net:443", "Azure"), ("a1.akamaized.net:443", "Akamai"),
    ("example.com:443", None), ("*.wikipedia.org:443", None), ("arxiv.org:443", None),
    ("notpypi.org:443", None), ("evilcloudfront.net:443", None), ("pypi.org.evil.test:443", None),
])
def test_fronted_hosts_and_suffixes(entry: str, cdn: str | None) -> None:
    found = fronted_by(entry)
    assert (found is None) if cdn is None else (found is not None and cdn in found), found


def test_one_note_per_fronted_entry_naming_the_role_the_entry_and_the_cdn() -> None:
    notes = list(fronting_notes({"app": ["pypi.org:443", "example.com:443"], "shell": ["*.crates.io:443"]}))
    assert len(notes) == 2
    assert notes[0].startswith("net.allow app pypi.org:443: served by Fastly") and "domain fronting" in notes[0]
    assert notes[1].startswith("net.allow shell *.crates.io:443")
