"""The keys door's side of a sealed source: read the machine key and each sealed file from inherited fds, open.

The launcher opened both as root and read none of the key; here, in the keys door's own process, the seal is
opened and the key dropped, so a secret in clear exists in this process only. A seal that does not open
(changed, truncated, another machine's) is the door's fatal error at start, naming the row.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from doors.keys._at_rest import MAX_SEALED_BYTES, SealedFileError, machine_key_of, open_value


def _read_closing(fd: int, limit: int) -> bytes:
    try:
        chunks, size = [], 0
        while size <= limit and (chunk := os.pread(fd, limit + 1 - size, size)):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_sealed_fds(sealed: Mapping[str, tuple[int, str]], key_fd: int | None) -> dict[str, bytes]:
    """Each sealed secret's value by its row's name, from {row name: (fd, the name its sealed file holds)};
    every fd given (the key's too) is closed. ValueError naming the row when one does not open."""
    fds = [fd for fd, _ in sealed.values()]
    if not sealed or key_fd is None:
        for fd in fds if key_fd is None else [key_fd]:
            os.close(fd)
        if sealed:
            raise ValueError(f"the keys door was given no machine key fd for sealed secret(s) {sorted(sealed)}")
        return {}
    contents = {name: (_read_closing(fd, MAX_SEALED_BYTES), stored) for name, (fd, stored) in sorted(sealed.items())}
    try:
        key = machine_key_of(_read_closing(key_fd, 4096))
    except SealedFileError as exc:
        raise ValueError(f"the machine key does not load: {exc}") from None
    values = {}
    for name, (data, stored) in contents.items():
        try:
            values[name] = open_value(key, data, stored)
        except SealedFileError as exc:
            raise ValueError(f"doors.keys.secrets.{name}.from: the sealed secret {stored!r} {exc}; seal it "
                             f"again (sharness-launch secret add --replace {stored})") from None
    return values
