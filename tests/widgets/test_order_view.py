"""OrderStatusView without a network: rows, badges of both status families, timelines,
counts, the filter, the Cancel button's visibility, bounds, throttling and states."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from toolkit.widgets import OrderStatusView
from toolkit.widgets._order_view import FILTERS, matches


class NoCancelClient:
    """Stands for "a client is present" so Cancel buttons show; never called here."""

    async def acancel_limit_order(self, order_id: str) -> Any:  # pragma: no cover
        raise AssertionError("not called in these tests")


def view_with(ev: Any, clock: Any, **kw: Any) -> OrderStatusView:
    return OrderStatusView([], clock=clock, autostart=False, **kw)


def test_rows_badges_and_timeline(ev: Any, clock: Any) -> None:
    view = view_with(ev, clock)
    t = 1_790_000_000_000
    for i, status in enumerate(["OPEN", "TRIGGERED", "PROCESSING", "closed"]):
        view.apply(ev.order("l-1", status, t + i))
    view.apply(ev.order("m-1", "pending", t + 10, type_="market"))
    view.apply(ev.order("m-1", "closed", t + 11, type_="market"))
    view.apply(ev.order("l-2", "OPEN", t + 12))
    view.repaint(force=True)
    assert view.visible_order_ids == ["l-2", "m-1", "l-1"]  # newest update first
    row = view.slot_for("l-1")
    assert row is not None
    # one line: the last two steps, how many more before them, all of them on hover
    assert "+2 →</span> PROCESSING → CLOSED</span>" in row.html.value
    assert "title='OPEN 2026-09-21 14:13:20.000\nTRIGGERED" in row.html.value
    # one case everywhere; the service's own case is in the badge's tooltip
    assert "data-status='CLOSED' title='sent as closed'>CLOSED</span>" in row.html.value
    assert view.counts() == {"CLOSED": 2, "OPEN": 1}
    assert "ACTIVE 1, FINALIZED 2" in view._counts.value


def test_stale_and_duplicate_notifications_do_not_move_a_row(ev: Any, clock: Any) -> None:
    view = view_with(ev, clock)
    assert view.apply(ev.order("l-1", "PROCESSING", 200))
    assert not view.apply(ev.order("l-1", "OPEN", 100))  # older
    assert not view.apply(ev.order("l-1", "PROCESSING", 200))  # duplicate
    assert view.book.orders["l-1"].status == "PROCESSING"


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ("ALL", {"a", "b", "c", "d", "e"}),
        ("ACTIVE", {"a", "b", "d"}),
        ("FINALIZED", {"c", "e"}),
        ("TRIGGERED", {"b"}),
        ("CLOSED", {"e"}),
    ],
)
def test_filter_dropdown(ev: Any, clock: Any, flt: str, expected: set[str]) -> None:
    view = view_with(ev, clock)
    view.apply(ev.order("a", "OPEN", 1))
    view.apply(ev.order("b", "TRIGGERED", 2))
    view.apply(ev.order("c", "CANCELLING", 3))
    view.apply(ev.order("d", "pending", 4, type_="market"))
    view.apply(ev.order("e", "closed", 5, type_="market"))
    view.filter.value = "REJECTED"
    view.filter.value = flt  # what a user's pick in the Dropdown does
    assert set(view.visible_order_ids) == expected
    assert f"{len(expected)} of {len(expected)} shown" in view._counts.value


def test_filter_options_and_rules() -> None:
    assert FILTERS[:3] == ("ALL", "ACTIVE", "FINALIZED")
    assert matches("CANCELLING", "FINALIZED") and not matches("CANCELLING", "ACTIVE")
    assert matches("PENDING", "ACTIVE")
    with pytest.raises(ValueError, match="status filter"):
        OrderStatusView([], status="open-ish", autostart=False)


def test_cancel_button_only_on_open_limit_orders_with_a_client(ev: Any, clock: Any) -> None:
    view = view_with(ev, clock, client=NoCancelClient())
    view.apply(ev.order("l-open", "OPEN", 1))
    view.apply(ev.order("l-trig", "TRIGGERED", 2))
    view.apply(ev.order("m-pend", "pending", 3, type_="market"))
    view.repaint(force=True)
    shown = {oid: view.slot_for(oid).button.layout.visibility for oid in view.visible_order_ids}  # type: ignore[union-attr]
    assert shown == {"l-open": "visible", "l-trig": "hidden", "m-pend": "hidden"}

    offline = view_with(ev, clock)
    offline.apply(ev.order("l-open", "OPEN", 1))
    offline.repaint(force=True)
    assert offline.slot_for("l-open").button.layout.visibility == "hidden"  # type: ignore[union-attr]


class RecordingCancelClient:
    """Records the ids it is asked to cancel (the answer is not looked at here)."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []

    async def acancel_limit_order(self, order_id: str) -> Any:
        self.cancelled.append(order_id)
        raise RuntimeError("not answered in these tests")


def test_a_click_sent_before_the_rows_moved_cancels_the_order_the_user_saw(
    ev: Any, clock: Any
) -> None:
    """A front end sends a click without saying what the row showed. The user clicks
    Cancel beside l-2 in the second row; before the click reaches the kernel a new order
    arrives and every row moves down one: the second row now shows l-1. The click must
    cancel l-2, never l-1; nor, once l-2 has left the rows, whatever took its place."""

    async def main() -> None:
        client = RecordingCancelClient()
        view = view_with(ev, clock, client=client, max_rows=2)
        view.apply(ev.order("l-2", "OPEN", 1))
        view.apply(ev.order("l-1", "OPEN", 2))
        view.repaint(force=True)
        assert view.visible_order_ids == ["l-1", "l-2"]
        seen = view._slots[1].button  # what the front end shows in the second row
        view.apply(ev.order("l-3", "OPEN", 3))  # the rows move before the click arrives
        view.repaint(force=True)
        assert view.visible_order_ids == ["l-3", "l-1"]  # l-2 has left the rows
        seen.click()  # arms l-2 (the two-step cancel), wherever its row is now
        assert view.armed == "l-2" and client.cancelled == []
        seen.click()
        await asyncio.gather(*view._cancel_tasks)
        assert client.cancelled == ["l-2"]
        clock.advance(60)  # past the hold of l-2's outcome: the rows follow the orders again
        # a button moves with its order
        first = view.slot_for("l-3")
        assert first is not None
        button = first.button
        view.apply(ev.order("l-1", "OPEN", 4))
        view.repaint(force=True)
        assert view.visible_order_ids == ["l-1", "l-3"]
        assert view.slot_for("l-3").button is button  # type: ignore[union-attr]
        assert view._slots[0].button is not button
        button.click()
        button.click()
        await asyncio.gather(*view._cancel_tasks)
        assert client.cancelled == ["l-2", "l-3"]

    asyncio.run(main())


def test_cancel_buttons_are_bounded_and_closed(ev: Any, clock: Any) -> None:
    view = view_with(ev, clock, client=RecordingCancelClient(), max_rows=2)
    made = []
    for i in range(300):
        view.apply(ev.order(f"l-{i}", "OPEN", i))
        view.repaint(force=True)
        made.append(view._slots[0].button)
    kept = view._buttons.widgets()
    assert len(kept) == 64 and all(any(b is k for k in kept) for b in made[-64:])
    assert all(b.comm is None for b in made[:-64])  # closed: the front end drops them
    view.close()
    assert all(b.comm is None for b in made)


def test_widgets_created_once_and_history_bounded(ev: Any, clock: Any) -> None:
    view = view_with(ev, clock, max_rows=10, history_limit=50)
    before = ev.widget_count()
    for i in range(2_000):
        clock.advance(0.001)
        view.apply(ev.order(f"l-{i}", "OPEN", 10 * i))
        view.apply(ev.order(f"l-{i}", "CANCELLED", 10 * i + 1))
        view.repaint()
    view.apply(ev.order("live", "OPEN", 10**9))
    clock.advance(1)
    view.repaint()
    assert ev.widget_count() == before
    assert len(view.book.orders) == 51  # 50 finished kept + the one still active
    assert len(view.visible_order_ids) == 10
    assert view.visible_order_ids[0] == "live"


def test_flood_of_order_events_is_throttled(ev: Any, clock: Any) -> None:
    view = view_with(ev, clock, max_hz=10)
    base = clock.now
    times: list[float] = []
    for n in range(1, 10_001):  # 2 simulated seconds at 5,000 events/s
        clock.now = base + n / 5_000
        view.apply(ev.order(f"o-{n % 40}", "OPEN", n))
        if view.repaint():
            times.append(clock.now)
    assert len(times) <= 21
    assert all(b - a >= 0.1 - 1e-9 for a, b in itertools.pairwise(times))


def test_gap_states_offline(ev: Any, clock: Any) -> None:
    view = view_with(ev, clock)
    view.apply(ev.session("connected"))
    view.apply(ev.session("dropped", "connection lost"))
    assert view.state == "reconnecting"
    view.state = "replaying"
    view.apply(ev.session("gap", gap=(0, 2_000_000_000)))
    # a recording cannot be re-read: the view says where data is missing
    assert view.state == "replaying"
    assert view.state_detail == "gap of 2.0 s without data in the recording"


def test_gap_waits_for_the_books_reconciliation(ev: Any) -> None:
    async def main() -> None:
        view = OrderStatusView([], client=NoCancelClient(), autostart=False)
        view._loop = asyncio.get_running_loop()
        view.apply(ev.session("connected"))
        view.apply(ev.session("gap", gap=(0, 1_000_000_000)))
        assert view.state == "reconciling gap"
        await asyncio.sleep(0.12)
        assert view.state == "reconciling gap"  # the book has not reconciled yet
        view.book.reconciles += 1  # what OrderBook.reconcile does when it completes
        deadline = asyncio.get_running_loop().time() + 5
        while view.state != "gap reconciled" and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        assert view.state == "gap reconciled"
        assert view.state_detail == "gap of 1.0 s"
        await view.astop()

    asyncio.run(main())


def test_replay_as_a_task_and_stop(ev: Any) -> None:
    base = ev.widget_count()
    events = [
        ev.order(f"l-{i % 30}", s, i * 4 + k)
        for i in range(300)
        for k, s in enumerate(["OPEN", "TRIGGERED", "PROCESSING"])
    ]

    async def main() -> OrderStatusView:
        view = OrderStatusView(events, max_rows=5)
        assert view.task is not None
        await asyncio.wait_for(view.task, 10)
        return view

    view = asyncio.run(main())
    assert view.state == "replay finished"
    assert view.counts() == {"PROCESSING": 30}
    assert len(view.visible_order_ids) == 5
    view.stop()  # frozen: the last table stays on screen
    assert view.state == "stopped" and ev.widget_count() > base
    assert len(view.visible_order_ids) == 5 and view.filter.disabled
    view.close()
    assert ev.widget_count() == base
