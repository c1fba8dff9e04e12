"""The keys door's sources, opened as root before anything is created: plain files, and sealed-store secrets.

A `sealed:NAME` source is two fds for the keys door: the sealed file and the machine key. What can be checked
without the key is checked here (the header, the length, the name, the machine key's id, read from the key
file's header alone), so a truncated or foreign file stops the session with 78 before anything exists; a
changed ciphertext is found when the keys door opens the seal, at its start (docs/contracts.md). The
launcher never reads a byte of a secret or of the machine key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from doors.keys import (
    KEY_HEADER_BYTES,
    MAX_SEALED_BYTES,
    SealedFileError,
    check_sealed,
    key_id_of_header,
    machine_key_file,
    sealed_file,
)
from launcher.lifecycle.preflight import PreflightError, open_secret_file
from pki.vocabulary import SEALED_PREFIX, SEALED_ROOT


@dataclass
class SecretSources:
    """The open sources: one fd per secret (name order), and the machine key's when a secret is sealed."""

    fds: dict[str, int] = field(default_factory=dict)
    machine_key: int | None = None

    def close(self) -> None:
        """Close every fd (the keys door holds its copies by then, or the session never started)."""
        for fd in (*self.fds.values(), *([] if self.machine_key is None else [self.machine_key])):
            os.close(fd)
        self.fds, self.machine_key = {}, None


def _pread_all(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size <= limit and (chunk := os.pread(fd, limit + 1 - size, size)):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _refused(name: str, path: str, problem: str) -> PreflightError:
    row = f"doors.keys.secrets.{name}.from"
    return PreflightError(row, f"the sealed secret {name!r} ({path}) cannot be used: {problem}",
                          f"seal it again (sudo sharness-launch secret add --replace {name}) or restore the file; "
                          f"`sharness-launch secret list` shows what the store holds")


def _machine_key_id(name: str, fd: int, path: str) -> str:
    try:
        return key_id_of_header(os.pread(fd, KEY_HEADER_BYTES, 0))  # the header only: never a byte of the key
    except SealedFileError as exc:
        raise _refused(name, path, str(exc)) from None


def _check_sealed(name: str, stored: str, fd: int, key_id: str, root: str) -> None:
    try:
        check_sealed(_pread_all(fd, MAX_SEALED_BYTES), stored, key_id)  # ciphertext and header: no secret
    except SealedFileError as exc:
        raise _refused(name, sealed_file(root, stored), str(exc)) from None


def _open_one(sources: SecretSources, name: str, source: str, root: str) -> None:
    if not source.startswith(SEALED_PREFIX):
        sources.fds[name] = open_secret_file(name, source)
        return
    stored = source.removeprefix(SEALED_PREFIX)
    if sources.machine_key is None:
        sources.machine_key = open_secret_file(name, machine_key_file(root))
    fd = sources.fds[name] = open_secret_file(name, sealed_file(root, stored))
    _check_sealed(name, stored, fd, _machine_key_id(name, sources.machine_key, machine_key_file(root)), root)


def open_secret_sources(secrets: Mapping[str, Mapping[str, object]], root: str = SEALED_ROOT) -> SecretSources:
    """Open every `doors.keys.secrets.<name>.from` as root (fds for the keys door; never a secret read here).

    A plain source that is missing, a symlink, not a regular file, not root's, or open to group or others is
    refused before anything is created, and so is a sealed one whose file or machine key is, or whose header
    does not match; the fds opened so far are closed then.
    """
    sources = SecretSources()
    try:
        for name, row in sorted(secrets.items()):
            _open_one(sources, name, str(row["from"]), root)
    except BaseException:
        sources.close()
        raise
    return sources
