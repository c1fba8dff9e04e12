"""The door's decisions, in order: target, addresses, ClientHello. Pure: values in, verdicts out."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from doors.net import _refusal as refusal
from doors.net._addr import OUTSIDE_INTERNAL, AddressPolicy, IPAddress
from doors.net._clienthello import Hello, Refused
from doors.net._host import Host, HostError, normalise_host, parse_authority
from doors.net._policy import Allowlist, AllowRule
from doors.net._refusal import ProxyRefusal


@dataclass(frozen=True)
class Target:
    """An allowed destination and the rule that allowed it."""

    host: Host
    port: int
    rule: AllowRule


def decide_target(allowlist: Allowlist, role: str, authority: str, default_port: int | None) -> Target | ProxyRefusal:
    """Normalise the authority and match it against the role's allowlist."""
    try:
        host, port = parse_authority(authority, default_port)
    except HostError as exc:
        if exc.reason == "non-canonical-number":
            return refusal.not_allowed(exc.reason, exc.detail, role, authority)
        return refusal.bad_request(exc.reason, exc.detail)
    rule = allowlist.match(role, host, port)
    if rule is None:
        kind = "ip-literal-not-allowed" if host.ip is not None else "not-allowlisted"
        detail = f"{host}:{port} is not in the allowlist of role {role!r}"
        return refusal.not_allowed(kind, detail, role, f"{host}:{port}")
    return Target(host, port, rule)


def check_answers(policy: AddressPolicy, target: Target, answers: Sequence[IPAddress],
                  local: Collection[IPAddress] = ()) -> list[IPAddress] | ProxyRefusal:
    """Every answer must be dialable; any refused answer refuses the request (mixed answers too).

    `local` are the answers that are this host's own addresses (the caller asked the kernel's routing table):
    never dialled, whatever the rows say. A rule with internal ranges admits answers inside them only.
    """
    if not answers:
        return refusal.upstream_failed(502, "no-address", f"{target.host} resolved to no address")
    refused = [(ip, why) for ip in answers if (why := _why(policy, target, ip, local)) is not None]
    if not refused:
        return list(dict.fromkeys(answers))
    # A rule no row changes (loopback, ...) is named before a range the manifest could widen.
    ip, why = next(((ip, why) for ip, why in refused if why != OUTSIDE_INTERNAL), refused[0])
    reason = why if len(refused) == len(answers) else f"mixed-answers-{why}"
    detail = f"{target.host} resolved to {ip} ({why})"
    if len(refused) < len(answers):
        detail += "; a name with any refused answer is refused whole"
    if why == OUTSIDE_INTERNAL:
        ranges = ", ".join(map(str, target.rule.internal))
        return refusal.outside_internal(reason, f"{detail}; {target.rule.internal_row} names {ranges}",
                                        target.rule.internal_row)
    return refusal.not_public(reason, detail)


def _why(policy: AddressPolicy, target: Target, ip: IPAddress, local: Collection[IPAddress]) -> str | None:
    why = policy.refusal(ip, target.port, target.rule.internal)
    if why is None and ip in local:
        return "own-host"
    return why


def check_hello(target: Target, hello: Hello | Refused) -> ProxyRefusal | None:
    """The tunnel's first flight must be TLS naming the CONNECT host (no SNI for an IP literal)."""
    if isinstance(hello, Refused):
        return refusal.bad_tls(hello.reason, hello.detail)
    if hello.sni is None:
        if target.host.ip is not None:
            return None
        return refusal.bad_tls("missing-sni", f"the ClientHello for {target.host} names no server (SNI)")
    try:
        sni = normalise_host(hello.sni)
    except HostError as exc:
        return refusal.bad_tls("bad-sni", exc.detail)
    if sni != target.host:
        return refusal.bad_tls("sni-mismatch", f"SNI {sni} differs from the CONNECT host {target.host}")
    return None
