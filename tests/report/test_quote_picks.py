"""The picks among an order's quotes on the report's engine (toolkit/report/_quote_picks.py),
on cases the simulator never produces: ties at one price, a rank missing, quotes of another
order or without a price, an order not executed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from toolkit.report._quote_picks import quote_picks


def orders(*rows: tuple[str, bool, float, str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["orderId", "executed", "sign", "venue"])


def quotes(*rows: tuple[str, float, str, float, str]) -> pd.DataFrame:
    q = pd.DataFrame(rows, columns=["orderId", "rank", "exchange", "price", "reason"])
    q["quoted_at"] = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(
        np.arange(len(q)), unit="s"
    )
    return q


def test_ties_go_to_the_rank_then_to_the_order_of_the_list() -> None:
    po = orders(("b", True, 1.0, "v1"), ("s", True, -1.0, "v2"))
    q = quotes(
        ("b", 2, "v3", 100.0, ""),
        ("b", 1, "v2", 100.0, ""),  # same price, better rank: the best
        ("b", 1, "v4", 100.0, ""),  # same price and rank, later in the list
        ("b", 3, "v1", 101.0, ""),
        ("s", np.nan, "v9", 105.0, ""),  # the best sell price, but no rank: still the best
        ("s", 1, "v8", 105.0, ""),  # the same price with a rank: a rank sorts first
        ("s", 2, "v2", 104.0, "stale"),
        ("x", 1, "v1", 1.0, ""),  # another order's: not counted
        ("b", 1, "v1", 0.0, ""),  # no price: not a quote
    )
    k = quote_picks(po, q)
    assert list(k.best_venue) == ["v2", "v8"]
    assert list(k.best_price) == [100.0, 105.0]
    assert list(k.seen) == [4.0, 3.0] and list(k.contingencies) == [0.0, 1.0]
    # the executing venue's own quote, its first by rank
    assert list(k.own_price) == [101.0, 104.0]
    assert list(k.own_reason) == ["", "stale"]
    # a reason keeps a quote out of the clean best, not out of the overall best
    assert list(k.all_reason) == ["", ""]
    assert k.own_key[0] == 101.0 and math.isnan(k.own_key[1])


def test_an_order_not_executed_or_without_quotes_has_no_picks() -> None:
    po = orders(("p", False, 1.0, "v1"), ("n", True, 1.0, "v1"))
    k = quote_picks(po, quotes(("p", 1, "v1", 100.0, "")))
    assert list(k.seen[:1]) == [1.0] and math.isnan(k.seen[1])
    assert math.isnan(k.best_price[0]) and math.isnan(k.own_price[0])
    assert list(k.best_venue) == [None, None] and list(k.own_reason) == ["", ""]
    assert np.isnat(k.own_at).all()
