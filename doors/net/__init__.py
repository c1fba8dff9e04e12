"""The net door: the only way out. An allowlisting egress proxy (CONNECT and plain HTTP) per role.

Pure cores: `_host` (normalisation), `_addr` (address classes), `_policy` (allowlist), `_clienthello`
(SNI), `_framing` (HTTP ambiguity), `_decide` (the decision chain). I/O: `proxy`, `server`.
"""

from doors.net._addr import IPV4_REFUSED, IPV6_REFUSED, AddressPolicy, classify
from doors.net._host import Host, HostError, normalise_host, parse_authority
from doors.net._policy import Allowlist, AllowlistError, AllowRule
from doors.net._resolve import ResolveError, Resolver, SystemResolver
from doors.net.proxy import Proxy, ProxyConfig, ProxyStatistics

__all__ = [
    "IPV4_REFUSED",
    "IPV6_REFUSED",
    "AddressPolicy",
    "AllowRule",
    "Allowlist",
    "AllowlistError",
    "Host",
    "HostError",
    "Proxy",
    "ProxyConfig",
    "ProxyStatistics",
    "ResolveError",
    "Resolver",
    "SystemResolver",
    "classify",
    "normalise_host",
    "parse_authority",
]
