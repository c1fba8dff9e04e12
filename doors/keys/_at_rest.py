"""Secrets sealed at rest: the machine key's file, the sealed file's header, seal, open, fingerprint. Pure: no I/O.

A sealed file is one header line then the HPKE ciphertext. The header names the format version, the suite,
the machine key's id, the secret's name, when it was sealed, its fingerprint and the ciphertext's length; the
whole line is the HPKE `info`, so a changed header does not open either. The machine key file is a
fixed-length header (so the launcher can read the key's id without reading a byte of the key) then the
ML-KEM-768 seed (64 bytes) and the X25519 private key (32). Suite: docs/decisions/keys.md says why this one.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import re
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hpke
from cryptography.hazmat.primitives.asymmetric import mlkem, x25519

from doors.keys._seal import SUITE, SUITE_NAME
from pki.vocabulary import MACHINE_KEY_NAME, SEALED_PREFIX, SEALED_SUFFIX, SECRET_NAME_PATTERN

MAX_VALUE_BYTES = 64 * 1024  # the keys door's limit for any secret
FORMAT = "sharness-sealed/v1"
KEY_FORMAT = "sharness-machine-key/v1"
_NAME = re.compile(SECRET_NAME_PATTERN)
_KEY_ID_HEX = 32
KEY_HEADER_BYTES = len(f"{KEY_FORMAT} {SUITE_NAME} {'0' * _KEY_ID_HEX}\n")
_SEED_BYTES, _X25519_BYTES = 64, 32
_HEADER = re.compile(
    rf"{re.escape(FORMAT)} suite=(?P<suite>\S+) key=(?P<key>[0-9a-f]{{{_KEY_ID_HEX}}}) name=(?P<name>{_NAME.pattern}) "
    r"created=(?P<created>[0-9]{1,12}) fingerprint=(?P<fingerprint>[0-9a-f]{16}) length=(?P<length>[0-9]{1,7})")
MAX_HEADER_BYTES = 512
ENCAPSULATION_BYTES, TAG_BYTES = 1120, 16  # the hybrid KEM's encapsulation, AES-256-GCM's tag
MAX_SEALED_BYTES = MAX_HEADER_BYTES + MAX_VALUE_BYTES + 2048  # header, value, HPKE's encapsulation and tag


class SealedFileError(ValueError):
    """A sealed file (or the machine key) that is not what it says: the reason, never a value."""


def valid_name(name: str) -> bool:
    """Whether `name` may name a sealed secret (the keys door's request pattern)."""
    return _NAME.fullmatch(name) is not None


def sealed_name(source: str) -> str | None:
    """The sealed store's name when `source` (a `from`) is `sealed:NAME`, else None (a plain file)."""
    return source[len(SEALED_PREFIX):] if source.startswith(SEALED_PREFIX) else None


def sealed_file(root: str, name: str) -> str:
    """Where secret `name` lies sealed in the store at `root`."""
    return f"{root}/{name}{SEALED_SUFFIX}"


def machine_key_file(root: str) -> str:
    """Where the store at `root` keeps its machine key."""
    return f"{root}/{MACHINE_KEY_NAME}"


def secret_value(raw: bytes) -> bytes:
    """What a person typed or piped, as the secret: one trailing newline dropped; ValueError when empty or large."""
    value = raw.removesuffix(b"\n").removesuffix(b"\r")
    if not value:
        raise ValueError("the secret is empty")
    if len(value) > MAX_VALUE_BYTES:
        raise ValueError(f"the secret is larger than {MAX_VALUE_BYTES} bytes")
    return value


@dataclass(frozen=True)
class MachineKey:
    """The store's key pair: what seals every secret at rest and keys their fingerprints."""

    mlkem_seed: bytes
    x25519_private: bytes

    @classmethod
    def generate(cls) -> MachineKey:
        """A new key pair."""
        return cls(mlkem.MLKEM768PrivateKey.generate().private_bytes_raw(),
                   x25519.X25519PrivateKey.generate().private_bytes_raw())

    @functools.cached_property
    def _halves(self) -> tuple[mlkem.MLKEM768PrivateKey, x25519.X25519PrivateKey]:
        # Made once per key: expanding the ML-KEM seed is most of a seal's or an open's cost.
        return (mlkem.MLKEM768PrivateKey.from_seed_bytes(self.mlkem_seed),
                x25519.X25519PrivateKey.from_private_bytes(self.x25519_private))

    def private_key(self) -> hpke.MLKEM768X25519PrivateKey:
        """The HPKE private key (opens a sealed file)."""
        return hpke.MLKEM768X25519PrivateKey(*self._halves)

    def public_key(self) -> hpke.MLKEM768X25519PublicKey:
        """The HPKE public key (seals a file)."""
        return hpke.MLKEM768X25519PublicKey(self._halves[0].public_key(), self._halves[1].public_key())

    @functools.cached_property
    def key_id(self) -> str:
        """A digest of the public half: names the key in each sealed file's header."""
        public = self._halves[0].public_key().public_bytes_raw() + self._halves[1].public_key().public_bytes_raw()
        return hashlib.sha256(b"sharness-machine-key-id/v1" + public).hexdigest()[:_KEY_ID_HEX]

    def file_bytes(self) -> bytes:
        """The key file's content: the fixed-length header, then the private halves."""
        return f"{KEY_FORMAT} {SUITE_NAME} {self.key_id}\n".encode() + self.mlkem_seed + self.x25519_private

    def fingerprint(self, value: bytes) -> str:
        """A short id of `value` keyed by this key: equal values match, nobody without the key can test a guess."""
        key = hashlib.sha256(b"sharness-sealed-fingerprint/v1" + self.mlkem_seed + self.x25519_private).digest()
        return hmac.new(key, value, hashlib.sha256).hexdigest()[:16]


def key_id_of_header(header: bytes) -> str:
    """The key id a key file's first KEY_HEADER_BYTES name; SealedFileError when they are not a key header."""
    match = re.fullmatch(rf"{re.escape(KEY_FORMAT)} (\S+) ([0-9a-f]{{{_KEY_ID_HEX}}})\n".encode(), header)
    if match is None:
        raise SealedFileError("the machine key file does not start with a sharness machine key header")
    if match.group(1).decode() != SUITE_NAME:
        raise SealedFileError(f"the machine key is for suite {match.group(1).decode()!r}, not {SUITE_NAME!r}")
    return match.group(2).decode()


def machine_key_of(data: bytes) -> MachineKey:
    """The machine key from its file's content; SealedFileError when it is not one, or its id does not match."""
    claimed = key_id_of_header(data[:KEY_HEADER_BYTES])
    body = data[KEY_HEADER_BYTES:]
    if len(body) != _SEED_BYTES + _X25519_BYTES:
        raise SealedFileError(f"the machine key file holds {len(body)} key bytes, not {_SEED_BYTES + _X25519_BYTES}")
    key = MachineKey(body[:_SEED_BYTES], body[_SEED_BYTES:])
    if key.key_id != claimed:
        raise SealedFileError("the machine key file's header names another key than the one it holds")
    return key


@dataclass(frozen=True)
class SealedHeader:
    """What a sealed file says of itself (all of it public; none of it the value)."""

    suite: str
    key_id: str
    name: str
    created: int
    fingerprint: str
    length: int

    def line(self) -> bytes:
        """The header line, newline included: also the HPKE `info` the ciphertext opens under."""
        return (f"{FORMAT} suite={self.suite} key={self.key_id} name={self.name} created={self.created} "
                f"fingerprint={self.fingerprint} length={self.length}\n").encode()


def read_header(data: bytes) -> tuple[SealedHeader, bytes]:
    """The header and the ciphertext of a sealed file's content; SealedFileError saying what is wrong."""
    end = data.find(b"\n", 0, MAX_HEADER_BYTES)
    if not data.startswith(FORMAT.encode() + b" "):
        what = "another version of the format" if data.startswith(b"sharness-sealed/") else "not a sealed file"
        raise SealedFileError(f"{what} (it must start with a {FORMAT} header line)")
    if end < 0:
        raise SealedFileError(f"its header line has no end within {MAX_HEADER_BYTES} bytes (truncated)")
    match = _HEADER.fullmatch(data[:end].decode("ascii", "replace"))
    if match is None:
        raise SealedFileError(f"its {FORMAT} header line is malformed")
    header = SealedHeader(match["suite"], match["key"], match["name"], int(match["created"]),
                          match["fingerprint"], int(match["length"]))
    if header.suite != SUITE_NAME:
        raise SealedFileError(f"it is sealed with suite {header.suite!r}; this build opens {SUITE_NAME!r} only")
    ciphertext = data[end + 1:]
    if len(ciphertext) != header.length:
        raise SealedFileError(f"it holds {len(ciphertext)} bytes of ciphertext where its header says "
                              f"{header.length} (truncated or extended)")
    return header, ciphertext


def check_sealed(data: bytes, name: str, key_id: str) -> SealedHeader:
    """What can be checked without the key: the header, the length, the name and the machine key's id."""
    header, _ = read_header(data)
    if header.name != name:
        raise SealedFileError(f"it holds secret {header.name!r}, not {name!r}")
    if header.key_id != key_id:
        raise SealedFileError(f"it was sealed to machine key {header.key_id}, and this machine's key is {key_id}")
    return header


def seal_value(key: MachineKey, name: str, value: bytes, created: int) -> bytes:
    """A sealed file's content for secret `name`."""
    if not valid_name(name):
        raise ValueError(f"{name!r} is not a secret name (it must match {_NAME.pattern})")
    value = secret_value(value + b"\n")  # the same limits as what is read from a person
    header = SealedHeader(SUITE_NAME, key.key_id, name, created, key.fingerprint(value),
                          ENCAPSULATION_BYTES + len(value) + TAG_BYTES)
    return header.line() + SUITE.encrypt(value, key.public_key(), info=header.line())


def open_value(key: MachineKey, data: bytes, name: str) -> bytes:
    """The value in a sealed file's content; SealedFileError when it does not open here, as `name`."""
    header = check_sealed(data, name, key.key_id)
    _, ciphertext = read_header(data)
    try:
        return SUITE.decrypt(ciphertext, key.private_key(), info=header.line())
    except InvalidTag:
        raise SealedFileError("it does not open: it was changed since it was sealed") from None
