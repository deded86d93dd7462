"""What the report reads its orders from (toolkit/report/_inputs.py): frames, an export
folder, an order store; anything else is refused by name."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from _report_frames import closed_order, make_frames
from _synthetic import mixed_orders

from toolkit.errors import InvalidRequest
from toolkit.frames._frames import build_frames
from toolkit.report import execution_report


def same_tables(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> None:
    assert set(a) == set(b)
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name], obj=name)


def test_an_export_folder_gives_the_report_of_its_frames(tmp_path: Path) -> None:
    frames = build_frames(mixed_orders(40))
    frames.to_parquet(tmp_path / "export")
    same_tables(execution_report(tmp_path / "export").tables, execution_report(frames).tables)
    # loose files (no manifest): the frames present
    loose = tmp_path / "loose"
    loose.mkdir()
    for name in ("orders", "trades", "evaluated_tickers"):
        (tmp_path / "export" / f"{name}.parquet").rename(loose / f"{name}.parquet")
    assert len(execution_report(str(loose))["per_order"]) == len(frames.orders)


def test_a_folder_without_orders_or_another_object_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match=r"no orders\.parquet in .*empty"):
        (tmp_path / "empty").mkdir()
        execution_report(tmp_path / "empty")
    with pytest.raises(InvalidRequest, match=r"no export at .*nope"):
        execution_report(tmp_path / "nope")
    with pytest.raises(InvalidRequest, match="not int"):
        execution_report(3)
    with pytest.raises(InvalidRequest, match="need frames"):
        execution_report("  ")


def test_an_object_with_frames_is_read_through_them() -> None:
    frames = make_frames([closed_order("b", "buy", 101.0)])

    class Store:
        def frames(self) -> object:
            return frames

    same_tables(execution_report(Store()).tables, execution_report(frames).tables)


def test_an_order_store_gives_the_report_of_its_frames(sim: object, tmp_path: Path) -> None:
    from toolkit.store import OrderStore

    store = OrderStore(tmp_path / "store")
    with sim.client() as client:  # type: ignore[attr-defined]
        store.sync(client)
    assert len(store) > 0
    same_tables(execution_report(store).tables, execution_report(store.frames()).tables)
