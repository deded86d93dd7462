"""What the report reads its orders from: frames in memory, an export folder (the files
``OrderFrames.to_parquet`` writes), or an order store (anything with a ``frames()``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.errors import InvalidRequest

#: the files of a frames export (``OrderFrames.to_parquet``)
FRAME_FILES = ("orders", "trades", "fees", "evaluated_tickers", "fills")


@dataclass(frozen=True)
class ParquetFrames:
    """The frames of a folder of loose export files (no manifest), as read."""

    orders: Any
    trades: Any
    evaluated_tickers: Any


def export_frames(directory: str | os.PathLike[str]) -> Any:
    """The export at ``directory`` as ``OrderFrames`` when it is whole or has a manifest
    (which must then match); else (loose files) the frames present, read directly.

    Raises
    ------
    InvalidRequest
        No such folder, no ``orders.parquet`` in it, or a manifest it does not match.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise InvalidRequest(f"no export at {folder} (a folder OrderFrames.to_parquet wrote)")
    missing = [n for n in FRAME_FILES if not (folder / f"{n}.parquet").is_file()]
    if "orders" in missing:
        raise InvalidRequest(f"no orders.parquet in {folder}")
    from toolkit.frames._frames import OrderFrames

    if not missing or (folder / "_manifest.json").exists():
        # an export set is read whole, under its manifest: one its manifest does not
        # match (files missing, another export's manifest) is refused, never reported as
        # a partial or mixed set; a folder of loose files (no manifest) is read as it is
        return OrderFrames.read_parquet(folder)
    import pandas as pd

    def read(name: str) -> pd.DataFrame:
        path = folder / f"{name}.parquet"
        return pd.read_parquet(path) if path.is_file() else pd.DataFrame()

    return ParquetFrames(read("orders"), read("trades"), read("evaluated_tickers"))


def frames_source(frames: Any) -> Any:
    """``frames`` as the metrics read them: frames (anything with ``orders``) as they are,
    a path as an export folder, an order store through its ``frames()``.

    Raises
    ------
    InvalidRequest
        Anything else, named; an export folder :func:`export_frames` refuses.
    """
    if isinstance(frames, str | os.PathLike):
        if not str(os.fspath(frames)).strip():
            raise InvalidRequest("the report's orders need frames, a store or an export folder")
        return export_frames(frames)
    if hasattr(frames, "orders"):
        return frames
    read = getattr(frames, "frames", None)
    if callable(read):
        return read()
    raise InvalidRequest(
        "the report's orders are OrderFrames, an OrderStore or the folder of an export "
        f"(OrderFrames.to_parquet), not {type(frames).__name__}"
    )
