"""What an analyst sees in the live views, without a network: widths that flow with the
container, colours only from the theme's CSS variables, one status case, the legend of
reconciled entries, cancel outcomes that follow the order, dates for other days, an error
row for a refused symbol, stop() that freezes and close() that removes, and to_frame()."""

from __future__ import annotations

import asyncio
import html
import re
from datetime import UTC, datetime
from typing import Any

import ipywidgets as widgets
import pandas as pd
import pytest

from toolkit.client._cancel import CancelOutcome, CancelResult
from toolkit.errors import InvalidRequest, ServiceError
from toolkit.widgets import OrderStatusView, TickerView
from toolkit.widgets._theme import STYLE, when

T0 = 1_790_000_000_000  # 2026-09-21 14:13:20 UTC


def now_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


class FakeCancelClient:
    """Answers every cancel with the given outcome and status, as CancelResult does."""

    def __init__(self, outcome: CancelOutcome, status: str) -> None:
        self.outcome, self.status = outcome, status

    async def acancel_limit_order(self, order_id: str) -> CancelResult:
        return CancelResult(order_id, self.outcome, self.status, 202)


def every_widget(root: widgets.Widget) -> list[widgets.Widget]:
    out = [root]
    for child in getattr(root, "children", ()):
        out += every_widget(child)
    return out


def html_of(view: Any) -> str:
    return "\n".join(w.value for w in every_widget(view.widget) if isinstance(w, widgets.HTML))


def visible_text(markup: str) -> str:
    """What a reader sees: no style sheet, tags or attributes (tooltips)."""
    markup = re.sub(r"<style>.*?</style>", "", markup, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


def busy_order_view(ev: Any, **kw: Any) -> OrderStatusView:
    view = OrderStatusView([], autostart=False, **kw)
    for i, status in enumerate(["OPEN", "TRIGGERED", "PROCESSING", "closed"]):
        view.apply(ev.order("l-1", status, T0 + i))
    view.apply(ev.order("m-1", "closed", T0 + 5, type_="market"))
    view.apply(ev.order("l-2", "OPEN", now_ms()))
    view.repaint(force=True)
    return view


def busy_ticker_view(ev: Any) -> TickerView:
    view = TickerView([], autostart=False)
    view.apply(ev.tickers(ev.ticker("BTC/BRL", 200.0), ev.ticker("ETH/BRL", 50.0)))
    view.apply(ev.tickers(ev.ticker("BTC/BRL", 210.0), ev.ticker("ETH/BRL", 45.0)))
    view.repaint(force=True)
    return view


# -- layout and colours -------------------------------------------------------------------


@pytest.mark.parametrize("make", [busy_order_view, busy_ticker_view])
def test_no_fixed_pixel_width_anywhere(ev: Any, make: Any) -> None:
    view = make(ev)
    for w in every_widget(view.widget):
        layout = getattr(w, "layout", None)
        for attr in ("width", "min_width", "max_width", "flex"):
            value = str(getattr(layout, attr, None) or "")
            assert "px" not in value, (type(w).__name__, attr, value)
    markup = html_of(view)
    templates = re.findall(r"grid-template-columns:([^;']+)", markup)
    assert templates and all("px" not in t and "fr" in t for t in templates)
    assert view.widget.layout.width == "100%"


@pytest.mark.parametrize("make", [busy_order_view, busy_ticker_view])
def test_every_colour_is_a_jupyterlab_variable(ev: Any, make: Any) -> None:
    markup = html_of(make(ev)) + STYLE
    # a literal colour may only be the fallback of a --jp- variable: var(--jp-x, #abc)
    literal = re.compile(
        r"(?<!&)#[0-9a-fA-F]{3,8}\b|rgba?\([^)]*\)|(?<![\w-])(?:white|black)(?![\w-])"
    )
    for match in literal.finditer(markup):
        before = markup[: match.start()]
        assert re.search(r"var\(--jp-[\w-]+, $", before), markup[match.start() - 60 : match.end()]
    assert "style='color" not in markup and "background:#" not in markup
    assert "var(--jp-success-color1" in STYLE and "var(--jp-error-color1" in STYLE


def test_timeline_on_one_line_with_the_full_history_on_hover(ev: Any) -> None:
    view = busy_order_view(ev)
    assert ".tk-grid > span {min-width: 0; overflow: hidden; white-space: nowrap;" in STYLE
    slot = view.slot_for("l-1")
    assert slot is not None
    cell = re.search(
        r"<span class='tk-tl' title='([^']*)'>(.*?)</span><span class='tk-num'>", slot.html.value
    )
    assert cell is not None
    tooltip, shown = cell.groups()
    assert tooltip.split("\n") == [
        "OPEN 2026-09-21 14:13:20.000",
        "TRIGGERED 2026-09-21 14:13:20.001",
        "PROCESSING 2026-09-21 14:13:20.002",
        "CLOSED 2026-09-21 14:13:20.003",
    ]
    assert visible_text(shown).split() == ["+2", "→", "PROCESSING", "→", "CLOSED"]


def test_cancel_button_sizes_to_its_text(ev: Any) -> None:
    view = busy_order_view(ev, client=FakeCancelClient(CancelOutcome.ACCEPTED, "CANCELLING"))
    slot = view.slot_for("l-2")
    assert slot is not None and slot.button.layout.visibility == "visible"
    assert slot.button.description == "Cancel"
    assert slot.button.layout.width == "auto"
    assert slot.button.layout.min_width == "fit-content"
    assert slot.button.layout.flex == "0 0 auto"  # never shrunk by its neighbours


def test_header_is_a_row_like_the_others_so_columns_line_up(ev: Any) -> None:
    view = busy_order_view(ev)
    header, first = view.widget.children[3], view.widget.children[4]
    assert [type(w) for w in header.children] == [type(w) for w in first.children]
    assert [w.layout.flex for w in header.children] == [w.layout.flex for w in first.children]
    grid_of = re.compile(r"grid-template-columns:[^;']+")
    assert grid_of.findall(header.children[1].value) == grid_of.findall(first.children[1].value)


def test_ticker_header_cells_share_their_columns_alignment(ev: Any) -> None:
    view = busy_ticker_view(ev)
    classes = re.findall(r"<span class='([\w-]+)'>[a-z (UTC)]+</span>", view._header.value)
    assert classes == ["tk-sym", "tk-num", "tk-num", "tk-num", "tk-num", "tk-spark", "tk-num"]
    row = view._row_widgets["BTC/BRL"].value
    assert "<span class='tk-spark'>" in row


# -- one status case, legend, dates -------------------------------------------------------


def test_one_status_case_everywhere(ev: Any) -> None:
    view = busy_order_view(ev)
    text = visible_text(html_of(view))
    assert "CLOSED" in text and "closed" not in text
    assert "orders (ACTIVE 1, FINALIZED 2)" in text
    assert view.to_frame().set_index("orderId").loc["m-1", "statusRaw"] == "closed"


def test_legend_explains_reconciled_entries(ev: Any) -> None:
    view = OrderStatusView([], autostart=False)
    view.apply(ev.order("l-1", "OPEN", T0))
    view.apply(ev.order("l-1", "CANCELLED", T0 + 1, reconciled=True))
    view.repaint(force=True)
    slot = view.slot_for("l-1")
    assert slot is not None
    assert "<span class='tk-rec'>CANCELLED</span>" in slot.html.value
    assert "CANCELLED (REST after a gap)" in slot.html.value  # the tooltip says it too
    legend = view.widget.children[-1].value
    assert "<span class='tk-rec'>italic</span>" in legend and "after a connection gap" in legend
    assert ".tk-legend .tk-rec {font-style: italic" in STYLE or ".tk-legend .tk-rec" in STYLE


def test_one_date_format_everywhere(ev: Any) -> None:
    """Every time the views show, today's or another day's or year's, in the table or a
    tooltip, is ``YYYY-MM-DD HH:MM:SS.mmm`` (UTC): no "09-21 14:13" beside "14:13:20.000"."""
    orders = busy_order_view(ev)
    prices = busy_ticker_view(ev)
    markup = html_of(orders) + html_of(prices)
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}"
    # every time-like text is a whole stamp
    for match in re.finditer(r"(?:\d{4}-\d\d-\d\d )?\d\d:\d\d[:\d.]*", markup):
        assert re.fullmatch(stamp, match.group()), match.group()
    old = orders.slot_for("l-1")
    assert old is not None
    assert "<span class='tk-num'>2026-09-21 14:13:20.003</span></div>" in old.html.value
    assert when(T0) == "2026-09-21 14:13:20.000"
    assert when(0) == "–"


@pytest.mark.parametrize("days", [1, 400], ids=["another day", "another year"])
def test_an_order_of_another_day_does_not_widen_the_rows(ev: Any, days: int) -> None:
    """An order updated before midnight (UTC) must not make the rows wider than today's."""
    view = OrderStatusView([], autostart=False)
    now = now_ms()
    for i in range(3):
        view.apply(ev.order(f"l-00000{i}-abcd", "OPEN", now - i))
    view.repaint(force=True)
    slot = view.slot_for("l-000000-abcd")
    assert slot is not None
    width = slot.html.layout.min_width
    view.apply(ev.order("l-000009-abcd", "OPEN", now - days * 86_400_000))
    view.repaint(force=True)
    old = view.slot_for("l-000009-abcd")
    assert old is not None
    assert old.html.layout.min_width == slot.html.layout.min_width == width


# -- cancel outcomes that follow the order ------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "status", "then", "first", "last"),
    [
        (
            CancelOutcome.ACCEPTED,
            "CANCELLING",
            ["CANCELLING", "CANCELLED"],
            "accepted (CANCELLING)",
            "cancelled",
        ),
        (
            CancelOutcome.DEFERRED,
            "TRIGGERED",
            ["TRIGGERED", "PROCESSING", "EXECUTED"],
            "deferred (TRIGGERED)",
            "too late: EXECUTED",
        ),
        (
            CancelOutcome.DEFERRED,
            "TRIGGERED",
            ["TRIGGERED", "OPEN", "CANCELLED"],
            "deferred (TRIGGERED)",
            "cancelled",
        ),
    ],
)
def test_outcome_text_follows_the_order(
    ev: Any, outcome: CancelOutcome, status: str, then: list[str], first: str, last: str
) -> None:
    async def main() -> None:
        view = OrderStatusView([], client=FakeCancelClient(outcome, status), autostart=False)
        view.apply(ev.order("l-1", "OPEN", T0))
        view.repaint(force=True)
        await view.cancel("l-1")
        assert visible_text(view.outcome_text("l-1")).strip() == first
        for i, step in enumerate(then, 1):
            view.apply(ev.order("l-1", step, T0 + i))
        view.repaint(force=True)
        slot = view.slot_for("l-1")
        assert slot is not None
        assert visible_text(slot.outcome.value).strip() == last
        assert view.to_frame()["cancelOutcome"].tolist() == [last]

    asyncio.run(main())


def test_a_failed_cancel_shows_one_error(ev: Any) -> None:
    class Failing:
        async def acancel_limit_order(self, order_id: str) -> Any:
            raise ServiceError("route not active in this environment")

    async def main() -> None:
        view = OrderStatusView([], client=Failing(), autostart=False)
        view.apply(ev.order("l-1", "OPEN", T0))
        assert await view.cancel("l-1") is None
        # one line (the error's kind), the whole of it on a click
        outcome = view.outcome_text("l-1")
        assert "<summary>failed: ServiceError</summary>" in outcome
        assert "ServiceError: route not active in this environment; click Cancel" in outcome
        assert "tk-bad" in outcome and "<details" in outcome

    asyncio.run(main())


class _Failing:
    async def acancel_limit_order(self, order_id: str) -> Any:
        raise ServiceError(f"route not active for {order_id}")


def _row_order(slot: Any) -> str | None:
    found = re.search(r"data-order='([^']*)'", slot.html.value)
    return found.group(1) if found else None


def test_a_failed_cancels_error_stays_on_its_row_until_the_order_changes(ev: Any) -> None:
    async def main() -> None:
        view = OrderStatusView([], client=_Failing(), autostart=False)
        view.apply(ev.order("l-1", "OPEN", T0))
        view.repaint(force=True)
        assert await view.cancel("l-1") is None
        slot = view.slot_for("l-1")
        assert slot is not None
        error = "failed: ServiceError cancel failed: ServiceError: route not active for l-1"
        error += "; click Cancel to try again"
        # the error, and the button beside it to try again
        assert " ".join(visible_text(slot.outcome.value).split()) == error
        assert "Cancel to try again" in slot.outcome.value
        assert slot.button.layout.visibility == "visible"
        # repaints for other orders leave it where it is
        view.apply(ev.order("l-2", "OPEN", T0 - 5))
        view.repaint(force=True)
        assert " ".join(visible_text(slot.outcome.value).split()) == error
        assert slot.button.layout.visibility == "visible"
        # the user acts: a new (confirmed) click replaces it while that request is under way
        slot.button.click()
        slot.button.click()
        assert visible_text(slot.outcome.value).strip() == "cancelling…"
        assert slot.button.layout.visibility == "hidden"  # no second click meanwhile
        await asyncio.gather(*view._cancel_tasks)
        assert " ".join(visible_text(slot.outcome.value).split()) == error
        # the order moves on: the error was about an order that is no longer as it was
        view.apply(ev.order("l-1", "TRIGGERED", T0 + 1))
        view.repaint(force=True)
        assert view.slot_for("l-1") is slot and slot.outcome.value == ""
        assert view.to_frame().set_index("orderId")["cancelOutcome"].isna().all()

    asyncio.run(main())


@pytest.mark.parametrize(("status", "button"), [("OPEN", "visible"), ("EXECUTED", "hidden")])
def test_a_reassigned_row_never_shows_the_previous_orders_outcome_or_button(
    ev: Any, clock: Any, status: str, button: str
) -> None:
    """A row's parts are widgets of their own, each synced by its own message: a front end
    that draws between two must never see an outcome or a Cancel button beside an order
    it does not belong to (an audit saw one order's error on another's row)."""

    async def main() -> None:
        view = OrderStatusView([], client=_Failing(), max_rows=1, autostart=False, clock=clock)
        view.apply(ev.order("l-1", "OPEN", T0))
        view.repaint(force=True)
        await view.cancel("l-1")
        clock.advance(60)  # past the hold of l-1's outcome: the rows move again
        slot = view.slot_for("l-1")
        assert slot is not None and slot.button.layout.visibility == "visible"
        frames: list[tuple[str | None, str, str, str | None]] = []

        def frame(_change: Any) -> None:
            shown = slot.action.children[0]  # the outcome alone while the button changes
            visibility = "" if shown is slot.outcome else shown.layout.visibility
            owner = view._buttons.owner(shown)
            frames.append((_row_order(slot), slot.outcome.value, visibility, owner))

        slot.html.observe(frame, "value")
        slot.outcome.observe(frame, "value")
        slot.action.observe(frame, "children")
        slot.button.layout.observe(frame, "visibility")
        view.apply(ev.order("l-2", status, T0 + 10))  # newer: takes the only row
        view.repaint(force=True)
        assert view.visible_order_ids == ["l-2"]
        assert frames[-1][:3] == ("l-2", "", button)
        for row, outcome, shown, owner in frames:
            owner_of_outcome = re.search(r"data-order='([^']*)'", outcome)
            assert outcome == "" or (
                owner_of_outcome is not None and owner_of_outcome.group(1) == row
            ), frames
            # a visible button is the shown order's own, and that order is OPEN
            assert shown != "visible" or owner == row, frames
            assert shown != "visible" or view.book.orders[str(row)].status == "OPEN", frames

    asyncio.run(main())


# -- a refused symbol ---------------------------------------------------------------------


class FakeSession:
    """A stream session that refuses one symbol and then sends ticks of the others."""

    def __init__(self, ev: Any, refused: str) -> None:
        self.ev, self.refused, self.subscribed = ev, refused, []  # type: list[str]
        self.done = asyncio.Event()

    async def __aenter__(self) -> FakeSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def subscribe(self, channel: str, **data: Any) -> str:
        if data["symbol"] == self.refused:
            raise InvalidRequest(f"subscription refused: unknown symbol {data['symbol']}")
        self.subscribed.append(data["symbol"])
        return channel

    def __aiter__(self) -> Any:
        return self._events()

    async def _events(self) -> Any:
        for i in range(5):
            for symbol in self.subscribed:
                yield self.ev.ticker(symbol, 100.0 + i)
        self.done.set()
        await asyncio.Event().wait()  # a live stream does not end by itself


class FakeClient:
    def __init__(self, session: FakeSession) -> None:
        self.session = session

    def stream(self, **_kw: Any) -> FakeSession:
        return self.session

    async def afetch_order(self, order_id: str) -> Any:  # pragma: no cover - not used
        raise AssertionError


def test_a_refused_symbol_is_an_error_row_and_the_others_keep_working(ev: Any) -> None:
    session = FakeSession(ev, refused="XYZ/BRL")

    async def main() -> TickerView:
        view = TickerView(FakeClient(session), symbols=["BTC/BRL", "xyz/brl", "ETH/BRL"])
        await asyncio.wait_for(session.done.wait(), 10)
        await view.astop()
        return view

    view = asyncio.run(main())
    assert session.subscribed == ["BTC/BRL", "ETH/BRL"]
    assert view.state == "stopped"  # not "error": the view kept running
    assert view.rows["BTC/BRL"].last == 104.0 and view.rows["ETH/BRL"].last == 104.0
    bad = view._row_widgets["XYZ/BRL"].value
    assert "data-error='1'" in bad and "unknown symbol XYZ/BRL" in bad
    assert "104.0000" in view._row_widgets["BTC/BRL"].value
    frame = view.to_frame().set_index("symbol")
    assert frame.loc["XYZ/BRL", "error"].startswith("InvalidRequest: subscription refused")
    assert pd.isna(frame.loc["BTC/BRL", "error"]) and frame.loc["BTC/BRL", "ticks"] == 5


# -- stop, close, to_frame ----------------------------------------------------------------


def test_stop_freezes_and_close_removes(ev: Any) -> None:
    view = busy_order_view(ev, client=FakeCancelClient(CancelOutcome.ACCEPTED, "CANCELLING"))
    before = ev.widget_count()
    view.stop()
    assert view.state == "stopped" and "<b>stopped</b>" in view._status.value
    assert ev.widget_count() == before  # nothing closed: the cell keeps the last table
    assert view.visible_order_ids == ["l-2", "m-1", "l-1"]
    slot = view.slot_for("l-2")
    assert slot is not None and slot.button.disabled and view.filter.disabled
    # what arrives after stop() is not shown
    view.apply(ev.order("l-3", "OPEN", now_ms() + 1))
    view.repaint(force=True)
    assert "l-3" not in view.visible_order_ids
    view.stop()  # twice is harmless
    view.close()
    assert ev.widget_count() < before
    assert all(w.comm is None for w in every_widget(view.widget))
    view.close()


def test_order_view_to_frame_is_the_table(ev: Any) -> None:
    view = busy_order_view(ev, status="ALL")
    frame = view.to_frame()
    assert frame["orderId"].tolist() == view.visible_order_ids
    assert list(frame.columns) == [
        "orderId",
        "type",
        "symbol",
        "side",
        "limitPrice",
        "amount",
        "filled",
        "average",
        "status",
        "statusRaw",
        "timeline",
        "updatedAt",
        "cancelOutcome",
    ]
    assert str(frame["updatedAt"].dtype) == "datetime64[ms, UTC]"
    assert frame["limitPrice"].dtype == "float64"
    row = frame.set_index("orderId").loc["l-1"]
    assert row["timeline"] == "OPEN → TRIGGERED → PROCESSING → CLOSED"
    assert row["updatedAt"] == pd.Timestamp(T0 + 3, unit="ms", tz="UTC")
    assert row["limitPrice"] == 100.0
    view.filter.value = "ACTIVE"
    assert view.to_frame()["orderId"].tolist() == ["l-2"]
    empty = OrderStatusView([], autostart=False).to_frame()
    assert empty.empty and list(empty.columns) == list(frame.columns)


def test_ticker_view_to_frame_is_the_table(ev: Any) -> None:
    frame = busy_ticker_view(ev).to_frame()
    assert frame["symbol"].tolist() == ["BTC/BRL", "ETH/BRL"]
    assert frame["last"].tolist() == [210.0, 45.0]
    assert frame["change"].tolist() == pytest.approx([0.05, -0.10])
    assert str(frame["updated"].dtype) == "datetime64[ms, UTC]"
    assert frame["ticks"].tolist() == [2, 2]
    assert TickerView([], autostart=False).to_frame().empty


def test_a_long_id_widens_the_first_column_instead_of_being_cut(ev: Any) -> None:
    view = OrderStatusView([], autostart=False)
    long_id = "0f8fad5b-d9cb-469f-a165-70867728950e"  # a UUID, 36 characters
    view.apply(ev.order(long_id, "OPEN", T0))
    view.apply(ev.order("l-1", "OPEN", T0 + 1))
    view.repaint(force=True)
    for oid in (long_id, "l-1"):
        slot = view.slot_for(oid)
        assert slot is not None and "minmax(22.7em, 1.2fr)" in slot.html.value
    header, first = view.widget.children[3].children[1], view.slot_for("l-1")
    assert first is not None and "minmax(22.7em, 1.2fr)" in header.value
    # rows never get narrower than the grid: a narrow container scrolls instead
    assert header.layout.min_width == first.html.layout.min_width
    assert first.html.layout.min_width.startswith("calc(") and view.widget.layout.overflow == "auto"


def test_text_repr_is_the_views_summary(ev: Any) -> None:
    view = busy_ticker_view(ev)
    bundle = view._repr_mimebundle_()
    assert bundle["text/plain"] == "TickerView(pairs=2, state='idle', repaints=1)"
    assert "application/vnd.jupyter.widget-view+json" in bundle
