"""The data checks: orders whose side or status the report cannot read, orders whose average
or quote amount disagree with their trades, negative times to execution, and slippage
outliers (absolute, or in robust sigmas of the median)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from toolkit.protocol import LimitStatus, MarketStatus
from toolkit.report._columns import _conform, _num, _text, empty
from toolkit.report._coverage import COVERAGE_CHECK
from toolkit.report._definitions import (
    CHECK_TOLERANCE_BP,
    FEE_CHECK_RELATIVE,
    OUTLIER_ABS_BP,
    OUTLIER_SIGMAS,
)

CHECK_COLUMNS = {
    "orderId": "str",
    "check": "str",
    "value": "float64",
    "expected": "float64",
    "diff_bp": "float64",
    "detail": "str",
}


class FieldProblem(NamedTuple):
    """Orders whose ``side`` or ``status`` the report cannot read: the data_checks rows
    (``rows`` of the per-order table, each with its ``detail``) and the warning."""

    check: str
    rows: pd.Series
    detail: pd.Series
    message: str


def _values(v: pd.Series) -> str:
    """The distinct values of ``v`` for a message (a few, each cut short)."""
    seen = [str(x) for x in pd.unique(v)]
    shown = ", ".join("missing" if not x else repr(x[:40]) for x in seen[:5])
    return shown + (f" and {len(seen) - 5} more" if len(seen) > 5 else "")


SIDE_CHECK = "side missing/unknown"
STATUS_CHECK = "status missing/unknown"


def field_warning(check: str, count: int, values: Any) -> str:
    """The warning of ``count`` orders failing ``check`` (:data:`SIDE_CHECK` or
    :data:`STATUS_CHECK`) with these ``values`` (their distinct ones, in order, suffice)."""
    values = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    if check == SIDE_CHECK:
        return (
            f"{count} order(s) have side missing or not buy/sell ({_values(values)}): "
            "their slippage, routing gap and fees in bp are NaN, so every slippage "
            "figure of the report leaves them out"
        )
    return (
        f"{count} order(s) have status missing or not a status of their order "
        f"type ({_values(values)}; market: spec 3.1, limit: spec 3.2): they count as "
        "not executed, so every slippage figure of the report leaves them out"
    )


def order_field_problems(po: pd.DataFrame) -> list[FieldProblem]:
    """Orders with a ``side`` other than buy/sell (spec 2.4), or a ``status`` that is none
    of their type's (market: spec 3.1, limit: 3.2): no slippage figure counts them, so the
    report says so instead of resting on fewer orders without a word."""
    out: list[FieldProblem] = []
    bad_side = po["sign"].isna()
    if bad_side.any():
        side = po.loc[bad_side, "side"]
        out.append(
            FieldProblem(
                SIDE_CHECK,
                bad_side,
                ("side " + side.map(repr) + " is not buy or sell").where(
                    side != "", "side missing"
                ),
                field_warning(SIDE_CHECK, len(side), side),
            )
        )
    bad_status = po["outcome"] == "other"
    if bad_status.any():
        status = po.loc[bad_status, "status"]
        limit = "a limit status (spec 3.2: " + ", ".join(LimitStatus) + ")"
        market = "a market status (spec 3.1: " + ", ".join(m.lower() for m in MarketStatus) + ")"
        known = pd.Series(market, index=status.index).where(
            po.loc[bad_status, "type"] != "limit", limit
        )
        out.append(
            FieldProblem(
                STATUS_CHECK,
                bad_status,
                ("status " + status.map(repr) + " is not " + known).where(
                    status != "", "status missing"
                ),
                field_warning(STATUS_CHECK, len(status), status),
            )
        )
    return out


#: the checks of each order's own rows (:func:`frame_checks`), by name, in data_checks' order
FEE_CHECKS = (
    "fee.cost vs fee.cripto x average",
    "fee.cost 0 beside fee.cripto",
    "order fee.cost vs sum of trade fees",
    "order fee.cripto vs sum of trade fees",
)
AVERAGE_CHECK = "average missing"
TRADE_CHECKS = ("average vs trades VWAP", "quoteAmount vs sum of trade costs")
NEGATIVE_CHECK = "negative time to execution"


def data_checks(
    po: pd.DataFrame,
    orders: pd.DataFrame,
    trades: pd.DataFrame | None,
    *,
    quote_problems: Sequence[tuple[str, str]] = (),
    duplicates: pd.Series | None = None,
    coverage: Sequence[str] = (),
) -> pd.DataFrame:
    """Orders whose numbers disagree with their trades, or whose slippage is an outlier;
    each of ``coverage`` (what the set covers, from the frames) and of ``quote_problems``
    ((check, detail): the quotes are misread) becomes a row of its own, and so does each
    order id of ``duplicates`` (orderId -> rows dropped)."""
    found = set_checks(
        [frame_checks(po, orders, trades)],
        quote_problems=quote_problems,
        duplicates=duplicates,
        coverage=coverage,
    )
    found.extend(slippage_outliers(po))
    return conform_checks(found)


def conform_checks(found: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Rows of checks as one table (``CHECK_COLUMNS``)."""
    if not found:
        return empty(CHECK_COLUMNS)
    return _conform(pd.concat(found, ignore_index=True), CHECK_COLUMNS)


def check_order(
    *,
    quote_problems: Sequence[tuple[str, str]] = (),
    duplicates: pd.Series | None = None,
    coverage: Sequence[str] = (),
) -> Iterator[pd.DataFrame | tuple[str, bool]]:
    """The order of the data_checks rows but the slippage outliers: a frame is rows of the
    set (``coverage``, ``duplicates``, ``quote_problems``); ``(name, by_id)`` the rows of
    check ``name`` of every chunk of orders, in chunk order, or merged by orderId
    (``by_id``: as the set's groupby of the trades sorts them)."""
    if coverage:
        yield pd.DataFrame({"orderId": "", "check": COVERAGE_CHECK, "detail": list(coverage)})
    for name in (SIDE_CHECK, STATUS_CHECK):
        yield name, False
    if duplicates is not None and len(duplicates):
        yield pd.DataFrame(
            {
                "orderId": duplicates.index.astype(str),
                "check": "duplicate order id",
                "value": duplicates.to_numpy().astype("float64") + 1,
                "detail": "present more than once (overlapping loads?); the latest "
                "updatedAt is kept",
            }
        )
    for name in (*FEE_CHECKS, AVERAGE_CHECK):
        yield name, False
    if quote_problems:
        names, details = zip(*quote_problems, strict=True)
        yield pd.DataFrame({"orderId": "", "check": list(names), "detail": list(details)})
    for name in TRADE_CHECKS:
        yield name, True
    yield NEGATIVE_CHECK, False


def set_checks(
    chunks: Sequence[Mapping[str, pd.DataFrame]],
    *,
    quote_problems: Sequence[tuple[str, str]] = (),
    duplicates: pd.Series | None = None,
    coverage: Sequence[str] = (),
) -> list[pd.DataFrame]:
    """Every data_checks row but the slippage outliers, in data_checks' order: those of the
    set (``coverage``, ``duplicates``, ``quote_problems``) and those of ``chunks`` (the
    :func:`frame_checks` of consecutive chunks of its orders, merged check by check)."""
    found: list[pd.DataFrame] = []
    order = check_order(quote_problems=quote_problems, duplicates=duplicates, coverage=coverage)
    for item in order:
        if isinstance(item, pd.DataFrame):
            found.append(item)
            continue
        name, by_id = item
        parts = [c[name] for c in chunks if name in c]
        if len(parts) > 1:
            both = pd.concat(parts, ignore_index=True)
            found.append(both.sort_values("orderId", kind="stable") if by_id else both)
        elif parts:
            found.extend(parts)
    return found


def frame_checks(
    po: pd.DataFrame, orders: pd.DataFrame, trades: pd.DataFrame | None
) -> dict[str, pd.DataFrame]:
    """The data_checks rows of orders' own rows (``po`` and the ``orders`` and ``trades``
    they come from), by check name: the same for a chunk of a set's orders with their
    trades as for the set, which :func:`set_checks` merges."""
    if len(orders) and "id" in orders.columns and _text(orders, "id").duplicated().any():
        keep = _text(orders, "id")
        orders = orders[~keep.duplicated(keep="last")]
    found: dict[str, pd.DataFrame] = {}
    for p in order_field_problems(po):
        found[p.check] = pd.DataFrame(
            {"orderId": po.loc[p.rows, "orderId"], "check": p.check, "detail": p.detail}
        )
    from toolkit.report._per_order import trade_totals

    # the trades' sums per order, once for the fee checks and the checks against the order
    totals = trade_totals(trades)
    found.update(_fee_checks(po, totals))
    priced = po[po["executed"] & (po["average_source"] != "order")]
    if len(priced):
        found[AVERAGE_CHECK] = pd.DataFrame(
            {
                "orderId": priced["orderId"],
                "check": AVERAGE_CHECK,
                "value": priced["average"],
                "detail": "no average: priced from " + priced["average_source"].astype(str),
            }
        )
    if len(totals) and len(orders):
        # by orderId, as a sorted groupby of the trades gives them
        agg = totals.sort_index()
        # trade costs are rounded to cents: half a cent per trade is not an error
        slack_fiat = 0.005 * agg["n"] + 1e-9
        ids = _text(orders, "id")
        checks = {
            TRADE_CHECKS[0]: (
                pd.Series(_num(orders, "average").to_numpy(), index=ids),
                agg["vwap"],
                slack_fiat / agg["amount"].where(agg["amount"] > 0),
            ),
            TRADE_CHECKS[1]: (
                pd.Series(_num(orders, "quoteAmount").to_numpy(), index=ids),
                agg["cost"],
                slack_fiat,
            ),
        }
        for name, (value, expected, slack) in checks.items():
            v = value[~value.index.duplicated()].reindex(expected.index)
            diff = (v - expected) / expected.where(expected != 0) * 1e4
            bad = (diff.abs() > CHECK_TOLERANCE_BP) & ((v - expected).abs() > slack)
            if bad.any():
                found[name] = pd.DataFrame(
                    {
                        "orderId": expected.index[bad],
                        "check": name,
                        "value": v[bad].to_numpy(),
                        "expected": expected[bad].to_numpy(),
                        "diff_bp": diff[bad].to_numpy(),
                        "detail": f"differs by more than {CHECK_TOLERANCE_BP:g} bp",
                    }
                )
    neg = po[po["tte_s"] < 0]
    if len(neg):
        found[NEGATIVE_CHECK] = pd.DataFrame(
            {
                "orderId": neg["orderId"],
                "check": NEGATIVE_CHECK,
                "value": neg["tte_s"],
                "detail": "executedAt before " + neg["tte_basis"].astype(str),
            }
        )
    return found


def _fee_checks(po: pd.DataFrame, tt: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """fee.cost against fee.cripto x average, and the order's fees against its trades'
    (``tt``: their ``trade_totals``)."""
    out: dict[str, pd.DataFrame] = {}

    def flag(
        mask: pd.Series, name: str, value: pd.Series, expected: pd.Series, detail: str
    ) -> None:
        if mask.any():
            out[name] = pd.DataFrame(
                {
                    "orderId": po.loc[mask, "orderId"],
                    "check": name,
                    "value": value[mask],
                    "expected": expected[mask],
                    "diff_bp": ((value - expected) / expected.where(expected != 0) * 1e4)[mask],
                    "detail": detail,
                }
            )

    cost, cripto = po["fee_cost"], po["fee_cripto_fiat"]
    both = (cost > 0) & (cripto > 0)
    # fee.cost is rounded to cents, fee.cripto to 1e-8 units and the average to the
    # price's decimals: a unit mistake is far beyond FEE_CHECK_RELATIVE of the fee
    slack = 0.005 + 0.5e-8 * po["average"]
    diff = (cost - cripto).abs()
    off = both & (diff > slack) & (diff > FEE_CHECK_RELATIVE * cripto)
    flag(off, "fee.cost vs fee.cripto x average", cost, cripto, "one fee in two units disagrees")
    zero = (cost == 0) & (cripto > 0)
    flag(
        zero,
        "fee.cost 0 beside fee.cripto",
        cost,
        cripto,
        "fee counted from fee.cripto x average",
    )
    if len(tt):
        # each order's row of the totals found once (a lookup of text per column is slow)
        at = tt.index.get_indexer(pd.Index(po["orderId"]))

        def totals(col: str) -> pd.Series:
            v = tt[col].to_numpy(dtype="float64")[at]
            v[at < 0] = np.nan
            return pd.Series(v, index=po.index)

        n = totals("n")
        # per trade: a cent of rounding, and in crypto that cent at the price plus 1e-8
        slacks: dict[str, pd.Series | float] = {
            "fee_cost": 0.005,
            "fee_cripto": 0.005 / po["average"] + 0.5e-8,
        }
        for col, unit_slack in slacks.items():
            summed = totals(col)
            mine = po[col]
            tol = unit_slack * n + 1e-12
            bad = summed.notna() & mine.notna() & ((mine - summed).abs() > tol)
            name = col.replace("_", ".")
            flag(bad, f"order {name} vs sum of trade fees", mine, summed, "beyond rounding")
    return out


#: the per-order columns whose outliers are data checks, in the order they are listed
OUTLIER_COLUMNS = ("quote_slippage_bp", "best_quote_slippage_bp", "arrival_slippage_bp")


def slippage_outliers(
    po: pd.DataFrame, ids: Callable[[pd.Index], pd.Series] | None = None
) -> list[pd.DataFrame]:
    """The outlier rows of :func:`data_checks` (the last ones it lists), from ``po``'s
    :data:`OUTLIER_COLUMNS`; ``ids``: the orderId of the rows at these labels, for a
    ``po`` read without its orderId column (only the outliers' ids are then read)."""
    found: list[pd.DataFrame] = []
    for col in OUTLIER_COLUMNS:
        found.extend(_outliers(po, col, ids))
    return found


def _outliers(
    po: pd.DataFrame, col: str, ids: Callable[[pd.Index], pd.Series] | None = None
) -> list[pd.DataFrame]:
    v = po[col]
    ok = v.dropna()
    if ok.empty:
        return []
    med = float(ok.median())
    sigma = 1.4826 * float((ok - med).abs().median())
    far = (v - med).abs() > OUTLIER_SIGMAS * sigma if sigma > 0 else pd.Series(False, index=v.index)
    bad = (v.abs() > OUTLIER_ABS_BP) | far
    bad = bad & v.notna()
    if not bad.any():
        return []
    detail = np.where(
        v[bad].abs() > OUTLIER_ABS_BP,
        f"|{col}| > {OUTLIER_ABS_BP:g} bp",
        f"beyond {OUTLIER_SIGMAS:g} robust sigmas ({sigma:.2f} bp) of the median {med:.2f} bp",
    )
    return [
        pd.DataFrame(
            {
                "orderId": po.loc[bad, "orderId"] if ids is None else ids(v.index[bad]),
                "check": f"outlier {col}",
                "value": v[bad],
                "expected": med,
                "diff_bp": v[bad] - med,
                "detail": detail,
            }
        )
    ]
