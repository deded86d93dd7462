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


@dataclass(frozen=True)
class SetFiles:
    """The files of a set of orders an engine reads where they lie (per table: ``orders``,
    ``trades``, ``evaluated_tickers``), the quote field names and the set's coverage."""

    files: dict[str, list[Path]]
    quote_fields: Any
    coverage: list[str]


def set_files(source: Any) -> SetFiles | None:
    """The files of ``source`` (an export folder, an order store's typed tables), checked
    as :func:`frames_source` checks them but not read; None for frames in memory.

    Raises
    ------
    InvalidRequest
        Anything else, named; an export folder :func:`export_frames` refuses.
    """
    from toolkit.frames._schema import QuoteFields
    from toolkit.report._coverage import frame_notes

    if isinstance(source, str | os.PathLike):
        if not str(os.fspath(source)).strip():
            raise InvalidRequest("the report's orders need frames, a store or an export folder")
        return _export_files(Path(source))
    if hasattr(source, "orders"):
        return None
    tables = getattr(source, "table_files", None)
    if callable(tables):
        found = tables()
        files = {
            name: list(found.get(name, [])) for name in ("orders", "trades", "evaluated_tickers")
        }
        if not files["orders"]:
            return None  # a store without orders: its (empty) frames say so
        coverage = source.coverage() if callable(getattr(source, "coverage", None)) else None
        fields = (
            QuoteFields.from_profile(source.profile)
            if hasattr(source, "profile")
            else QuoteFields()
        )
        return SetFiles(files, fields, frame_notes(_Attrs({"coverage": coverage})))
    frames_source(source)  # refused there, named
    return None


@dataclass(frozen=True)
class _Attrs:
    attrs: dict[str, Any]


def _export_files(folder: Path) -> SetFiles:
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from toolkit._atomic import MANIFEST, set_problem
    from toolkit.frames._frames import _PARQUET_META_KEY
    from toolkit.frames._schema import FRAME_NAMES, QuoteFields
    from toolkit.report._coverage import frame_notes

    if not folder.is_dir():
        raise InvalidRequest(f"no export at {folder} (a folder OrderFrames.to_parquet wrote)")
    missing = [n for n in FRAME_FILES if not (folder / f"{n}.parquet").is_file()]
    if "orders" in missing:
        raise InvalidRequest(f"no orders.parquet in {folder}")
    files = {
        name: [folder / f"{name}.parquet"] if (folder / f"{name}.parquet").is_file() else []
        for name in ("orders", "trades", "evaluated_tickers")
    }
    if missing and not (folder / MANIFEST).exists():
        # loose files (no manifest) are read as they are, without the export's metadata
        return SetFiles(files, QuoteFields(), [])
    # an export set is read under its manifest, as OrderFrames.read_parquet reads it
    what, again = (
        "export of OrderFrames.to_parquet",
        "export again (OrderFrames.to_parquet, toolkit load)",
    )
    if problem := set_problem(folder, [], what=what, again=again):
        raise InvalidRequest(problem)
    names = [f"{name}.parquet" for name in FRAME_NAMES]
    absent = [name for name in names if not (folder / name).is_file()]
    if absent:
        raise InvalidRequest(f"{folder} is not an {what}: no {', '.join(absent)}")
    if problem := set_problem(folder, names, what=what, again=again, require_manifest=True):
        raise InvalidRequest(problem)
    orders = folder / "orders.parquet"
    try:
        meta = (pq.read_schema(orders).metadata or {}).get(_PARQUET_META_KEY)
    except (OSError, pa.ArrowException) as exc:
        raise InvalidRequest(f"{orders} is damaged or not Parquet ({exc}); export again") from None
    try:
        info = json.loads(meta) if meta else {}
    except ValueError:
        raise InvalidRequest(f"{orders}: its toolkit metadata is not JSON; export again") from None
    fields = QuoteFields.from_dict(info.get("quote_fields"))
    return SetFiles(files, fields, frame_notes(_Attrs({"coverage": info.get("coverage")})))
