"""The end signals that come when no supervisor listens: noted, not fatal.

From the journal's creation until the supervisor installs its handlers (the session being created), and again
from the supervisor's close to the end of teardown, SIGINT, SIGTERM and SIGHUP used to take their default
action: the launcher died with users, namespaces and cgroups in place, left for the next sweep (a daemon's
stop of a session that had just reported its sid did exactly that). Now each is noted; the supervisor, once
it listens, ends the session for it in order, and a signal during teardown lets teardown finish.
"""

from __future__ import annotations

import signal
from types import FrameType

END_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class EarlySignals:
    """Installed at creation; `restore` puts the handlers back as they were."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous = {sig: signal.signal(sig, self._note) for sig in END_SIGNALS}

    def _note(self, signum: int, _frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
