"""The order view is safe to act on (issue #27), without a network and on a fake clock:
Cancel is a two-step bound to one order; the rows hold still while a Cancel is armed or
its outcome is shown, and that outcome keeps its row even when the filter would hide it;
an offline view disables Cancel; "N of M shown", find and pin by id, this session's
orders; amount, filled and average price; the REST marker only after a gap."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from toolkit.client._cancel import CancelOutcome, CancelResult
from toolkit.errors import InvalidRequest
from toolkit.widgets import OrderStatusView
from toolkit.widgets._order_guard import ARM_S, HOLD_S, CancelGuard


class Cancels:
    """Accepts every cancel, as the service does for an OPEN order; records the ids."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []

    async def acancel_limit_order(self, order_id: str) -> CancelResult:
        self.cancelled.append(order_id)
        return CancelResult(order_id, CancelOutcome.ACCEPTED, "CANCELLING", 202)


def open_view(ev: Any, clock: Any, n: int = 4, **kw: Any) -> tuple[OrderStatusView, Cancels]:
    client = Cancels()
    view = OrderStatusView([], client=client, clock=clock, autostart=False, **kw)
    for i in range(n):
        view.apply(ev.order(f"l-{i}", "OPEN", 1_000 + i))
    view.repaint(force=True)
    return view, client


def button_of(view: OrderStatusView, row: int) -> Any:
    """The button the front end shows in row ``row`` (what a click at that spot hits)."""
    return view._slots[row].button


async def settle(view: OrderStatusView) -> None:
    await asyncio.gather(*view._cancel_tasks)


# -- the guard, sans-I/O -------------------------------------------------------------------


def test_guard_arms_confirms_and_disarms_on_its_clock(clock: Any) -> None:
    guard = CancelGuard(clock)
    assert not guard.click("a") and guard.armed == "a" and guard.frozen
    assert not guard.click("b") and guard.armed == "b"  # another order: arms that one only
    assert guard.click("b") and guard.armed is None  # the same order again: confirmed
    assert not guard.click("a")
    clock.advance(ARM_S + 0.01)
    assert not guard.click("a")  # too late: this click arms again, it does not confirm
    clock.advance(ARM_S + 0.01)
    assert guard.expire() == ["a"] and not guard.frozen
    guard.hold("a")
    assert guard.frozen and guard.next_deadline() == pytest.approx(clock.now + HOLD_S)
    clock.advance(HOLD_S)
    assert guard.expire() == ["a"] and guard.next_deadline() is None


# -- the two-step cancel -------------------------------------------------------------------


def test_a_first_click_arms_and_only_a_second_on_the_same_button_cancels(
    ev: Any, clock: Any
) -> None:
    async def main() -> None:
        view, client = open_view(ev, clock)
        button = button_of(view, 1)
        oid = view._buttons.owner(button)
        button.click()
        await settle(view)
        assert client.cancelled == [] and view.armed == oid
        assert button.description == f"Confirm cancel {oid}"
        assert button.button_style == "danger"
        # every row's Cancel cell is wide enough for the armed label: no column moves
        basis = {slot.action.layout.flex for slot in view._slots}
        assert len(basis) == 1
        assert float(basis.pop().split()[2].removesuffix("em")) >= 0.6 * len("Confirm cancel l-0")
        assert float(view._slots[0].action.layout.flex.split()[2][:-2]) >= 0.6 * (15 + 13)
        button.click()
        await settle(view)
        assert client.cancelled == [oid]
        assert view.armed is None

    asyncio.run(main())


def test_an_armed_cancel_disarms_after_its_timeout(ev: Any, clock: Any) -> None:
    async def main() -> None:
        view, client = open_view(ev, clock)
        button = button_of(view, 0)
        button.click()
        clock.advance(ARM_S + 0.1)
        view.repaint(force=True)
        assert view.armed is None and button.description == "Cancel"
        button.click()  # a click after the timeout arms again, it cancels nothing
        await settle(view)
        assert client.cancelled == []

    asyncio.run(main())


def test_the_filter_or_the_find_box_disarms(ev: Any, clock: Any) -> None:
    view, _client = open_view(ev, clock)
    button_of(view, 0).click()
    assert view.armed is not None
    view.filter.value = "OPEN"
    assert view.armed is None and button_of(view, 0).description == "Cancel"


def test_a_second_click_after_the_rows_moved_cancels_nothing_it_was_not_armed_for(
    ev: Any, clock: Any
) -> None:
    """Issue #27: with the view filtered on OPEN, a cancelled order leaves the filter and
    every row moves up; a second click at the same spot hit the next order. Now the first
    cancel needs two clicks; its row stays (with its outcome) while the outcome is held;
    once the rows move, a click at that spot only arms the order now there."""

    async def main() -> None:
        view, client = open_view(ev, clock, status="OPEN")
        spot = 1
        first = view.visible_order_ids[spot]
        button_of(view, spot).click()
        button_of(view, spot).click()
        await settle(view)
        assert client.cancelled == [first]
        view.apply(ev.order(first, "CANCELLING", 2_000))  # leaves the OPEN filter
        view.apply(ev.order("l-9", "OPEN", 2_001))  # and a new order arrives on top
        view.repaint(force=True)
        # the rows hold still: the cancelled order keeps its spot, with its outcome
        assert view.visible_order_ids[spot] == first
        slot = view._slots[spot]
        assert "accepted (CANCELLING)" in slot.outcome.value
        assert slot.button.layout.visibility == "hidden"  # no button to hit at that spot
        button_of(view, spot).click()  # a click there now: nothing
        await settle(view)
        assert client.cancelled == [first]
        view.apply(ev.order(first, "CANCELLED", 2_002))
        view.repaint(force=True)
        assert "cancelled" in view._slots[spot].outcome.value  # the outcome followed
        clock.advance(HOLD_S + 0.1)
        view.repaint(force=True)
        # the hold is over: the rows follow the orders again, the cancelled one is gone
        assert first not in view.visible_order_ids
        other = view.visible_order_ids[spot]
        button_of(view, spot).click()  # the same spot, a second time: arms `other` only
        await settle(view)
        assert client.cancelled == [first] and view.armed == other

    asyncio.run(main())


def test_rows_hold_still_while_a_cancel_is_armed(ev: Any, clock: Any) -> None:
    view, _client = open_view(ev, clock, n=3, max_rows=4)
    before = view.visible_order_ids
    button_of(view, 2).click()
    view.apply(ev.order("l-0", "OPEN", 5_000))  # would go to the top
    view.apply(ev.order("l-7", "OPEN", 5_001))  # a new order: fills the empty row only
    view.repaint(force=True)
    assert view.visible_order_ids == [*before, "l-7"]
    assert "held still" in view._counts.value
    clock.advance(ARM_S + 0.1)
    view.repaint(force=True)
    assert view.visible_order_ids[:2] == ["l-7", "l-0"]  # disarmed: newest first again


def test_a_programmatic_cancel_keeps_its_outcome_on_a_row_the_filter_hides(
    ev: Any, clock: Any
) -> None:
    async def main() -> None:
        view, _client = open_view(ev, clock, status="OPEN")
        await view.cancel("l-1")
        view.apply(ev.order("l-1", "CANCELLING", 2_000))
        view.repaint(force=True)
        assert "l-1" in view.visible_order_ids
        clock.advance(HOLD_S - 0.5)
        view.repaint(force=True)
        assert "l-1" in view.visible_order_ids
        clock.advance(1.0)
        view.repaint(force=True)
        assert "l-1" not in view.visible_order_ids

    asyncio.run(main())


# -- offline -------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["reconnecting", "connecting", "error"])
def test_an_offline_view_disables_cancel_and_a_late_click_cancels_nothing(
    ev: Any, clock: Any, state: str
) -> None:
    async def main() -> None:
        view, client = open_view(ev, clock)
        button = button_of(view, 0)
        button.click()  # armed before the connection was lost
        view._set_state(state, "lost")
        assert button.disabled and view.armed is None
        button.click()  # a click the front end sent before it drew the disabled button
        button.click()
        await settle(view)
        assert client.cancelled == []
        view.apply(ev.order("l-8", "OPEN", 3_000))  # a button made while offline
        view.repaint(force=True)
        assert button_of(view, 0).disabled
        view._set_state("connected")
        assert not button.disabled and not button_of(view, 0).disabled

    asyncio.run(main())


# -- what the table says -------------------------------------------------------------------


def test_n_of_m_shown(ev: Any, clock: Any) -> None:
    view, _client = open_view(ev, clock, n=14, max_rows=12)
    assert view.shown == (12, 14)
    assert "12 of 14 shown" in view._counts.value


def test_find_and_pin_an_order_by_id(ev: Any, clock: Any) -> None:
    view, _client = open_view(ev, clock, n=30, max_rows=5)
    assert "l-3" not in view.visible_order_ids  # an old order, not among the 5 newest
    view.find.value = "l-3"
    assert view.visible_order_ids == ["l-3"]
    view.pin_button.click()
    assert view.pinned == ("l-3",) and view.pin_button.description == "unpin"
    view.find.value = ""
    assert view.visible_order_ids[0] == "l-3"  # pinned: on top, whatever the filter
    view.filter.value = "CANCELLED"
    assert view.visible_order_ids == ["l-3"]
    slot = view.slot_for("l-3")
    assert slot is not None and "data-pinned='1'" in slot.html.value
    view.unpin("l-3")
    assert view.visible_order_ids == []
    with pytest.raises(InvalidRequest, match="pin: order_id"):
        view.pin("")


def test_this_sessions_orders_are_those_after_the_first_read(ev: Any, clock: Any) -> None:
    view = OrderStatusView([], client=Cancels(), clock=clock, autostart=False, status="SESSION")
    view.apply(ev.order("old", "OPEN", 1_000, reconciled=True))  # the read at start
    view.book.reconciles = 1  # the first pass is done
    view.apply(ev.order("mine", "OPEN", 2_000))
    view.repaint(force=True)
    assert view.visible_order_ids == ["mine"]
    assert view.session_order_ids == {"mine"}
    assert ("this session's orders", "SESSION") in view.filter.options


def test_orders_read_at_start_are_not_marked_read_after_a_gap(ev: Any, clock: Any) -> None:
    view = OrderStatusView([], client=Cancels(), clock=clock, autostart=False)
    view.apply(ev.order("l-1", "OPEN", 1_000, reconciled=True))  # the read at start
    view.book.reconciles = 1
    view.apply(ev.order("l-2", "OPEN", 1_001))
    view.apply(ev.order("l-2", "CANCELLED", 1_002, reconciled=True))  # after a gap
    view.repaint(force=True)
    first, second = view.slot_for("l-1"), view.slot_for("l-2")
    assert first is not None and second is not None
    assert "tk-rec" not in first.html.value
    assert "<span class='tk-rec'>CANCELLED</span>" in second.html.value


def test_amount_filled_and_average_price_columns(ev: Any, clock: Any) -> None:
    view = OrderStatusView([], clock=clock, autostart=False)
    event = ev.order("m-1", "closed", 1_000, type_="market")
    event.order.update(amount="0.00150000", filled="0.0015", average="351234.5")
    view.apply(event)
    view.repaint(force=True)
    slot = view.slot_for("m-1")
    assert slot is not None
    assert "<span class='tk-num'>0.0015</span><span class='tk-num'>0.0015</span>" in (
        slot.html.value
    )
    assert "351,234.50" in slot.html.value
    row = view.to_frame().iloc[0]
    assert (row["amount"], row["filled"], row["average"]) == (0.0015, 0.0015, 351234.5)
    # a quantity to 8 decimals fits its column whole (JupyterLab clipped "0.00064994")
    mins = [float(m) for m in re.findall(r"minmax\(([\d.]+)em", view._grid)]
    assert mins[6] == mins[7] >= 0.61 * len("0.00064994") + 0.4
    unfilled = ev.order("l-1", "OPEN", 2_000)
    unfilled.order.update(amount="0.001", average="0")  # nothing executed: no average
    view.apply(unfilled)
    view.repaint(force=True)
    slot = view.slot_for("l-1")
    assert (
        slot is not None
        and "<span class='tk-num'>–</span><span class='tk-num'>–</span><span class='tk-tl'"
        in slot.html.value
    )


def test_columns_do_not_move_when_a_timeline_grows(ev: Any, clock: Any) -> None:
    view, _client = open_view(ev, clock, n=1)
    slot = view.slot_for("l-0")
    assert slot is not None
    grid, width = view._grid, slot.html.layout.min_width
    for k, status in enumerate(["TRIGGERED", "PROCESSING", "OPEN", "TRIGGERED", "PROCESSING"]):
        view.apply(ev.order("l-0", status, 2_000 + k))
        view.repaint(force=True)
        assert view._grid == grid and slot.html.layout.min_width == width


def test_a_long_quantity_or_price_widens_its_columns_which_never_narrow(
    ev: Any, clock: Any
) -> None:
    """JupyterLab clipped an amount of "181.36312525" (12 characters in a column for 10):
    each number column fits the longest text shown so far, the header's too."""
    view = OrderStatusView([], clock=clock, autostart=False)
    mins = lambda: [float(m) for m in re.findall(r"minmax\(([\d.]+)em", view._grid)]  # noqa: E731
    start = mins()
    big = ev.order("l-1", "OPEN", 1_000)
    big.order.update(amount="181.36312525", filled="0", limitPrice="1234567.891")
    view.apply(big)
    view.repaint(force=True)
    wide = mins()
    assert wide[6] == wide[7] >= 0.61 * len("181.36312525") + 0.4 > start[6]
    assert wide[5] == wide[8] >= 0.61 * len("1,234,567.89") + 0.4 > start[5]
    assert wide[:5] == start[:5] and wide[9:] == start[9:]
    assert view._grid in view._header.html.value
    slot = view.slot_for("l-1")
    assert slot is not None and "181.36312525" in slot.html.value
    # a short one later (or the long one gone) moves nothing
    small = ev.order("l-2", "OPEN", 2_000)
    small.order.update(amount="0.5", limitPrice="10")
    view.apply(small)
    view.apply(ev.order("l-1", "CANCELLED", 3_000))
    view.repaint(force=True)
    assert mins() == wide


def test_the_lines_above_the_rows_keep_their_height(ev: Any, clock: Any) -> None:
    """Seen in Chromium: arming a Cancel lengthened the counts line, the filter bar wrapped
    and every row moved down under the pointer. The counts have a line of their own, one
    line high whatever they say (the whole of it on hover), and so has the state line."""
    from toolkit.widgets._theme import STYLE

    view, _client = open_view(ev, clock)
    assert view._counts not in view._bar.children and view._counts.layout.width == "100%"
    assert ".tk-counts, .tk-status {white-space: nowrap; overflow: hidden;" in STYLE
    button_of(view, 0).click()
    assert "held still" in view._counts.value and "title='4 of 4 shown (held" in (
        view._counts.value
    )


def test_what_the_view_remembers_per_order_is_bounded_like_the_book(ev: Any, clock: Any) -> None:
    view = OrderStatusView([], clock=clock, autostart=False, history_limit=10)
    for i in range(3_000):
        view.apply(ev.order(f"m-{i}", "closed", 1_000 + i, type_="market"))
    assert len(view.book.orders) <= 10
    assert len(view._new_ids) + len(view._loaded) <= 4 * 256 + 1
