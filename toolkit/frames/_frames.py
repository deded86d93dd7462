"""Raw fetchOrder bodies -> typed pandas DataFrames (orders, trades, fees, evaluated_tickers,
fills) through pyarrow, and their Parquet / CSV exports: PRODUCT.md "Data model of the frames".

The bodies are parsed in one pass by ``pyarrow.json`` with an explicit schema for the known
fields (inference keeps the unknown ones), structs are flattened to dotted columns and the
lists are exploded with ``list_flatten`` / ``list_parent_indices``; no per-order Python runs
on the fast path. Input the fast path cannot take (a field whose JSON type changes between
orders, a pretty-printed or broken body) goes through a slower repair pass that coerces the
offending fields to strings, so one odd order never makes the whole load fail.

The parse and repair live in ``_parse``, the column rules and the five tables in ``_build``;
this module holds :class:`OrderFrames`, :func:`build_frames` and the exports.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from toolkit._atomic import MANIFEST, atomic_files, read_manifest
from toolkit.errors import InvalidRequest
from toolkit.frames._build import TIMESTAMP, _build_tables
from toolkit.frames._parse import RawOrder, _bodies, _parse
from toolkit.frames._schema import FRAME_NAMES, QuoteFields

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.profile import ServiceProfile

__all__ = ["OrderFrames", "RawOrder", "build_frames"]

_PARQUET_META_KEY = b"toolkit.frames"


# --------------------------------------------------------------------------- frames


def _types_mapper(dtype: pa.DataType) -> pd.api.extensions.ExtensionDtype | None:
    # exact decimals stay Arrow-backed; numpy has no decimal dtype and object would copy
    if pa.types.is_decimal(dtype):
        return pd.ArrowDtype(dtype)
    return None


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas(types_mapper=_types_mapper)


def build_frames(
    raw_orders: Sequence[RawOrder],
    *,
    exact: bool = False,
    profile: ServiceProfile | None = None,
) -> OrderFrames:
    """Normalise fetchOrder bodies into :class:`OrderFrames`.

    ``raw_orders`` holds one order per item: the raw response body (bytes or str) or an
    already-parsed mapping. Decimal strings become float64, or exact ``decimal128(38, 18)``
    (wider when a value needs it) with ``exact=True``; timestamps become
    ``datetime64[ms, UTC]`` whether sent in seconds or milliseconds (decided per column:
    values below 1e11 are seconds). Unknown fields are kept as columns with their JSON types;
    a field whose type changes between orders becomes text. Raises
    :class:`~toolkit.errors.InvalidRequest` (a ``ValueError``) naming the item's position
    for a body that is not one JSON object, an item of another type, or a mapping JSON
    cannot hold.

    ``profile`` (default: the default profile) names the ``evaluatedTickers`` element fields
    (``orders.quote_venue_field``, ``quote_price_field``, ``quote_time_field``,
    ``quote_reason_field``): the evaluated_tickers frame keeps those names as columns, types
    the price as a decimal and the time as a timestamp, and remembers the mapping in
    ``OrderFrames.quote_fields`` (kept by ``to_parquet``) so the report reads the quotes
    through it. Timestamps in seconds or milliseconds are told apart per value.
    """
    fields = QuoteFields() if profile is None else QuoteFields.from_profile(profile)
    tables = _build_tables(_parse(_bodies(raw_orders), fields), exact, fields)
    return _from_tables(tables, quote_fields=fields)


def _from_tables(
    tables: Mapping[str, pa.Table],
    missing: list[str] | None = None,
    *,
    quote_fields: QuoteFields | None = None,
) -> OrderFrames:
    return OrderFrames(
        orders=_to_pandas(tables["orders"]),
        trades=_to_pandas(tables["trades"]),
        fees=_to_pandas(tables["fees"]),
        evaluated_tickers=_to_pandas(tables["evaluated_tickers"]),
        fills=_to_pandas(tables["fills"]),
        missing=list(missing or []),
        quote_fields=quote_fields or QuoteFields(),
    )


# --------------------------------------------------------------------------- export


def _export_dir(directory: str | os.PathLike[str]) -> Path:
    """The folder an export goes to, or InvalidRequest before anything is written (an empty
    path would silently mean the current directory)."""
    if not isinstance(directory, str | os.PathLike) or not str(os.fspath(directory)).strip():
        raise InvalidRequest(f"an export needs a folder path, not {directory!r}")
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise InvalidRequest(f"{root} exists and is not a folder")
    return root


def _to_arrow(df: pd.DataFrame) -> pa.Table:
    table = pa.Table.from_pandas(df, preserve_index=False)
    for i, f in enumerate(table.schema):
        if pa.types.is_null(f.type):
            # an all-null column of unknown type: text is what every reader accepts
            table = table.set_column(i, f.name, pa.nulls(table.num_rows, pa.string()))
        elif pa.types.is_timestamp(f.type) and f.type.tz is None:
            table = table.set_column(
                i, f.name, pc.assume_timezone(table.column(i), timezone="UTC").cast(TIMESTAMP)
            )
    return table


def _csv_column(col: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    dtype = col.type
    if pa.types.is_timestamp(dtype):
        # ISO 8601 in UTC; %S carries the milliseconds of a ms column
        return pc.strftime(pc.cast(col, TIMESTAMP), format="%Y-%m-%dT%H:%M:%SZ")
    if pa.types.is_nested(dtype) or pa.types.is_null(dtype):
        return pa.array(
            [None if v is None else json.dumps(v, default=str) for v in col.to_pylist()],
            pa.string(),
        )
    return col


@dataclass(eq=False, repr=False)
class OrderFrames:
    """The orders of an account as five DataFrames, joined by ``id``/``orderId``.

    What ``client.load_orders()`` and ``store.frames()`` return. Column names are the
    service's field names, nested objects flattened with ``.`` (``fee.cost``); every
    column, its dtype, unit and meaning is in the documentation's column dictionary
    (docs/columns.md, generated from the schema).

    Attributes
    ----------
    orders : pandas.DataFrame
        One row per order (``id``, ``status`` canonical and ``statusRaw`` as sent, ...).
    trades : pandas.DataFrame
        One row per trade of an order (``orderId``).
    fees : pandas.DataFrame
        One row per fee charged on an order, operational fees included.
    evaluated_tickers : pandas.DataFrame
        One row per quote the router saw for an order (``evaluatedTickers``).
    fills : pandas.DataFrame
        Trades with their order's context (symbol, side, executedExchange, rule,
        status): the table to export.
    missing : list of str
        Ids the loader could not fetch (404 by then).
    attrs : dict
        How and when the frames were loaded.
    quote_fields : QuoteFields
        The columns of ``evaluated_tickers`` by meaning (venue, price, time, reason), as
        the profile's ``orders.quote_*_field`` say.

    Examples
    --------
    >>> frames = client.load_orders(status="FINALIZED")  # doctest: +SKIP
    >>> frames.fills.groupby("executedExchange")["cost"].sum()  # doctest: +SKIP
    >>> frames.to_parquet("out/")  # doctest: +SKIP
    """

    orders: pd.DataFrame
    trades: pd.DataFrame
    fees: pd.DataFrame
    evaluated_tickers: pd.DataFrame
    fills: pd.DataFrame
    missing: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    quote_fields: QuoteFields = field(default_factory=QuoteFields)

    @classmethod
    def empty(cls, *, exact: bool = False, profile: ServiceProfile | None = None) -> OrderFrames:
        """Frames with no rows and the full typed schema of every known column."""
        return build_frames([], exact=exact, profile=profile)

    def frames(self) -> dict[str, pd.DataFrame]:
        """Name -> DataFrame, in the order of the contract."""
        return {name: getattr(self, name) for name in FRAME_NAMES}

    def __iter__(self) -> Iterator[tuple[str, pd.DataFrame]]:
        return iter(self.frames().items())

    def __len__(self) -> int:
        return len(self.orders)

    def __repr__(self) -> str:
        counts = ", ".join(f"{name}={len(df)}" for name, df in self.frames().items())
        return f"OrderFrames({counts}, missing={len(self.missing)})"

    # ------------------------------------------------------------------ exports

    def to_parquet(self, directory: str | os.PathLike[str]) -> dict[str, Path]:
        """Write ``<name>.parquet`` per frame (zstd) into ``directory``; returns the paths.

        Timestamps are ``timestamp[ms, tz=UTC]`` and exact decimals ``decimal128``, so
        DuckDB, Polars and Spark read the files as they are. The set appears whole or not
        at all: every file is written under a temporary name first (a failure such as a
        full disk leaves the folder as it was), then renamed into place, and
        ``_manifest.json`` (written last) lists the files of the complete set."""
        root = _export_dir(directory)
        with atomic_files(root) as files:
            for name, df in self.frames().items():
                table = _to_arrow(df)
                if name == "orders":
                    meta = dict(table.schema.metadata or {})
                    info: dict[str, Any] = {
                        "missing": list(self.missing),
                        "quote_fields": self.quote_fields.to_dict(),
                    }
                    if _jsonable(self.attrs.get("coverage")):
                        # what the set covers goes with it: a report read back says so too
                        info["coverage"] = self.attrs["coverage"]
                    meta[_PARQUET_META_KEY] = json.dumps(info).encode()
                    table = table.replace_schema_metadata(meta)
                pq.write_table(table, files.path(f"{name}.parquet"), compression="zstd")
        return {name: root / f"{name}.parquet" for name in FRAME_NAMES}

    def to_csv(self, directory: str | os.PathLike[str]) -> dict[str, Path]:
        """Write ``<name>.csv`` per frame into ``directory``; returns the paths.

        UTF-8, a header row, ``,`` separators, ``.`` decimal points, ISO 8601 UTC timestamps
        (``2026-11-01T12:00:00.123Z``), empty cells for nulls, nested values as JSON text.
        Whole or not at all, like :meth:`to_parquet`."""
        root = _export_dir(directory)
        with atomic_files(root) as files:
            for name, df in self.frames().items():
                table = _to_arrow(df)
                table = pa.table(
                    {n: _csv_column(table.column(n)) for n in table.column_names}
                    if table.num_columns
                    else {}
                )
                pcsv.write_csv(table, files.path(f"{name}.csv"))
        return {name: root / f"{name}.csv" for name in FRAME_NAMES}

    @classmethod
    def read_parquet(cls, directory: str | os.PathLike[str]) -> OrderFrames:
        """Read back what :meth:`to_parquet` wrote, with the same dtypes.

        Raises :class:`~toolkit.errors.InvalidRequest` (a ``ValueError``) naming the
        folder or file: an empty path, a folder that does not exist, one without the five
        ``<name>.parquet`` files, whose manifest shows an interrupted export, or with a
        file that is not Parquet (damaged, cut short)."""
        if not isinstance(directory, str | os.PathLike) or not str(os.fspath(directory)).strip():
            raise InvalidRequest(f"read_parquet needs a folder path, not {directory!r}")
        root = Path(directory)
        if not root.is_dir():
            raise InvalidRequest(f"no export at {root} (a folder OrderFrames.to_parquet wrote)")
        if (root / MANIFEST).exists() and read_manifest(root) is None:
            raise InvalidRequest(
                f"{root} holds an incomplete export (its {MANIFEST} does not match the "
                "files); export again"
            )
        absent = [
            f"{name}.parquet" for name in FRAME_NAMES if not (root / f"{name}.parquet").is_file()
        ]
        if absent:
            raise InvalidRequest(
                f"{root} is not an export of OrderFrames.to_parquet: no {', '.join(absent)}"
            )
        tables = {name: _read_frame(root / f"{name}.parquet") for name in FRAME_NAMES}
        meta = (tables["orders"].schema.metadata or {}).get(_PARQUET_META_KEY)
        try:
            info = json.loads(meta) if meta else {}
        except ValueError:
            raise InvalidRequest(
                f"{root / 'orders.parquet'}: its toolkit metadata is not JSON; export again"
            ) from None
        missing = list(info.get("missing", []))
        quote_fields = QuoteFields.from_dict(info.get("quote_fields"))
        frames = _from_tables(tables, missing, quote_fields=quote_fields)
        if info.get("coverage") is not None:
            frames.attrs["coverage"] = info["coverage"]
        return frames

    # ------------------------------------------------------------------ notebook

    def _repr_html_(self) -> str:
        esc = html.escape
        rows = "".join(
            f"<tr><td>{esc(name)}</td><td>{len(df):,}</td><td>{df.shape[1]}</td></tr>"
            for name, df in self.frames().items()
        )
        parts = [
            "<div class='toolkit-order-frames'><strong>OrderFrames</strong>",
            "<table><thead><tr><th>frame</th><th>rows</th><th>columns</th></tr></thead>",
            f"<tbody>{rows}</tbody></table>",
        ]
        if "status" in self.orders and len(self.orders):
            counts = self.orders["status"].value_counts(dropna=False).head(20)
            cells = "".join(
                f"<tr><td>{esc(str(status))}</td><td>{int(n):,}</td></tr>"
                for status, n in counts.items()
            )
            parts.append(
                "<table><thead><tr><th>status</th><th>orders</th></tr></thead>"
                f"<tbody>{cells}</tbody></table>"
            )
        if "createdAt" in self.orders and self.orders["createdAt"].notna().any():
            first, last = self.orders["createdAt"].min(), self.orders["createdAt"].max()
            parts.append(f"<p>createdAt from {esc(str(first))} to {esc(str(last))}</p>")
        if self.missing:
            parts.append(f"<p>{len(self.missing):,} order(s) could not be loaded</p>")
        parts.append("</div>")
        return "".join(parts)


def _read_frame(path: Path) -> pa.Table:
    """One file of an export, or InvalidRequest naming it when it is not Parquet."""
    try:
        return pq.read_table(path)
    except pa.ArrowInvalid as exc:
        raise InvalidRequest(f"{path} is damaged or not Parquet ({exc}); export again") from None


def _jsonable(value: object) -> bool:
    """Whether ``value`` is set and survives JSON as it is (the coverage note: text, or a
    mapping of text, numbers and lists)."""
    if value is None:
        return False
    try:
        return json.loads(json.dumps(value)) == value
    except (TypeError, ValueError):
        return False
