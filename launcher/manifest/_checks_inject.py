"""The checks of `doors.net.inject` rows (bound credentials) a schema cannot express. Pure.

A rule's secret must be kept by the keys door for role net and bound to the rule's host; the host:port must be one
some role may reach through the net door; the row itself must be one the door can read (doors/net/_inject.py,
whose parser is the one fact of what a row may say).
"""

from __future__ import annotations

from typing import Any

from launcher.manifest import _rules
from launcher.manifest._errors import ManifestError, child

_PTR = "/doors/net/inject"


def check_inject(doc: dict[str, Any], net: dict[str, Any]) -> None:
    """Every injection row, in order; ManifestError names the value to change."""
    if "ca_bundle" in net:
        problem = _rules.absolute_path_problem(net["ca_bundle"])
        if problem:
            raise ManifestError("/doors/net/ca_bundle", f"path {net['ca_bundle']!r} {problem}",
                                "write the absolute path of a PEM bundle the net door may read")
    if not net.get("inject"):
        return
    from doors.net import InjectError, parse_rule  # the door's parser (and trio with it) only when needed

    secrets = doc.get("doors", {}).get("keys", {}).get("secrets", {})
    for index, raw in enumerate(net.get("inject", [])):
        ptr = child(_PTR, index)
        try:
            rule = parse_rule(index, raw)
        except InjectError as exc:
            raise ManifestError(child(ptr, exc.field), exc.detail, "see doors.net.inject in docs/contracts.md") from exc
        _check_secret(secrets, ptr, raw["secret"], rule.host.name)
        _check_reachable(net.get("allow", {}), ptr, f"{rule.host.name}:{rule.port}")


def _check_secret(secrets: dict[str, Any], ptr: str, name: str, host: str) -> None:
    where = child(ptr, "secret")
    if name not in secrets:
        raise ManifestError(where, f"no secret {name!r} in doors.keys.secrets",
                            "add it under doors.keys.secrets (the net door has it released by keys per request)")
    if "net" not in secrets[name]["roles"]:
        raise ManifestError(where, f"secret {name!r} is not given to role 'net'",
                            f"add \"net\" to doors.keys.secrets.{name}.roles")
    if host not in secrets[name]["hosts"]:
        raise ManifestError(where, f"secret {name!r} is not bound to {host!r}",
                            f"add {host!r} to doors.keys.secrets.{name}.hosts")


def _check_reachable(allow: dict[str, list[str]], ptr: str, authority: str) -> None:
    host, _, port = authority.rpartition(":")
    for entries in allow.values():
        for entry in entries:
            if entry == authority:
                return
            if entry.startswith("*.") and entry.endswith(f":{port}") and host.endswith(entry[1:].rpartition(":")[0]):
                return
    raise ManifestError(child(ptr, "host"), f"{authority} is in no doors.net.allow row, so no request reaches it",
                        f"add {authority!r} to doors.net.allow of the role that needs it")

