"""Tests of toolkit.client._loaders against the simulator: the listing plus fetchOrder of every
order, filters, ids=, faults (503s), missing orders reported, progress, exports read back
by DuckDB and pandas."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from toolkit.client._loaders import MissingOrdersWarning, parse_time_bound
from toolkit.errors import InvalidRequest
from toolkit.protocol import to_epoch_ms
from toolkit.sim import Simulator


async def no_sleep(delay: float) -> None:
    return None


def limit_ids(sim: Simulator) -> set[str]:
    return set(sim.control.order_ids(type="limit"))


def test_loads_every_limit_order_once(sim: Simulator) -> None:
    with sim.client() as client:
        frames = client.load_orders(progress=False)
    ids = list(frames.orders["id"])
    assert len(ids) == len(set(ids))
    assert set(ids) == limit_ids(sim)
    assert frames.missing == []
    # every one of the nine statuses was asked for explicitly, not through a shortcut
    assert frames.attrs["status"].split(",") == [
        "OPEN", "TRIGGERED", "PROCESSING", "CANCELLING", "EXECUTED", "CLOSED", "EXPIRED",
        "CANCELLED", "REJECTED",
    ]  # fmt: skip
    # the full fetchOrder detail, not the nine list fields
    assert {"amount", "quoteAmount", "statusReason", "limitPrice"} <= set(frames.orders.columns)


def test_status_filter(sim: Simulator) -> None:
    listing = sim.profile.listing
    with sim.client() as client:
        frames = client.load_orders(status="FINALIZED", progress=False)
        listed = {o[listing.id_field] for o in client.list_limit_orders("FINALIZED")}
    assert set(frames.orders["id"]) == listed
    # FINALIZED as the profile defines it
    assert set(frames.orders["status"]) <= set(listing.finalized_statuses)


def test_since_until_and_symbols_filter_client_side(sim: Simulator) -> None:
    profile = sim.profile
    listing = profile.listing

    def created_ms(item: dict[str, object]) -> int:
        # the item's creation moment in Unix ms, in the profile's field and time unit
        ms = to_epoch_ms(item[listing.created_at_field], profile.orders.timestamp_unit)
        assert ms is not None
        return ms

    with sim.client() as client:
        items = client.list_limit_orders(limit=listing.page_max)
        created = sorted(created_ms(o) for o in items)
        middle = created[len(created) // 2]
        since = datetime.fromtimestamp(middle / 1000, tz=UTC)
        frames = client.load_orders(since=since, progress=False)
        until_frames = client.load_orders(until=since, progress=False)
        btc = client.load_orders(symbols="BTC/BRL", progress=False)
    expected_since = {o[listing.id_field] for o in items if created_ms(o) >= middle}
    assert set(frames.orders["id"]) == expected_since
    assert set(until_frames.orders["id"]) == {o[listing.id_field] for o in items} - expected_since
    assert set(btc.orders["symbol"]) == {"BTC/BRL"}
    assert len(btc.orders) == sum(o[listing.symbol_field] == "BTC/BRL" for o in items)


def test_ids_loads_market_orders_too(sim: Simulator) -> None:
    ids = sim.control.order_ids(type="market")[:40]
    with sim.client() as client:
        frames = client.load_orders(ids=ids, progress=False)
    assert list(frames.orders["id"]) == ids  # in the order asked
    assert len(frames.trades) > 0 and len(frames.fills) == len(frames.trades)


def test_an_order_that_404s_is_reported_not_lost(sim: Simulator) -> None:
    ids = [*list(limit_ids(sim))[:3], "l-999999-gone"]
    with sim.client() as client, pytest.warns(MissingOrdersWarning, match="l-999999-gone"):
        frames = client.load_orders(ids=ids, progress=False)
    assert frames.missing == ["l-999999-gone"]
    assert len(frames.orders) == 3


def test_503s_lose_nothing_and_duplicate_nothing(fresh_sim: Simulator) -> None:
    expected = limit_ids(fresh_sim)
    # the smallest page the profile allows: many pages, many chances of a 503; a profile
    # with a larger minimum has fewer pages, so each one fails more often
    page_size = max(2, fresh_sim.profile.listing.page_min)
    fresh_sim.control.set_knobs(listing_503_rate=0.2 if page_size == 2 else 0.4)
    with fresh_sim.client(sleep=no_sleep, max_retries=50, page_size=page_size) as client:
        frames = client.load_orders(progress=False)
        assert client.rest.retries > 0
    ids = list(frames.orders["id"])
    assert len(ids) == len(set(ids)) and set(ids) == expected


def test_exact_decimals(sim: Simulator) -> None:
    ids = sim.control.order_ids(type="market")[:5]
    with sim.client() as client:
        frames = client.load_orders(ids=ids, exact=True, progress=False)
    assert "decimal" in str(frames.orders["amount"].dtype)


def test_progress_bar(sim: Simulator, capsys: pytest.CaptureFixture[str]) -> None:
    ids = sorted(limit_ids(sim))[:5]
    with sim.client() as client:
        client.load_orders(ids=ids, progress=True)
        assert "order" in capsys.readouterr().err
        client.load_orders(ids=ids, progress=False)
        assert capsys.readouterr().err == ""


def test_exports_read_back_with_the_same_values(sim: Simulator, tmp_path: Path) -> None:
    ids = sim.control.order_ids()[:60]
    with sim.client() as client, warnings.catch_warnings():
        warnings.simplefilter("error", MissingOrdersWarning)
        frames = client.load_orders(ids=ids, progress=False)
    frames.to_parquet(tmp_path / "pq")
    frames.to_csv(tmp_path / "csv")
    expected = frames.fills.sort_values(["orderId", "id"]).reset_index(drop=True)
    query = "SELECT orderId, id, price, amount, symbol FROM read_parquet('{}') ORDER BY 1, 2"
    got = duckdb.sql(query.format(tmp_path / "pq" / "fills.parquet")).df()  # type: ignore[union-attr]
    assert list(got["id"]) == list(expected["id"])
    assert got["price"].tolist() == pytest.approx(expected["price"].tolist())
    assert got["amount"].tolist() == pytest.approx(expected["amount"].tolist())
    # ids are text (a numeric id too: spec 2.5 shows no types), as the frames hold them
    text_ids = {"orderId": str, "id": str}
    csv = pd.read_csv(tmp_path / "csv" / "fills.csv", dtype=text_ids).sort_values(["orderId", "id"])
    assert list(csv["id"]) == list(expected["id"])
    assert csv["price"].tolist() == pytest.approx(expected["price"].tolist())
    orders = duckdb.sql(
        f"SELECT id, status FROM read_parquet('{tmp_path / 'pq' / 'orders.parquet'}')"
    ).df()  # type: ignore[union-attr]
    assert dict(zip(orders["id"], orders["status"], strict=True)) == dict(
        zip(frames.orders["id"], frames.orders["status"], strict=True)
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-01", 1793491200000),
        ("2026-11-01T00:00:00Z", 1793491200000),
        ("2026-11-01T03:00:00+03:00", 1793491200000),
        (datetime(2026, 11, 1), 1793491200000),
        (1793491200, 1793491200000),
        (1793491200000, 1793491200000),
        (None, None),
    ],
)
def test_parse_time_bound(value: object, expected: int | None) -> None:
    assert parse_time_bound(value, "since") == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["yesterday", True, [2026]])
def test_parse_time_bound_refuses(value: object) -> None:
    with pytest.raises(InvalidRequest):
        parse_time_bound(value, "since")  # type: ignore[arg-type]
