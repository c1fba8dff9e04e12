"""The two systemd interfaces the daemon speaks, with the standard library: socket activation (LISTEN_FDS,
LISTEN_FDNAMES, checked against LISTEN_PID) and sd_notify (a datagram to NOTIFY_SOCKET). The maintained
bindings either swallow errors or lack listen_fds (/work/shared/notes/clients-and-tools.md E); here an
error is the caller's to see.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, MutableMapping

SD_LISTEN_FDS_START = 3


class ActivationError(Exception):
    """The environment says socket activation, but not in a form this daemon can trust."""


def listen_fds(environ: Mapping[str, str], pid: int) -> dict[str, int]:
    """name → fd of the sockets systemd passed this process ({} when none were passed to it).

    Refused (ActivationError): LISTEN_FDS without LISTEN_PID, or fds meant for another process (a child that
    inherited the environment must not take its parent's sockets), or names that do not match the count."""
    if "LISTEN_FDS" not in environ:
        return {}
    if environ.get("LISTEN_PID") != str(pid):
        raise ActivationError(f"LISTEN_FDS is set for pid {environ.get('LISTEN_PID')!r}, not this process ({pid})")
    try:
        count = int(environ["LISTEN_FDS"])
    except ValueError:
        raise ActivationError(f"LISTEN_FDS={environ['LISTEN_FDS']!r} is not a number") from None
    names = environ.get("LISTEN_FDNAMES", "").split(":") if environ.get("LISTEN_FDNAMES") else []
    if names and len(names) != count:
        raise ActivationError(f"LISTEN_FDNAMES names {len(names)} fds, LISTEN_FDS says {count}")
    names = names or ["unknown"] * count
    return {name: SD_LISTEN_FDS_START + index for index, name in enumerate(names)}


def forget_activation(environ: MutableMapping[str, str]) -> None:
    """Drop the activation variables, so nothing this process starts believes they are its own."""
    for name in ("LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"):
        environ.pop(name, None)


class Notifier:
    """sd_notify: one datagram per call to $NOTIFY_SOCKET; nothing at all when it is unset."""

    def __init__(self, address: str | None) -> None:
        self._address = address
        if address is not None and address.startswith("@"):
            self._address = "\0" + address[1:]  # an abstract socket
        self._socket: socket.socket | None = None
        if self._address is not None:
            # Non-blocking: a receiver that does not read (a full queue) must never stall the daemon's loop.
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK)
        self.dropped = 0

    @property
    def enabled(self) -> bool:
        return self._socket is not None

    def notify(self, **fields: str | int) -> None:
        """Send `KEY=value` lines (READY=1, STATUS=…, WATCHDOG=1); OSError when the socket refuses them, but a
        full queue only counts the message in `dropped` (the next one says the same, newer)."""
        if self._socket is None or self._address is None:
            return
        text = "\n".join(f"{key}={value}" for key, value in fields.items())
        try:
            self._socket.sendto(text.encode(), self._address)
        except BlockingIOError:
            self.dropped += 1

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None


def watchdog_interval_s(environ: Mapping[str, str], pid: int) -> float | None:
    """Half of WATCHDOG_USEC (systemd's advice), when the watchdog is meant for this process; else None."""
    usec = environ.get("WATCHDOG_USEC")
    if usec is None or environ.get("WATCHDOG_PID", str(pid)) != str(pid):
        return None
    try:
        return int(usec) / 2_000_000
    except ValueError:
        return None
