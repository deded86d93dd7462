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

from toolkit._atomic import MANIFEST, atomic_files, set_problem
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
    if pa.types.is_integer(dtype):  # exact with gaps, where numpy would make float64
        return pd.Int64Dtype() if pa.types.is_signed_integer(dtype) else pd.UInt64Dtype()
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
    with ``exact=True`` (always that type; a value it cannot hold is null, with a
    warning); timestamps become ``datetime64[ms, UTC]``, read per the profile's
    ``orders.timestamp_unit`` (``auto``: values below 1e11 are seconds). One odd order
    never fails the load: a time that is no moment between 2000 and 9999 (NaN, Infinity,
    microseconds...) or a text with a lone surrogate escape is null, with one warning per
    column naming it; when most ``createdAt``/``updatedAt`` values are no such moment the
    unit is wrong, and :class:`~toolkit.errors.InvalidResponse` names
    ``orders.timestamp_unit``. An order's ``id`` is text: an integer id becomes its
    decimal digits (exactly, whatever its size), any other non-text id (``1.5``, a
    boolean, an object) raises InvalidResponse naming the order. Unknown fields are kept
    as columns with their JSON types (integers as nullable ``Int64``, text beyond int64;
    a field named like a derived column is renamed, e.g. ``trade.symbol``, with a
    warning); a field whose type changes between orders becomes text. Raises
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
    return _from_tables(build_tables(raw_orders, exact=exact, profile=profile), quote_fields=fields)


def build_tables(
    raw_orders: Sequence[RawOrder],
    *,
    exact: bool = False,
    profile: ServiceProfile | None = None,
) -> dict[str, pa.Table]:
    """The five frame tables of :func:`build_frames` as Arrow tables, before pandas (name
    -> table, in :data:`FRAME_NAMES` order): what the order store keeps on disk."""
    fields = QuoteFields() if profile is None else QuoteFields.from_profile(profile)
    unit = "auto" if profile is None else profile.orders.timestamp_unit
    return _build_tables(_parse(_bodies(raw_orders), fields), exact, fields, unit=unit)


def frames_from_tables(
    tables: dict[str, pa.Table],
    *,
    profile: ServiceProfile | None = None,
    missing: list[str] | None = None,
) -> OrderFrames:
    """:class:`OrderFrames` of the Arrow tables :func:`build_tables` gives (read back from
    Parquet, say), with the dtypes of :func:`build_frames`. ``tables`` is emptied: each
    table's memory is given back as it is converted, so the Arrow tables and the frames
    are never all held at once (the caller keeps no other reference to them)."""
    fields = QuoteFields() if profile is None else QuoteFields.from_profile(profile)
    frames: dict[str, pd.DataFrame] = {}
    for name in FRAME_NAMES:
        table = tables.pop(name)
        frames[name] = table.to_pandas(
            types_mapper=_types_mapper, split_blocks=True, self_destruct=True
        )
        del table
    return OrderFrames(
        orders=frames["orders"],
        trades=frames["trades"],
        fees=frames["fees"],
        evaluated_tickers=frames["evaluated_tickers"],
        fills=frames["fills"],
        missing=list(missing or []),
        quote_fields=fields,
    )


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


#: a cell a spreadsheet would take as a formula (OWASP "CSV injection"): these first characters
_FORMULA_START = r"^[=+\-@\t\r\n]"
#: ... unless the whole cell is a plain number ("-1.5", "+2e3"), which runs nothing and reads
#: as that number
_PLAIN_NUMBER = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"
_BOM = b"\xef\xbb\xbf"


def _csv_column(col: pa.ChunkedArray, *, excel: bool) -> pa.ChunkedArray | pa.Array:
    dtype = col.type
    if pa.types.is_timestamp(dtype):
        # ISO 8601 in UTC; %S carries the milliseconds of a ms column. Excel reads a time
        # with no zone and takes "...Z" for text, so its form names UTC in the header
        form = "%Y-%m-%d %H:%M:%S" if excel else "%Y-%m-%dT%H:%M:%SZ"
        return pc.strftime(pc.cast(col, TIMESTAMP), format=form)
    if pa.types.is_nested(dtype) or pa.types.is_null(dtype):
        col = pa.chunked_array(
            [
                pa.array(
                    [None if v is None else json.dumps(v, default=str) for v in col.to_pylist()],
                    pa.string(),
                )
            ]
        )
    elif pa.types.is_dictionary(dtype) and pa.types.is_string(dtype.value_type):
        col = col.cast(dtype.value_type)
    if excel and (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return _neutralise(col)
    return col


def _neutralise(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Text cells a spreadsheet would run as a formula, prefixed with ``'`` (shown as text,
    the ``'`` itself hidden); numbers are never touched, and neither is text that is a plain
    number."""
    risky = pc.and_(
        pc.match_substring_regex(col, _FORMULA_START),
        pc.invert(pc.match_substring_regex(col, _PLAIN_NUMBER)),
    )
    quote, nothing = pa.scalar("'", col.type), pa.scalar("", col.type)
    return pc.if_else(risky, pc.binary_join_element_wise(quote, col, nothing), col)


def _csv_name(name: str, dtype: pa.DataType, *, excel: bool) -> str:
    if not excel:
        return name
    if pa.types.is_timestamp(dtype):
        name = f"{name} (UTC)"
    return str(_neutralise(pa.chunked_array([[name]], pa.string()))[0])


def _csv_table(table: pa.Table, *, excel: bool) -> pa.Table:
    if not table.num_columns:
        return pa.table({})
    return pa.Table.from_arrays(
        [_csv_column(table.column(i), excel=excel) for i in range(table.num_columns)],
        names=[_csv_name(f.name, f.type, excel=excel) for f in table.schema],
    )


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
        ``_manifest.json`` (written last) lists the files of the complete set. The
        previous manifest is removed before the first rename, so an export interrupted
        there leaves a folder :meth:`read_parquet` refuses, never a mix read as one set."""
        root = _export_dir(directory)
        with atomic_files(root, [f"{name}.parquet" for name in FRAME_NAMES]) as files:
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

    def to_csv(self, directory: str | os.PathLike[str], *, excel: bool = True) -> dict[str, Path]:
        """Write ``<name>.csv`` per frame into ``directory``; returns the paths.

        A header row, ``,`` separators, ``.`` decimal points, empty cells for nulls, nested
        values as JSON text. Whole or not at all, like :meth:`to_parquet`.

        Parameters
        ----------
        directory : path
            Created if needed.
        excel : bool
            True (the default): files a spreadsheet opens safely and reads as they are,
            which DuckDB, Polars and pandas read too. UTF-8 with a byte-order mark (so
            Excel reads accents); times as ``2026-11-01 12:00:00.123`` in UTC, with
            `` (UTC)`` added to the column's name (Excel takes a time with a zone for
            text); a text cell starting with ``=``, ``+``, ``-``, ``@``, a tab, CR or LF
            that is not a plain number gets a leading ``'`` (so a spreadsheet shows the
            service's text instead of running it as a formula), and so does such a
            column name. Number columns are never changed. A program reading these
            files sees that ``'`` in those cells: read the Parquet export, or write
            ``excel=False``, for data meant for programs.
            False: plain UTF-8 CSV (no byte-order mark), every cell as it is, times as
            ISO 8601 with a ``Z`` (``2026-11-01T12:00:00.123Z``) under the frame's
            column names.

        Returns
        -------
        dict of str to Path
            Frame name -> the file written.
        """
        if not isinstance(excel, bool):
            raise InvalidRequest(f"excel must be True or False, not {excel!r}")
        root = _export_dir(directory)
        with atomic_files(root, [f"{name}.csv" for name in FRAME_NAMES]) as files:
            for name, df in self.frames().items():
                table = _csv_table(_to_arrow(df), excel=excel)
                with open(files.path(f"{name}.csv"), "wb") as out:
                    if excel:
                        out.write(_BOM)
                    pcsv.write_csv(table, out)
        return {name: root / f"{name}.csv" for name in FRAME_NAMES}

    @classmethod
    def read_parquet(
        cls, directory: str | os.PathLike[str], *, require_manifest: bool = True
    ) -> OrderFrames:
        """Read back what :meth:`to_parquet` wrote, with the same dtypes.

        Only a complete export is read: its ``_manifest.json`` must say so and list the
        five ``<name>.parquet`` files with the sizes they have. A folder where an export
        was interrupted, or where a later export (``to_csv``, ``to_parquet``) replaced the
        manifest, is refused rather than read as a mix of two exports.

        Parameters
        ----------
        directory : path
            A folder :meth:`to_parquet` wrote.
        require_manifest : bool
            False reads a folder without a manifest as it is (one written by another tool
            or an older toolkit): nothing then tells a complete set from an interrupted
            one. A manifest present is always checked.

        Returns
        -------
        OrderFrames

        Raises
        ------
        InvalidRequest
            A ``ValueError`` naming the folder or file: an empty path, a folder that does
            not exist, one without the five ``<name>.parquet`` files, without a manifest,
            whose manifest does not match the files or does not list them, or with a file
            that is not Parquet (damaged, cut short).
        """
        if not isinstance(directory, str | os.PathLike) or not str(os.fspath(directory)).strip():
            raise InvalidRequest(f"read_parquet needs a folder path, not {directory!r}")
        root = Path(directory)
        if not root.is_dir():
            raise InvalidRequest(f"no export at {root} (a folder OrderFrames.to_parquet wrote)")
        names = [f"{name}.parquet" for name in FRAME_NAMES]
        again = "export again (OrderFrames.to_parquet, toolkit load)"
        what = "export of OrderFrames.to_parquet"
        # an interrupted or damaged set is named as such before a member is missed
        if (root / MANIFEST).exists() and (
            problem := set_problem(root, [], what=what, again=again)
        ):
            raise InvalidRequest(problem)
        absent = [name for name in names if not (root / name).is_file()]
        if absent:
            raise InvalidRequest(f"{root} is not an {what}: no {', '.join(absent)}")
        problem = set_problem(
            root, names, what=what, again=again, require_manifest=require_manifest
        )
        if problem:
            raise InvalidRequest(problem)
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
