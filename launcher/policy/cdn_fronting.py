"""Which allowed hosts are served by a CDN that many other sites share: there SNI allowlisting cannot stop domain
fronting. Pure: a table, and a match against the manifest's `net.allow` entries.

A CONNECT tunnel's SNI must equal its host (row `net.sni`), but the HTTP Host header travels inside TLS, which
the net door does not terminate (no bound credential): a client can send SNI `pypi.org` and `Host:` any other
site the same CDN edge serves, and reach it. `check` says so for each fronted host (not covered).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

# Hosts whose operator says, in public, that a shared CDN serves them (the CDN, and where it says so).
FRONTED_HOSTS: Mapping[str, str] = {
    "pypi.org": "Fastly (PyPI's CDN since 2013: Python infrastructure, Fastly's customer page)",
    "files.pythonhosted.org": "Fastly (PyPI's file host)",
    "registry.npmjs.org": "Cloudflare (npm's registry)",
    "static.crates.io": "Fastly and CloudFront (crates.io's downloads)",
    "index.crates.io": "Fastly and CloudFront (crates.io's sparse index)",
}
# Name suffixes that belong to a shared CDN or front end: any host under them is served by that edge.
FRONTED_SUFFIXES: Mapping[str, str] = {
    ".cloudfront.net": "Amazon CloudFront",
    ".fastly.net": "Fastly", ".fastlylb.net": "Fastly",
    ".akamaiedge.net": "Akamai", ".akamaized.net": "Akamai", ".akamaihd.net": "Akamai",
    ".edgekey.net": "Akamai", ".edgesuite.net": "Akamai",
    ".azureedge.net": "Azure Front Door / CDN", ".azurefd.net": "Azure Front Door",
    ".googleapis.com": "Google's front end", ".appspot.com": "Google's front end",
    ".workers.dev": "Cloudflare", ".pages.dev": "Cloudflare",
}


def _host(entry: str) -> str:
    """`host:port` (or `*.suffix:port`) → the lower-case host part."""
    return entry.rsplit(":", 1)[0].lower().rstrip(".")


def fronted_by(entry: str) -> str | None:
    """The shared CDN that serves a `net.allow` entry, or None when the table knows of none."""
    host = _host(entry)
    wildcard = host.startswith("*.")
    base = host[1:] if wildcard else host  # "*.crates.io" → ".crates.io"
    if not wildcard and host in FRONTED_HOSTS:
        return FRONTED_HOSTS[host]
    if wildcard:
        covered = [cdn for name, cdn in FRONTED_HOSTS.items() if name.endswith(base)]
        if covered:
            return covered[0]
    return next((cdn for suffix, cdn in FRONTED_SUFFIXES.items() if base.endswith(suffix)
                 or base == suffix[1:]), None)


def fronting_notes(allow: Mapping[str, Iterable[str]]) -> Iterator[str]:
    """One sentence per fronted entry of `net.allow` (role → entries), in the manifest's order."""
    for role, entries in allow.items():
        for entry in entries:
            cdn = fronted_by(entry)
            if cdn is not None:
                yield (f"net.allow {role} {entry}: served by {cdn}, shared with other sites; the net door checks "
                       "the TLS SNI, not the Host header inside TLS, so the app can reach any site on that CDN by "
                       "domain fronting (SNI this host, Host another); allow it only if that is acceptable")
