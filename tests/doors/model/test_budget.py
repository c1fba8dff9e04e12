"""The ledger: reserve before, settle after, never above the budget, however many calls run at once."""

from __future__ import annotations

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from doors.model._budget import Ledger, LedgerStatistics, Reservation
from doors.model._prices import SHIPPED_PRICES
from doors.model._shape import CallPlan, plan_call


def test_reserve_then_settle_returns_the_rest() -> None:
    ledger = Ledger(1000)
    reservation = ledger.reserve(600)
    assert reservation is not None
    assert (ledger.spent, ledger.reserved, ledger.remaining) == (0, 600, 400)
    settlement = ledger.settle(reservation, 250)
    assert (settlement.charged_microusd, settlement.overrun_microusd) == (250, 0)
    assert (ledger.spent, ledger.reserved, ledger.remaining) == (250, 0, 750)


def test_a_reservation_that_does_not_fit_is_refused_and_changes_nothing() -> None:
    ledger = Ledger(1000)
    assert ledger.reserve(1001) is None
    assert ledger.remaining == 1000
    assert ledger.reserve(1000) is not None
    assert ledger.reserve(1) is None
    assert ledger.statistics() == LedgerStatistics(1000, 0, 1000, 0, 0, granted=1, refused=2, open=1)


def test_a_charge_above_the_reservation_is_capped_and_the_overrun_recorded() -> None:
    ledger = Ledger(1000)
    reservation = ledger.reserve(300)
    assert reservation is not None
    settlement = ledger.settle(reservation, 450)
    assert (settlement.charged_microusd, settlement.reported_microusd, settlement.overrun_microusd) == (300, 450, 150)
    assert ledger.spent == 300
    assert ledger.statistics().overrun_microusd == 150


def test_a_cut_stream_costs_its_whole_reservation() -> None:
    ledger = Ledger(1000)
    reservation = ledger.reserve(700)
    assert reservation is not None
    assert ledger.settle_cut(reservation).charged_microusd == 700
    assert (ledger.spent, ledger.remaining) == (700, 300)


def test_settling_twice_or_a_foreign_reservation_is_an_error() -> None:
    ledger = Ledger(1000)
    reservation = ledger.reserve(10)
    assert reservation is not None
    ledger.settle(reservation, 0)
    with pytest.raises(ValueError, match="not open"):
        ledger.settle(reservation, 0)
    other = Ledger(1000).reserve(10)
    assert other is not None
    with pytest.raises(ValueError, match="not open"):
        ledger.settle(other, 0)
    with pytest.raises(ValueError, match="not open"):
        ledger.settle(Reservation(99, 10), 0)
    assert ledger.spent == 0


@pytest.mark.parametrize("amount", [-1, 1.5, True, "3"])
def test_amounts_are_whole_and_non_negative(amount: object) -> None:
    ledger = Ledger(10)
    with pytest.raises(ValueError, match="whole, non-negative"):
        ledger.reserve(amount)  # type: ignore[arg-type]
    reservation = ledger.reserve(1)
    assert reservation is not None
    with pytest.raises(ValueError, match="whole, non-negative"):
        ledger.settle(reservation, amount)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Ledger(amount)  # type: ignore[arg-type]


def test_a_zero_budget_admits_nothing_but_a_free_call() -> None:
    ledger = Ledger(0)
    assert ledger.reserve(1) is None
    assert ledger.reserve(0) is not None


async def test_fifty_concurrent_reservations_against_ten_calls_grant_exactly_ten() -> None:
    ledger = Ledger(10 * 5000)
    granted: list[Reservation] = []
    tried = 0
    all_tried = trio.Event()
    highest_spend = 0

    async def call() -> None:
        nonlocal tried, highest_spend
        await trio.sleep(0)
        reservation = ledger.reserve(5000)
        tried += 1
        if tried == 50:
            all_tried.set()
        if reservation is None:
            return
        granted.append(reservation)
        await all_tried.wait()  # every grant is held open until all 50 have asked
        for _ in range(3):
            await trio.sleep(0)  # a stream in flight
        ledger.settle(reservation, 5000 if reservation.number % 2 else 4000)
        highest_spend = max(highest_spend, ledger.spent + ledger.reserved)

    async with trio.open_nursery() as nursery:
        for _ in range(50):
            nursery.start_soon(call)
    assert len(granted) == 10
    assert ledger.statistics().refused == 40
    assert highest_spend <= ledger.budget
    assert ledger.spent == 5 * 5000 + 5 * 4000


async def test_fifty_concurrent_planned_calls_never_spend_past_the_budget() -> None:
    # The door's own sequence: plan against what remains, then reserve, with no await in between.
    price = SHIPPED_PRICES["claude-sonnet-4-5"]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 1000, "messages": []}
    one_call = 1000 * 6 + 1000 * 15  # 1000 input tokens at the 1h write rate, 1000 output tokens
    ledger = Ledger(10 * one_call)
    plans: list[CallPlan] = []
    tried = 0
    all_tried = trio.Event()

    async def call() -> None:
        nonlocal tried
        await trio.sleep(0)
        plan = plan_call(body, price, ledger.remaining, 1000, floor_tokens=1000)
        reservation = ledger.reserve(plan.reserve_microusd) if isinstance(plan, CallPlan) else None
        assert isinstance(plan, CallPlan) == (reservation is not None)  # nothing ran in between
        tried += 1
        if tried == 50:
            all_tried.set()
        if reservation is None:
            return
        plans.append(plan)
        await all_tried.wait()
        assert ledger.spent + ledger.reserved <= ledger.budget
        ledger.settle_cut(reservation)

    async with trio.open_nursery() as nursery:
        for _ in range(50):
            nursery.start_soon(call)
    assert len(plans) == 10
    assert ledger.spent == ledger.budget


operations = st.lists(st.tuples(st.sampled_from(["reserve", "settle", "cut"]), st.integers(0, 400)), max_size=60)


@given(budget=st.integers(0, 2000), steps=operations)
def test_spent_plus_reserved_never_exceeds_the_budget(budget: int, steps: list[tuple[str, int]]) -> None:
    ledger = Ledger(budget)
    open_reservations: list[Reservation] = []
    for operation, amount in steps:
        if operation == "reserve":
            before = ledger.remaining
            reservation = ledger.reserve(amount)
            assert (reservation is None) == (amount > before)
            if reservation is not None:
                open_reservations.append(reservation)
        elif open_reservations:
            reservation = open_reservations.pop(amount % len(open_reservations))
            settled = ledger.settle_cut(reservation) if operation == "cut" else ledger.settle(reservation, amount)
            assert settled.charged_microusd <= reservation.amount_microusd
        assert 0 <= ledger.spent <= ledger.spent + ledger.reserved <= budget
        assert ledger.reserved == sum(r.amount_microusd for r in open_reservations)
        assert ledger.remaining == budget - ledger.spent - ledger.reserved
