"""Fields that used to fail a whole load: a lone surrogate escape (``\\ud800``, legal JSON,
no text) in any text field is null with a warning naming the field and an order, as the
recorder does; a wire field named like a column the frames derive (a ccxt trade's
``symbol`` or ``orderId``, a quote's ``rank``, an order's ``statusRaw``) is renamed
``trade.symbol`` and so on, so every frame names each column once and exports."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from toolkit.frames._frames import OrderFrames, build_frames

T0_MS = 1_793_491_200_000  # 2026-11-01T00:00:00Z


def body(i: int, **changes: Any) -> dict[str, Any]:
    order: dict[str, Any] = {
        "id": f"o-{i}",
        "exchange": "toolkit-sim",
        "symbol": "BTC/BRL",
        "side": "buy",
        "type": "market",
        "status": "closed",
        "errorMessage": "",
        "amount": "1",
        "operationalFees": "0.1",
        "createdAt": T0_MS + i,
        "updatedAt": T0_MS + i,
        "fee": {"cost": "0.5", "rate": "0.001", "cripto": "0.000005"},
        "trades": [{"id": f"t-{i}", "price": "100", "amount": "1", "timestamp": T0_MS + i}],
        "evaluatedTickers": [{"exchange": "venueA", "price": "100", "quotedAt": T0_MS}],
    }
    order.update(changes)
    return order


def said(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def test_a_lone_surrogate_nulls_that_value_and_the_load_goes_on(tmp_path: Path) -> None:
    odd = json.dumps(body(1, errorMessage="saldo insuficiente \ud800"))  # "\\ud800" in JSON
    assert "\\ud800" in odd
    trade = body(2)
    trade["trades"][0]["id"] = "t-\udfff"
    bodies: list[Any] = [json.dumps(body(0)).encode(), odd.encode(), trade, body(3)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frames = build_frames(bodies)
    assert frames.orders["id"].tolist() == ["o-0", "o-1", "o-2", "o-3"]
    assert frames.orders["errorMessage"].isna().tolist() == [False, True, False, False]
    assert frames.trades["id"].isna().tolist() == [False, False, True, False]
    messages = said(caught)
    assert any("errorMessage" in m and "'o-1'" in m and "set to null" in m for m in messages)
    assert any("trades[].id" in m and "'o-2'" in m for m in messages)
    frames.to_parquet(tmp_path)  # every text is UTF-8 again
    back = OrderFrames.read_parquet(tmp_path)
    assert back.orders["errorMessage"].isna().tolist() == [False, True, False, False]


def test_a_lone_surrogate_character_in_a_text_body_is_the_same() -> None:
    text = json.dumps(body(1, errorMessage="x"), ensure_ascii=False).replace('"x"', '"x\ud800"')
    with pytest.warns(RuntimeWarning, match="errorMessage"):
        frames = build_frames([body(0), text])
    assert frames.orders["errorMessage"].isna().tolist() == [False, True]


def test_a_lone_surrogate_in_a_field_name_keeps_the_value_under_its_escape() -> None:
    frames = build_frames([body(0, **{"note\ud800": "kept"}), body(1)])
    assert frames.orders["note\\ud800"].tolist()[0] == "kept"


def test_wire_fields_named_like_derived_columns_are_renamed(tmp_path: Path) -> None:
    order = body(0, statusRaw="as sent by a proxy", **{"fee.cost": "9"})
    order["trades"][0].update(symbol="BTC/BRL", orderId="venue-123", venue="v")
    order["evaluatedTickers"][0]["rank"] = 1
    order["fee"]["symbol"] = "BRL"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frames = build_frames([order, body(1)])
    for name, df in frames:
        assert df.columns.is_unique, (name, list(df.columns))
    trades, fills = frames.trades, frames.fills
    assert isinstance(trades["orderId"], pd.Series)
    assert trades["orderId"].tolist() == ["o-0", "o-1"]  # the join key, not the venue's id
    assert trades["trade.orderId"].tolist()[0] == "venue-123"
    assert trades["trade.symbol"].tolist()[0] == "BTC/BRL"
    assert fills["trade.symbol"].tolist()[0] == "BTC/BRL" and "symbol" in fills
    assert fills["venue"].tolist() == ["toolkit-sim", "toolkit-sim"]
    assert fills["trade.venue"].tolist()[0] == "v"
    assert frames.evaluated_tickers["rank"].tolist() == [0, 0]
    assert frames.evaluated_tickers["quote.rank"].tolist()[0] == 1
    assert frames.orders["statusRaw"].tolist() == ["closed", "closed"]
    assert frames.orders["order.statusRaw"].tolist()[0] == "as sent by a proxy"
    assert frames.orders["fee.cost"].tolist() == [0.5, 0.5]  # the known field keeps its name
    assert frames.orders["fee.cost#2"].tolist()[0] == "9"
    assert frames.fees["symbol"].tolist() == ["BTC/BRL", "BTC/BRL"]
    assert frames.fees["fee.symbol"].tolist()[0] == "BRL"
    renamed = [m for m in said(caught) if "renamed" in m]
    assert len(renamed) == 1 and "'symbol' -> 'trade.symbol'" in renamed[0]
    frames.to_parquet(tmp_path / "pq")
    frames.to_csv(tmp_path / "csv")
    assert OrderFrames.read_parquet(tmp_path / "pq").trades.columns.is_unique
