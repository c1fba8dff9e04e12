"""The session's budget: reserve before a call, settle after it, never spend past the budget. Pure: no I/O.

Every call reserves what it could cost at most before it is forwarded, and settles once it is over: what
its usage says it cost, capped at its reservation (the forwarded `max_tokens` is what makes the cap true),
or the whole reservation when the stream was cut or the client left. So `spent + reserved <= budget` holds
at every moment, whatever runs at once. `reserve` and `settle` do not await: in one trio task context each
is atomic, and the check and the booking cannot be split by another task (not thread-safe, by design).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass


@dataclass(frozen=True)
class Reservation:
    """Money set aside for one call until it settles."""

    number: int
    amount_microusd: int


@dataclass(frozen=True)
class Settlement:
    """What one call cost the budget (`charged`), and what its usage said (`reported`): above the reservation,
    the difference is `overrun` — money the provider may bill that the ledger did not book, for the audit."""

    reservation: Reservation
    charged_microusd: int
    reported_microusd: int

    @property
    def overrun_microusd(self) -> int:
        """What the usage reported beyond the reservation (0 unless the reservation was wrong)."""
        return max(0, self.reported_microusd - self.charged_microusd)


@dataclass(frozen=True)
class LedgerStatistics:
    """The ledger at one moment, for `check`, the audit and the session summary."""

    budget_microusd: int
    spent_microusd: int
    reserved_microusd: int
    remaining_microusd: int
    overrun_microusd: int
    granted: int
    refused: int
    open: int


class Ledger:
    """Reservations against one budget in µUSD; `spent + reserved` never exceeds it."""

    def __init__(self, budget_microusd: int) -> None:
        _check_amount("budget_microusd", budget_microusd)
        self._budget = budget_microusd
        self._spent = 0
        self._reserved = 0
        self._overrun = 0
        self._granted = 0
        self._refused = 0
        self._open: dict[int, Reservation] = {}
        self._numbers = itertools.count(1)

    @property
    def budget(self) -> int:
        """The session's budget in µUSD."""
        return self._budget

    @property
    def spent(self) -> int:
        """What settled calls cost, in µUSD."""
        return self._spent

    @property
    def reserved(self) -> int:
        """What calls in flight have set aside, in µUSD."""
        return self._reserved

    @property
    def remaining(self) -> int:
        """What a new reservation may take, in µUSD."""
        return self._budget - self._spent - self._reserved

    def reserve(self, amount_microusd: int) -> Reservation | None:
        """Set `amount_microusd` aside for one call, or None when what remains cannot cover it."""
        _check_amount("a reservation", amount_microusd)
        if amount_microusd > self.remaining:
            self._refused += 1
            return None
        reservation = Reservation(next(self._numbers), amount_microusd)
        self._open[reservation.number] = reservation
        self._reserved += amount_microusd
        self._granted += 1
        return reservation

    def settle(self, reservation: Reservation, charged_microusd: int) -> Settlement:
        """Close `reservation` at what the call cost, capped at the reservation; the rest returns to the budget."""
        _check_amount("a charge", charged_microusd)
        if self._open.pop(reservation.number, None) != reservation:
            raise ValueError(f"reservation {reservation.number} is not open (settled twice, or not this ledger's)")
        charged = min(charged_microusd, reservation.amount_microusd)
        self._reserved -= reservation.amount_microusd
        self._spent += charged
        self._overrun += charged_microusd - charged
        return Settlement(reservation, charged, charged_microusd)

    def settle_cut(self, reservation: Reservation) -> Settlement:
        """Close a call whose usage cannot be trusted (a cut stream, a client gone): the whole reservation."""
        return self.settle(reservation, reservation.amount_microusd)

    def statistics(self) -> LedgerStatistics:
        """The ledger now, as a frozen record."""
        return LedgerStatistics(self._budget, self._spent, self._reserved, self.remaining, self._overrun,
                                self._granted, self._refused, len(self._open))


def _check_amount(what: str, amount: int) -> None:
    if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
        raise ValueError(f"{what} must be a whole, non-negative number of µUSD, not {amount!r}")
