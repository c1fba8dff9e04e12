"""HPKE for one release: the `info` that binds a blob to its context, the one-time key's wire form, seal, open.

Suite: ML-KEM-768+X25519, HKDF-SHA256, AES-256-GCM (docs/decisions/keys.md says why). The hybrid public key
has no serializer, so its wire form is the raw ML-KEM-768 half (1184 bytes) then the raw X25519 half (32).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from cryptography.hazmat.primitives import hpke
from cryptography.hazmat.primitives.asymmetric import mlkem, x25519

SUITE_NAME = "MLKEM768-X25519/HKDF-SHA256/AES-256-GCM"
SUITE = hpke.Suite(hpke.KEM.MLKEM768_X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_256_GCM)
MLKEM_PUBLIC_BYTES = 1184
X25519_PUBLIC_BYTES = 32
PUBLIC_KEY_BYTES = MLKEM_PUBLIC_BYTES + X25519_PUBLIC_BYTES
INFO_LABEL = b"sharness-keys-release/v1"


@dataclass(frozen=True)
class Binding:
    """What a sealed blob is for: who asked, which secret, for which host, which request, until when."""

    requester_id: str
    name: str
    host: str
    request_id: str
    expires_at: int

    def info(self) -> bytes:
        """Canonical bytes: the label, then each field as a 2-byte big-endian length and its UTF-8."""
        fields = (self.requester_id, self.name, self.host, self.request_id, str(self.expires_at))
        out = bytearray(INFO_LABEL)
        for text in fields:
            raw = text.encode()
            if len(raw) > 0xFFFF:
                raise ValueError("a binding field is longer than 65535 bytes")
            out += len(raw).to_bytes(2, "big") + raw
        return bytes(out)


class OneTimeKey:
    """A key pair made for one request; only its public half is ever sent."""

    def __init__(self) -> None:
        self._mlkem = mlkem.MLKEM768PrivateKey.generate()
        self._x25519 = x25519.X25519PrivateKey.generate()

    def public_bytes(self) -> bytes:
        """The wire form of the public key (ML-KEM half, then X25519 half)."""
        return self._mlkem.public_key().public_bytes_raw() + self._x25519.public_key().public_bytes_raw()

    def open(self, sealed: bytes, binding: Binding) -> bytes:
        """The plaintext, or cryptography's InvalidTag when `sealed` was made for another key or binding."""
        private = hpke.MLKEM768X25519PrivateKey(self._mlkem, self._x25519)
        return SUITE.decrypt(sealed, private, info=binding.info())


def public_key_from(wire: bytes) -> hpke.MLKEM768X25519PublicKey:
    """The public key from its wire form; ValueError when it is not one."""
    if len(wire) != PUBLIC_KEY_BYTES:
        raise ValueError(f"a one-time public key is {PUBLIC_KEY_BYTES} bytes, not {len(wire)}")
    return hpke.MLKEM768X25519PublicKey(mlkem.MLKEM768PublicKey.from_public_bytes(wire[:MLKEM_PUBLIC_BYTES]),
                                        x25519.X25519PublicKey.from_public_bytes(wire[MLKEM_PUBLIC_BYTES:]))


def key_id(wire: bytes) -> str:
    """A digest naming a public key (the ledger remembers it, not the key)."""
    return hashlib.sha256(wire).hexdigest()


def seal(secret: bytes, wire: bytes, binding: Binding) -> bytes:
    """`secret` sealed to the public key `wire`, opening only under `binding`."""
    return SUITE.encrypt(secret, public_key_from(wire), info=binding.info())
