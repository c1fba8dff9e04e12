"""The net door: the only way out. An allowlisting egress proxy (CONNECT and plain HTTP) per role.

Pure cores: `_host` (normalisation), `_addr` (address classes), `_policy` (allowlist), `_clienthello`
(SNI), `_framing` (HTTP ambiguity), `_decide` (the decision chain), `_inject` (bound credentials). I/O: `proxy`,
`server`, `_tunnel`, `_forward`, `_terminate` (the TLS-terminating path for bound hosts).
"""

from doors.net._addr import AddressPolicy, classify
from doors.net._egress_tls import ALPN, CredentialSource, EgressConfig, contexts_from_pems, upstream_context
from doors.net._host import Host, HostError, normalise_host, parse_authority
from doors.net._inject import InjectError, Injection, InjectRule, parse_rule
from doors.net._policy import Allowlist, AllowlistError, AllowRule
from doors.net._resolve import ResolveError, Resolver, SystemResolver
from doors.net.proxy import Proxy, ProxyConfig, ProxyStatistics

__all__ = [
    "ALPN",
    "AddressPolicy",
    "AllowRule",
    "Allowlist",
    "AllowlistError",
    "CredentialSource",
    "EgressConfig",
    "Host",
    "HostError",
    "InjectError",
    "InjectRule",
    "Injection",
    "Proxy",
    "ProxyConfig",
    "ProxyStatistics",
    "ResolveError",
    "Resolver",
    "SystemResolver",
    "classify",
    "contexts_from_pems",
    "normalise_host",
    "parse_authority",
    "parse_rule",
    "upstream_context",
]
