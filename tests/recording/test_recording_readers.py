"""docs/src/recording.md's reader calls, run as written, on a fresh recording made by the
Recorder from the simulator and on the shipped data/sample-recording: pandas, pyarrow,
DuckDB and Polars read every row. ``channel`` is a column of the files and the name of
their folders, which plain ``pd.read_parquet(ROOT)`` cannot merge (as the page says);
and nothing but the dataset sits in the sample's folder (its README broke every reader
of the whole folder)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from toolkit.recording._read import read_recording
from toolkit.recording._recorder import Recorder
from toolkit.sim import Simulator

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "src" / "recording.md"
SAMPLE = REPO / "data" / "sample-recording"
SECTION = "## pandas, pyarrow, DuckDB, Polars"


def _documented_calls() -> str:
    """The python block of the readers' section of recording.md, as published."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, f"no python block under {SECTION!r} in {DOC}"
    return match.group(1)


def _run_documented(root: Path) -> dict[str, Any]:
    code = _documented_calls()
    line = 'root = "data/sample-recording"\n'
    assert line in code  # the page's example path, which the test points elsewhere
    names: dict[str, Any] = {}
    exec(code.replace(line, f"root = {str(root)!r}\n"), names)
    return names


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every channel recorded from the simulator, rotated into several files; the root
    as a recorder leaves it (its ``_wal/`` folder beside the dataset)."""
    root = tmp_path_factory.mktemp("fresh") / "rec"
    with Simulator(seed=11, engine=True, tick_interval_s=0.02, history_orders=5) as sim:
        client = sim.client()

        async def main() -> None:
            rec = Recorder(
                client,
                root,
                channels=["watchOrders", "watchTicker:BTC/BRL", "watchTickers", "watchBalance"],
                flush_interval=0.1,
                rotate_interval=0.3,
            )
            rec.start()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 15
            placed = False
            while rec.stats.messages < 60 or rec.stats.files < 2:
                if not placed and rec.stats.messages:
                    for outcome in ("closed", "rejected"):
                        sim.control.market_order(symbol="BTC/BRL", side="buy", outcome=outcome)
                    placed = True
                assert loop.time() < deadline, "the recorder did not record in time"
                await asyncio.sleep(0.02)
            await rec.stop()

        asyncio.run(main())
        client.close()
    yield root


@pytest.fixture(params=["fresh", "sample"])
def root(request: pytest.FixtureRequest) -> Path:
    return SAMPLE if request.param == "sample" else request.getfixturevalue("fresh")


def test_every_documented_reader_reads_every_row(root: Path) -> None:
    want = read_recording(root)
    counts = want["channel"].value_counts().to_dict()
    assert {"watchorders", "watchticker", "watchtickers", "_session"} <= set(counts)
    got = _run_documented(root)

    df = got["df"]  # pandas
    assert df["channel"].astype(str).value_counts().to_dict() == counts
    assert got["table"].num_rows == len(want)  # pyarrow.parquet
    dataset = got["dataset"]  # pyarrow.dataset
    assert dataset.count_rows() == len(want) and "date" in dataset.schema.names
    assert got["ticks"].num_rows == counts["watchticker"]
    mids = got["mids"]  # DuckDB
    assert mids["ticks"].sum() == counts["watchticker"] and mids["mid"].notna().all()
    lazy = got["lazy"]  # Polars
    assert lazy.select("channel").collect().height == len(want)
    orders = got["orders"]
    assert orders.height == counts["watchorders"] and "date" in orders.columns


def test_plain_read_parquet_of_the_root_fails_as_the_page_says(root: Path) -> None:
    # without partitioning=None the folders' channel cannot merge with the files' column
    assert "partitioning=None" in _documented_calls()
    for read in (pd.read_parquet, pq.read_table):
        with pytest.raises(pa.ArrowTypeError, match="Field channel has incompatible types"):
            read(root)


def test_the_sample_folder_holds_only_the_dataset() -> None:
    # its description sits beside it: a README inside broke pandas, pyarrow and Polars
    assert sorted(p.name for p in SAMPLE.iterdir()) == sorted(
        p.name for p in SAMPLE.glob("channel=*")
    )
    assert (REPO / "data" / "sample-recording.md").is_file()
