"""The net door's rows of the plan: the allow list, the address rule and what widens it (internal rows), the
wildcard cap, the upstream proxy and bound credentials, each with its barrier kind and holder. Pure."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from launcher.policy.plan_inject import INJECT_HOLDER, inject_meanings
from launcher.policy.plan_kernel import always, landlock_tcp, netns
from launcher.policy.plan_spec import RowSpec as _Spec
from pki.vocabulary import BOUNDARY, EXPECTATION

NET_DEFAULT_MAX_WILDCARD_NAMES = 256  # the net door's default for doors.net.max_wildcard_names (doors/net agrees)


def net_rows(rows: dict[str, Any]) -> Iterator[_Spec]:
    """The net door's rows of the plan, from the manifest's doors.net."""
    door = "the net door (its own user); the kernel gives the caller no other route"
    for role, entries in rows.get("allow", {}).items():
        yield _Spec("net.allow", f"{role} may reach {', '.join(entries) or 'nothing'}", BOUNDARY, door, netns)
    yield _Spec("net.sni", "a CONNECT tunnel's TLS SNI must equal its host", BOUNDARY, door, netns)
    proxy = rows.get("upstream_proxy")
    if proxy is not None and proxy.get("resolve") == "proxy":
        yield _Spec("net.addresses", f"not held by the net door: the upstream proxy {proxy['address']} resolves "
                    "each name and dials what it chooses (private addresses included, unless its own rules "
                    "refuse them)", EXPECTATION, "the upstream proxy's own policy, outside this session", always)
    else:
        yield _Spec("net.addresses", "refuses private, loopback, link-local, CGNAT, embedded-v4 addresses and this "
                    "host's own; dials (or asks the upstream proxy for) exactly the address it checked", BOUNDARY,
                    door, netns)
    for role, entries in rows.get("internal", {}).items():
        for entry, ranges in entries.items():
            yield _Spec("net.internal", f"weakens net.addresses (kind: private destination) for {role} "
                        f"{entry} only: its name must resolve into {', '.join(ranges)}, nowhere else; never "
                        "loopback, link-local or this host", BOUNDARY, door, netns)
    literal_roles = ", ".join(rows.get("allow_ip_literals", [])) or "no role"
    yield _Spec("net.ip_literals", f"IP literals allowed for {literal_roles}", BOUNDARY, door, netns)
    if any(entry.removeprefix("tcp://").startswith("*.") for entries in rows.get("allow", {}).values()
           for entry in entries):
        cap = rows.get("max_wildcard_names", NET_DEFAULT_MAX_WILDCARD_NAMES)
        yield _Spec("net.wildcard_names", f"at most {cap} distinct names resolved under wildcard entries per role "
                    "in the session; more are refused", BOUNDARY, door, netns)
    if proxy is not None:
        credential = f"Proxy-Authorization from secret {proxy['secret']} (released by keys per connection, never "\
            "seen by the app)" if "secret" in proxy else "no credential"
        yield _Spec("net.upstream_proxy", f"dials only the upstream proxy {proxy['address']} (CONNECT, "
                    f"{credential}), after every check above", BOUNDARY,
                    f"{door}; the kernel (Landlock TCP: the proxy's port only)", landlock_tcp)
    yield from (_Spec("net.inject", meaning, BOUNDARY, INJECT_HOLDER, netns) for meaning in inject_meanings(rows))
