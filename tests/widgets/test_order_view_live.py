"""OrderStatusView against the real simulator: rows from the reconciled book, and the Cancel
button's outcome matching the CancelResult and fetchOrder (accepted, deferred, final)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from toolkit.client._cancel import CancelOutcome
from toolkit.widgets import OrderStatusView, TickerView


async def until(condition: Callable[[], object], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def _new_open_order(client: Any, view: OrderStatusView) -> str:
    order = await client.acreate_limit_order("BTC/BRL", "buy", "1000", amount="0.001")
    assert order["status"].upper() == "OPEN"  # in the profile's status case
    await until(lambda: order["id"] in view.visible_order_ids)
    return str(order["id"])


def test_cancel_button_outcomes_match_cancel_result_and_fetch_order(fresh_sim: Any) -> None:
    async def main() -> None:
        client = fresh_sim.client()
        view = OrderStatusView(client, max_rows=40, status="OPEN")
        try:
            await until(lambda: view.state == "connected" and view.book.reconciles >= 1)

            # accepted: an OPEN order, clicked
            oid = await _new_open_order(client, view)
            slot = view.slot_for(oid)
            assert slot is not None and slot.button.layout.visibility == "visible"
            slot.button.click()  # arms it
            assert view.armed == oid and slot.button.description == f"Confirm cancel {oid}"
            slot.button.click()  # confirms it
            await until(lambda: oid in view.cancel_results)
            result = view.cancel_results[oid]
            assert result.outcome is CancelOutcome.ACCEPTED
            assert "data-outcome='accepted'" in view.outcome_text(oid)
            status = (await client.afetch_order(oid))["status"]
            assert status.upper() in ("CANCELLING", "CANCELLED")  # in the profile's case
            # the row follows the book: it leaves the OPEN filter once CANCELLING arrives
            # and its outcome has been shown for the hold (HOLD_S)
            await until(lambda: oid not in view.visible_order_ids, timeout=60)

            # deferred: the order started executing before the click reached the service
            oid = await _new_open_order(client, view)
            fresh_sim.control.advance(oid, "TRIGGERED")
            view.slot_for(oid).button.click()  # type: ignore[union-attr]
            view.slot_for(oid).button.click()  # type: ignore[union-attr]
            await until(lambda: oid in view.cancel_results)
            result = view.cancel_results[oid]
            assert result.outcome is CancelOutcome.DEFERRED
            fetched = await client.afetch_order(oid)
            assert result.status == fetched["status"].upper() == "TRIGGERED"
            assert ">deferred (TRIGGERED)<" in view.outcome_text(oid)
            assert "do not resend" in view.outcome_text(oid)  # the tooltip says why

            # already final: the order expired meanwhile
            oid = await _new_open_order(client, view)
            fresh_sim.control.advance(oid, "EXPIRED")
            view.slot_for(oid).button.click()  # type: ignore[union-attr]
            view.slot_for(oid).button.click()  # type: ignore[union-attr]
            await until(lambda: oid in view.cancel_results)
            result = view.cancel_results[oid]
            assert result.outcome is CancelOutcome.ALREADY_FINAL
            assert (await client.afetch_order(oid))["status"].upper() == result.status == "EXPIRED"
            assert ">was final (EXPIRED)<" in view.outcome_text(oid)
            await until(lambda: view.book.orders[oid].status == "EXPIRED")
        finally:
            await view.astop()
            await client.aclose()

    asyncio.run(main())


def test_ticker_view_live_shows_a_moved_price(fresh_sim: Any) -> None:
    async def main() -> None:
        client = fresh_sim.client()
        view = TickerView(client, symbols=["BTC/BRL"], max_hz=20)
        try:
            await until(lambda: view.state == "connected")
            fresh_sim.control.move_price("BTC/BRL", 123456.78)
            await until(
                lambda: (
                    abs(view.rows["BTC/BRL"].last - 123456.78) / 123456.78 < 0.01
                    and "123," in view._row_widgets["BTC/BRL"].value
                )
            )
        finally:
            await view.astop()
            await client.aclose()

    asyncio.run(main())


def test_an_unknown_symbol_is_an_error_row_while_the_others_stay_live(fresh_sim: Any) -> None:
    async def main() -> None:
        client = fresh_sim.client()
        view = TickerView(client, symbols=["BTC/BRL", "XYZ/BRL", "ETH/BRL"], max_hz=20)
        try:
            await until(lambda: view.rows["XYZ/BRL"].error != "" and view.state == "connected")
            # the engine is off: move the prices so both good pairs tick
            fresh_sim.control.move_price("BTC/BRL", 300000.0)
            fresh_sim.control.move_price("ETH/BRL", 15000.0)
            await until(lambda: view.rows["BTC/BRL"].ticks > 0 and view.rows["ETH/BRL"].ticks > 0)
            assert view.state == "connected"
            assert "XYZ/BRL" in view.rows["XYZ/BRL"].error
            assert "data-error='1'" in view._row_widgets["XYZ/BRL"].value
            assert view.to_frame()["error"].notna().tolist() == [False, True, False]
        finally:
            await view.astop()
            await client.aclose()

    asyncio.run(main())


def test_a_dropped_connection_shows_reconnecting_then_gap_reconciled(fresh_sim: Any) -> None:
    async def main() -> None:
        client = fresh_sim.client()
        view = OrderStatusView(client, max_rows=40, status="ACTIVE")
        states: list[str] = []
        view._status.observe(lambda _c: states.append(view.state), names="value")
        try:
            await until(lambda: view.state == "connected" and view.book.reconciles >= 1)
            oid = await _new_open_order(client, view)
            reconciles = view.book.reconciles
            assert fresh_sim.control.drop_connections() >= 1
            # missed while disconnected: only the reconciliation after the gap can see it
            fresh_sim.control.advance(oid, "TRIGGERED")
            await until(lambda: view.book.reconciles > reconciles, timeout=20)
            await until(lambda: view.state == "gap reconciled")
            assert "reconnecting" in states
            assert states.index("reconnecting") < states.index("gap reconciled")
            state = view.book.orders[oid]
            assert state.status == (await client.afetch_order(oid))["status"].upper()
            assert "TRIGGERED" in view.slot_for(oid).html.value  # type: ignore[union-attr]
        finally:
            await view.astop()
            await client.aclose()

    asyncio.run(main())


def test_the_first_reconcile_reads_as_loading_not_as_an_empty_account(fresh_sim: Any) -> None:
    """The view connects before the book has read a single order over REST: until that
    first pass is done its state is "loading" and its counts say the orders are being read
    (an audit saw "connected, 0 orders" for 15 s of an account with orders)."""

    async def main() -> None:
        client = fresh_sim.client()
        view = OrderStatusView(client, max_rows=5)
        seen: list[tuple[str, int]] = []
        view._status.observe(lambda _c: seen.append((view.state, view.book.reconciles)), "value")
        try:
            assert "reading the account's orders" in view._counts.value
            assert "0</b> orders" not in view._counts.value
            await until(lambda: view.state == "connected")
            assert ("loading", 0) in seen
            # "connected" only once the book has read the orders, never before
            assert all(n >= 1 for state, n in seen if state == "connected"), seen
            await until(lambda: "orders (ACTIVE" in view._counts.value)
            assert len(view.book.orders) > 0
        finally:
            await view.astop()
            await client.aclose()

    asyncio.run(main())
