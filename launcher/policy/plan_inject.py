"""The plan's words for bound credentials (`doors.net.inject`): one row per rule, and what stays uncovered. Pure."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

INJECT_HOLDER = "the net door (its own user; the keys door releases the secret to it for each request)"
NOT_REDACTED = ("a bound host's upstream that sends the secret back transformed (compressed despite "
                "Accept-Encoding: identity, encoded another way, split by its own logic) is not redacted; the "
                "app can also make a bound host act with the credential (that is what binding it allows)")


def inject_meanings(rows: dict[str, Any]) -> Iterator[str]:
    """What each `doors.net.inject` row means, for a person approving the manifest."""
    trust = f"the CA bundle {rows['ca_bundle']} only" if "ca_bundle" in rows else "the system store"
    for rule in rows.get("inject", []):
        how = f"{rule.get('format', 'bearer')}, in {rule.get('header', 'authorization')}"
        where = f"{rule['host']}{rule.get('path_prefix', '/')}*"
        yield (f"injects secret {rule['secret']} ({how}) into requests to {where}; the door terminates the app's "
               "TLS for that host with a leaf of the session's egress CA (name-constrained to the bound hosts, its "
               f"key gone with the session CA's), verifies the upstream against {trust}, drops what the app sends "
               "as a credential and redacts an echo of the secret; the app never holds it")
