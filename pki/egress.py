"""The egress CA: what the net door presents to the app for a host with a bound credential. Pure: no I/O, no clock.

Minted in the CA child next to the session CA (pki/ca.py) and destroyed with it: the leaves are known at launch
because the bound hosts are in the manifest, so the CA key is never needed after the child exits. Its
NameConstraints (critical) permit exactly the bound hosts' DNS names (RFC 5280: with their subdomains; no leaf is
ever issued for one) and exclude every IP address: even a leaf signed by this key for another host fails a verifier
that honours the extension (docs/decisions/pki.md, "The egress CA").
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from collections.abc import Iterable, Mapping

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509 import verification
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pki.issue import BACKDATE_S, CA_KEY_USAGE, LEAF_KEY_USAGE, PrivateKey, new_key

MAX_HOSTS = 256
_HOST = re.compile(r"(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+")
_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z ]+)-----\r?\n.*?-----END \1-----\r?\n?", re.DOTALL)


class EgressError(ValueError):
    """A bound host the egress CA cannot be made for, or a leaf that does not verify; says which."""


def check_hosts(hosts: Iterable[str]) -> tuple[str, ...]:
    """The bound hosts, each a lowercase DNS name of two labels or more (no IP literal, no wildcard), sorted."""
    found = tuple(sorted(set(hosts)))
    if not found or len(found) > MAX_HOSTS:
        raise EgressError(f"an egress CA needs 1 to {MAX_HOSTS} bound hosts, not {len(found)}")
    for host in found:
        if not _HOST.fullmatch(host) or host.rsplit(".", 1)[-1].isdigit():
            raise EgressError(f"{host!r} is not a lowercase DNS name of two labels or more")
    return found


def egress_name() -> x509.Name:
    """The egress CA's subject; the CN has no dot so no verifier reads it as a host name."""
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "sharness"),
                      x509.NameAttribute(NameOID.COMMON_NAME, "sharness egress CA (net door)")])


def egress_constraints(hosts: tuple[str, ...]) -> x509.NameConstraints:
    """Permit each bound host's DNS name and exclude every IP address.

    RFC 5280 reads a permitted `h` as covering `x.h` too; the leading-dot form that would exclude subdomains is one
    cryptography's and webpki's verifiers refuse as malformed, so the CA would fail them whole.
    """
    return x509.NameConstraints(
        permitted_subtrees=[x509.DNSName(host) for host in hosts],
        excluded_subtrees=[x509.IPAddress(ipaddress.ip_network("0.0.0.0/0")),
                           x509.IPAddress(ipaddress.ip_network("::/0"))],
    )


def new_egress_ca(hosts: Iterable[str], ttl_s: int, now: dt.datetime) -> tuple[PrivateKey, x509.Certificate]:
    """The self-signed egress CA for `hosts`: pathLen 0, keyCertSign+cRLSign, name-constrained (critical)."""
    bound = check_hosts(hosts)
    if ttl_s <= 0:
        raise EgressError(f"egress CA ttl_s must be positive, got {ttl_s}")
    key = new_key()
    builder = (
        x509.CertificateBuilder()
        .subject_name(egress_name())
        .issuer_name(egress_name())
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(seconds=BACKDATE_S))
        .not_valid_after(now + dt.timedelta(seconds=ttl_s))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(CA_KEY_USAGE, critical=True)
        .add_extension(egress_constraints(bound), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    return key, builder.sign(key, hashes.SHA256())


def sign_host_leaf(ca_key: PrivateKey, ca_cert: x509.Certificate, host: str, leaf_key: PrivateKey,
                   not_before: dt.datetime, not_after: dt.datetime) -> x509.Certificate:
    """A TLS server leaf naming exactly `host` (one DNS SAN), signed by the egress CA; no check of `host` here."""
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "sharness egress")]))
        .issuer_name(ca_cert.subject)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(LEAF_KEY_USAGE, critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )


def issue_host_leaf(ca_key: PrivateKey, ca_cert: x509.Certificate, host: str, now: dt.datetime,
                    ttl_s: int) -> tuple[PrivateKey, x509.Certificate]:
    """A fresh key and its leaf for a bound `host`, its validity clipped to the CA's."""
    if host not in constrained_hosts(ca_cert):
        raise EgressError(f"{host!r} is not a host this egress CA is bound to")
    not_before = max(now - dt.timedelta(seconds=BACKDATE_S), ca_cert.not_valid_before_utc)
    not_after = min(now + dt.timedelta(seconds=ttl_s), ca_cert.not_valid_after_utc)
    leaf_key = new_key()
    return leaf_key, sign_host_leaf(ca_key, ca_cert, host, leaf_key, not_before, not_after)


def constrained_hosts(ca_cert: x509.Certificate) -> tuple[str, ...]:
    """The DNS names the egress CA's NameConstraints permit."""
    constraints = ca_cert.extensions.get_extension_for_class(x509.NameConstraints).value
    return tuple(name.value for name in constraints.permitted_subtrees or () if isinstance(name, x509.DNSName))


def verify_host_leaf(ca_cert: x509.Certificate, leaf: x509.Certificate, host: str, now: dt.datetime) -> None:
    """Verify `leaf` for `host` as a TLS client would, the egress CA the only anchor; EgressError saying why not."""
    store = verification.Store([ca_cert])
    verifier = verification.PolicyBuilder().store(store).time(now).build_server_verifier(x509.DNSName(host))
    try:
        verifier.verify(leaf, [])
    except verification.VerificationError as exc:
        raise EgressError(f"the egress leaf does not verify for {host!r}: {exc}") from exc


def leaves_pem(leaves: Mapping[str, tuple[PrivateKey, x509.Certificate]]) -> bytes:
    """What the net door's egress memfd holds: per host, in host order, its PEM PKCS#8 key then its leaf."""
    out = bytearray()
    for host in sorted(leaves):
        key, cert = leaves[host]
        out += key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())
        out += cert.public_bytes(serialization.Encoding.PEM)
    return bytes(out)


def split_leaves(pem: bytes) -> dict[str, bytes]:
    """The egress memfd's content, back per host: {host: key PEM + leaf PEM}; EgressError when malformed."""
    blocks = [match.group(0) for match in _PEM_BLOCK.finditer(pem)]
    if not blocks or len(blocks) % 2:
        raise EgressError("the egress leaves are not key and certificate PEM pairs")
    found: dict[str, bytes] = {}
    for key_pem, cert_pem in zip(blocks[::2], blocks[1::2], strict=True):
        if b"PRIVATE KEY" not in key_pem.split(b"\n", 1)[0] or b"CERTIFICATE" not in cert_pem.split(b"\n", 1)[0]:
            raise EgressError("the egress leaves are not key and certificate PEM pairs")
        cert = x509.load_pem_x509_certificate(cert_pem)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        dns = names.get_values_for_type(x509.DNSName)
        if len(dns) != 1:
            raise EgressError("an egress leaf names more or fewer than one host")
        found[dns[0]] = key_pem + cert_pem
    return found
