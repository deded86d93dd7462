"""Tests of the raw fast path: the texts reach Arrow unchanged whatever they hold, and a
warmed-up conversion imports nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from toolkit.recording._raw import RawBuffer


@pytest.mark.parametrize(
    "texts",
    [
        [],
        ['{"channel":"watchticker"}'],
        ['{"a":1}', "", '{"b":"\\u00e7"}'],
        ['{"a":"ação"}', '{"b":"😀"}', '{"c":1}'],
    ],
    ids=["empty", "one", "ascii-with-empty", "non-ascii"],
)
def test_batch_keeps_every_text_and_column(texts: list[str]) -> None:
    buffer = RawBuffer()
    for i, text in enumerate(texts):
        buffer.append(text, 1_000 + i, "c1" if i < 2 else "c2", i + 1)
    batch = buffer.batch()
    assert batch.num_rows == len(texts)
    assert batch.column("raw").to_pylist() == texts
    assert batch.column("received_at").to_pylist() == [1_000 + i for i in range(len(texts))]
    assert batch.column("seq").to_pylist() == list(range(1, len(texts) + 1))
    assert batch.column("connection_id").to_pylist() == [
        "c1" if i < 2 else "c2" for i in range(len(texts))
    ]
    batch.validate(full=True)


def test_warm_up_leaves_nothing_for_a_conversion_to_import(tmp_path: Path) -> None:
    # an import during a recording holds the GIL for up to a second: the writer's open
    # warms the conversion path so that no conversion imports anything
    code = textwrap.dedent(
        """
        import sys
        from toolkit.recording._files import write_parts
        from toolkit.recording._raw import RawBuffer, tables_from_raw, warm_up

        warm_up()
        before = set(sys.modules)
        buffer = RawBuffer()
        texts = [
            '{"channel":"watchorders","message":{"id":"x","status":"closed","updatedAt":5}}',
            '{"channel":"watchticker","message":{"symbol":"BTC/BRL","bid":"1.5","ask":"2"}}',
            '{"channel":"watchtickers","message":{"tickers":[{"timestamp":7}]}}',
            '{"channel":"watchbalance","message":{"balances":[],"timestamp":9}}',
        ]
        for seq, text in enumerate(texts, 1):
            buffer.append(text, 10**18 + seq, "c", seq)
        write_parts(sys.argv[1], tables_from_raw([buffer.batch()]), "t")
        print(sorted(set(sys.modules) - before))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout
    assert len(list(tmp_path.rglob("part-t.r*.parquet"))) == 4
