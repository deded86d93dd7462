"""``execution_report`` and ``ExecutionReport``: the execution-quality report of a set of
orders as pandas tables, matplotlib figures, a notebook view, HTML and Parquet."""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping, MutableMapping, Sequence
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from toolkit._atomic import atomic_files, atomic_write_text, read_manifest, set_problem
from toolkit.errors import InvalidRequest
from toolkit.report import _figures, _html, _metrics
from toolkit.report._columnar import quotes_from_parts, read_columns, tables_from_parts
from toolkit.report._columns import empty
from toolkit.report._coverage import COVERAGE_CHECK, absent_type_notes
from toolkit.report._daily import daily_cost
from toolkit.report._definitions import DEFINITIONS, OPTIONAL_TABLES, SECTIONS
from toolkit.report._drilldown import QUOTE_COLUMNS, order_chart, worst_order_quotes
from toolkit.report._gate import MIN_COVERAGE, MIN_ORDERS, CoverageRule
from toolkit.report._inputs import frames_source
from toolkit.report._market import MarketLike, market_source
from toolkit.report._orders_on_disk import (
    PAGE_COLUMNS,
    OrderStats,
    PartsTables,
    stats_of_frame,
    stats_of_parts,
    worst_rows,
    write_per_order,
)
from toolkit.report._parts import OrderParts
from toolkit.report._robust import Period
from toolkit.report._scratch import remove
from toolkit.report._shown import shown
from toolkit.report._stored_checks import CheckedTables, DataChecks
from toolkit.report._svg import figure_svg, ink
from toolkit.report._tables import MAX_HTML_ROWS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DEFAULT_TITLE = "Execution-quality report"


class ExecutionReport:
    """Every metric table of the report (``tables``, by name), its figures (drawn on first
    use from the tables alone), and the definition of each metric.

    Parameters
    ----------
    tables : mapping of str to DataFrame
        Every table the sections name, and ``per_order`` (the per-order metrics every
        other table derives from).
    title : str
        The page's title.
    min_coverage : float
        A metric or chart resting on less than this share of the orders it applies to
        reads "insufficient coverage (n of N)" on the page (default 0.20).
    min_orders : int
        Likewise for fewer than this many orders (default 30).

    Notes
    -----
    ``report["venues"]`` is ``report.tables["venues"]``. The summary tables are
    ``headline`` (market / limit / all orders of the set, with 95 % intervals),
    ``cost_decomposition`` and ``summary``; ``report.definitions`` says what each metric
    is, and ``report.coverage`` what the set covers (shown under the page's title and in
    ``repr``). In a notebook every table shows formatted (headers in words, units,
    thousands separators); it is a DataFrame all the same. ``report.rule`` holds the
    coverage rule of the page (``min_coverage``, ``min_orders``); ``daily_cost`` and
    ``worst_order_quotes`` are tables too (a set written before them draws the first
    again from ``per_order`` and leaves the second empty).

    A report built from parts on disk (:meth:`from_parts`, what ``execution_report``
    gives for a set too large for memory) keeps its per-order table there:
    ``report["per_order"]`` then reads every order, all columns, each time it is asked
    for, while the page, the figures, ``repr``, ``describe`` and the order charts read
    only the few columns (and the worst orders' rows) they show. Such a report owns the
    parts' temporary folder until :meth:`close` or until it is garbage collected.
    """

    def __init__(
        self,
        tables: Mapping[str, pd.DataFrame],
        *,
        title: str = DEFAULT_TITLE,
        min_coverage: float = MIN_COVERAGE,
        min_orders: int = MIN_ORDERS,
    ):
        self._setup(tables, None, title, min_coverage, min_orders)

    @classmethod
    def from_parts(
        cls,
        parts: OrderParts,
        tables: Mapping[str, pd.DataFrame],
        *,
        title: str = DEFAULT_TITLE,
        min_coverage: float = MIN_COVERAGE,
        min_orders: int = MIN_ORDERS,
    ) -> ExecutionReport:
        """A report whose per-order table stays in ``parts`` on disk.

        Parameters
        ----------
        parts : OrderParts
            The orders and their per-order metrics; the report takes them over and
            removes their temporary folder (``parts.folder``) on :meth:`close` or when it
            is garbage collected.
        tables : mapping of str to DataFrame
            Every other table (``tables_from_parts(parts)``, and ``worst_order_quotes``).
        title, min_coverage, min_orders
            As for :class:`ExecutionReport`.

        Returns
        -------
        ExecutionReport
        """
        report = cls.__new__(cls)
        report._setup(tables, parts, title, min_coverage, min_orders)
        return report

    def _setup(
        self,
        tables: Mapping[str, pd.DataFrame],
        parts: OrderParts | None,
        title: str,
        min_coverage: float,
        min_orders: int,
    ) -> None:
        needed = [n for n in _table_names() if parts is None or n != "per_order"]
        missing = [n for n in needed if n not in tables]
        if missing:
            raise InvalidRequest(f"report tables missing: {', '.join(missing)}")
        if not 0 <= min_coverage <= 1 or min_orders < 0:
            raise InvalidRequest(
                f"min_coverage must be a share in [0, 1] and min_orders >= 0, not "
                f"{min_coverage!r} and {min_orders!r}"
            )
        # data_checks of parts stays on disk, unread (CheckedTables.raw)
        raw = tables.raw() if isinstance(tables, CheckedTables) else dict(tables)
        if parts is None:
            raw = {n: t.frame() if isinstance(t, DataChecks) else t for n, t in raw.items()}
        given = {n: df for n, df in raw.items() if parts is None or n != "per_order"}
        # tables a set written before them lacks: drawn again from per_order, or empty
        if "daily_cost" not in given:
            po = tables["per_order"] if parts is None else read_columns(parts.per_order)
            given["daily_cost"] = daily_cost(po)
        given.setdefault("worst_order_quotes", empty(QUOTE_COLUMNS))
        named = {n: df if isinstance(df, DataChecks) else shown(df, n) for n, df in given.items()}
        self._parts = parts
        self.tables: MutableMapping[str, pd.DataFrame] = (
            {n: df for n, df in named.items() if isinstance(df, pd.DataFrame)}
            if parts is None
            else PartsTables(named, parts, _ADDED)
        )
        self._stats: OrderStats | None = None
        # the folder goes with the parts, not with the report: its tables (a mapping
        # reading per_order from the parts) outlive a report dropped at once
        # (``execution_report(path).tables``); removed at exit at the latest
        self._close = (
            weakref.finalize(parts, remove, parts.folder, parts.owner)
            if parts is not None and parts.folder is not None
            else None
        )
        if parts is not None:
            self._stats = stats_of_parts(parts.per_order)
        self.title = title
        self.rule = CoverageRule(min_coverage, min_orders)

    def close(self) -> None:
        """Remove the temporary folder of the parts the report was built from (nothing for
        a report in memory); idempotent. ``report["per_order"]`` cannot be read after."""
        if self._close is not None:
            self._close()
        if self._parts is not None:
            self._parts.close()

    def _on_disk(self) -> OrderParts | None:
        # the parts per_order is read from (None: in memory, or replaced by a frame)
        tables = self.tables
        return tables.parts if isinstance(tables, PartsTables) else None

    def _with_orders(self, columns: Sequence[str]) -> dict[str, pd.DataFrame]:
        """The tables, ``per_order`` holding at least ``columns`` (from parts: only them)."""
        parts = self._on_disk()
        if parts is None:
            return dict(self.tables)
        assert isinstance(self.tables, PartsTables)
        return {**self.tables.others(), "per_order": read_columns(parts.per_order, columns)}

    def _order_stats(self) -> OrderStats:
        if self._on_disk() is not None and self._stats is not None:
            return self._stats
        return stats_of_frame(self.tables["per_order"])

    def _worst_tables(self) -> dict[str, pd.DataFrame]:
        """The tables with ``per_order`` holding only the worst orders' rows."""
        ids = self.tables["worst_orders"]["orderId"].astype(str).tolist()
        parts = self._on_disk()
        if parts is None:
            po = self.tables["per_order"]
            return {**self.tables, "per_order": po[po["orderId"].isin(ids)]}
        assert isinstance(self.tables, PartsTables)
        return {**self.tables.others(), "per_order": worst_rows(parts, ids)}

    def __getitem__(self, name: str) -> pd.DataFrame:
        return self.tables[name]

    @property
    def summary(self) -> pd.DataFrame:
        return self.tables["summary"]

    @property
    def definitions(self) -> dict[str, str]:
        """Metric title -> its definition, as printed in the report."""
        return {d.title: d.text for d in DEFINITIONS.values()}

    @cached_property
    def figures(self) -> dict[str, Figure]:
        """Figure name -> matplotlib Figure (Agg canvas, never shown)."""
        parts = self._on_disk()
        if parts is None:
            return _figures.all_figures(self.tables)
        return _figures.all_figures(
            self._with_orders(()), read=lambda columns: read_columns(parts.per_order, columns)
        )

    @property
    def coverage(self) -> list[str]:
        """What the set of orders covers, to show wherever its figures go: the frames'
        coverage note and warnings (``frames.attrs["coverage"]``, kept as ``set coverage``
        rows of ``data_checks``), then a note per order type the set lacks."""
        tables = self.tables
        stored = tables.checks_on_disk() if isinstance(tables, PartsTables) else None
        # on disk: the set's rows come first, few of each check, all a note needs
        checks = stored.heads(MAX_HTML_ROWS) if stored is not None else tables["data_checks"]
        notes = checks.loc[checks["check"] == COVERAGE_CHECK, "detail"].astype(str).tolist()
        return notes + absent_type_notes(self._order_stats().types)

    def describe(self) -> str:
        """One line saying what the report covers, its coverage notes included."""
        notes = self.coverage
        return self._scope() + (f"; coverage: {'; '.join(notes)}" if notes else "")

    def _scope(self) -> str:
        s = self._order_stats()
        n, ex = s.orders, s.executed
        span = ""
        if s.first is not None and s.last is not None:
            span = f", created {s.first:%Y-%m-%d %H:%M} to {s.last:%Y-%m-%d %H:%M} UTC"
        used = "used" if s.market else "none"
        return f"{n:,} orders ({ex:,} executed){span}; market recording: {used}"

    def order_chart(self, order_id: str) -> Figure:
        """The small chart of one of the worst orders: each venue's quote
        (``evaluatedTickers``), the fill and the arrival mid.

        Parameters
        ----------
        order_id : str
            An order of ``report["worst_orders"]``.

        Returns
        -------
        Figure
        """
        if order_id not in set(self.tables["worst_orders"]["orderId"].astype(str)):
            raise InvalidRequest(f"order_chart: {order_id!r} is not one of the worst orders")
        with ink():
            return order_chart(self._worst_tables(), order_id)

    @cached_property
    def _figure_svgs(self) -> dict[str, str]:
        # drawn once: the notebook view and every to_html share them
        return {name: figure_svg(fig, name) for name, fig in self.figures.items()}

    @cached_property
    def _order_svgs(self) -> dict[str, str]:
        ids = self.tables["worst_orders"]["orderId"].astype(str).tolist()
        # the worst orders' rows once, not a scan of every order per chart
        few = self._worst_tables()
        out = {}
        with ink():
            for oid in ids:
                out[oid] = figure_svg(order_chart(few, oid), f"order {oid}")
        return out

    def to_html(self, path: str | os.PathLike[str] | None = None, *, figures: bool = True) -> str:
        """The whole report as one self-contained HTML page.

        Parameters
        ----------
        path : path, optional
            Where to write the page; it appears whole or not at all (a temporary file
            beside it, fsynced, renamed over it).
        figures : bool
            Embed the figures as inline SVG in the page's text colour (False: tables
            only, a lighter page).

        Returns
        -------
        str
            The page.
        """
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        body = _html.body_html(
            self._with_orders(PAGE_COLUMNS),
            self._figure_svgs if figures else None,
            self.title,
            f"{self._scope()}. Generated {stamp}.",
            coverage=self.coverage,
            rule=self.rule,
            order_charts=self._order_svgs if figures else None,
        )
        page = _html.document_html(body, self.title)
        if path is not None:
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            # whole or not at all: a reader never sees half a page; the temporary file
            # already has the permissions a plain open() gives (toolkit._atomic)
            atomic_write_text(target, page)
        return page

    def _repr_html_(self) -> str:
        # the summary open, every other section collapsed: a short notebook output
        body = _html.body_html(
            self._with_orders(PAGE_COLUMNS),
            self._figure_svgs,
            self.title,
            self._scope(),
            coverage=self.coverage,
            collapsed=True,
            rule=self.rule,
            order_charts=self._order_svgs,
        )
        return _html.fragment_html(body)

    def __repr__(self) -> str:
        return f"<ExecutionReport: {self.describe()}; tables: {', '.join(self.tables)}>"

    def to_parquet(self, directory: str | os.PathLike[str]) -> Path:
        """Write every table to ``directory/<name>.parquet``.

        Parameters
        ----------
        directory : path
            Created if needed. The tables are one set, written whole or not at all
            (``_manifest.json``, written last, lists the members and their sizes).

        Returns
        -------
        Path
            ``directory``.
        """
        out = Path(directory)
        with atomic_files(out) as files:
            parts = self._on_disk()
            for name in list(self.tables):
                stored = (
                    self.tables.checks_on_disk() if isinstance(self.tables, PartsTables) else None
                )
                if name == "per_order" and parts is not None:
                    # streamed from the parts: every order is never in memory at once
                    write_per_order(parts, files.path("per_order.parquet"))
                elif name == "data_checks" and stored is not None:
                    stored.write(files.path("data_checks.parquet"))
                else:
                    self.tables[name].to_parquet(files.path(f"{name}.parquet"), index=False)
        return out

    def save_figures(self, directory: str | os.PathLike[str], *, dpi: int = 100) -> Path:
        """Write every figure to ``directory/<name>.png``.

        Parameters
        ----------
        directory : path
            Created if needed; the PNGs are one set, written whole or not at all.
        dpi : int
            Resolution of the PNGs.

        Returns
        -------
        Path
            ``directory``.
        """
        out = Path(directory)
        with atomic_files(out) as files:
            for name, fig in self.figures.items():
                fig.savefig(files.path(f"{name}.png"), format="png", dpi=dpi)
        return out

    @classmethod
    def read_parquet(
        cls,
        directory: str | os.PathLike[str],
        *,
        title: str = DEFAULT_TITLE,
        require_manifest: bool = True,
        min_coverage: float = MIN_COVERAGE,
        min_orders: int = MIN_ORDERS,
    ) -> ExecutionReport:
        """A report from the tables ``to_parquet`` wrote (figures are drawn again).

        Only the tables its ``_manifest.json`` lists are read, and only when it says the
        set is complete: a folder where a later set was interrupted is refused rather than
        read as a mix of two reports, and other Parquet files beside them are not tables.

        Parameters
        ----------
        directory : path
            A folder ``to_parquet`` wrote.
        title : str
            The page's title.
        require_manifest : bool
            False reads every ``*.parquet`` of a folder without a manifest as a table
            (nothing then tells a complete set from an interrupted one). A manifest
            present is always checked.
        min_coverage, min_orders : float, int
            The page's coverage rule (see :class:`ExecutionReport`).

        Returns
        -------
        ExecutionReport

        Raises
        ------
        InvalidRequest
            No such folder, no manifest, one that does not match the files, or a table
            missing.
        """
        d = Path(directory)
        if not d.is_dir():
            raise InvalidRequest(
                f"no report tables at {d} (a folder ExecutionReport.to_parquet wrote)"
            )
        problem = set_problem(
            d,
            [],
            what="set of ExecutionReport.to_parquet tables",
            again="write the tables again (report.to_parquet)",
            require_manifest=require_manifest,
        )
        if problem:
            raise InvalidRequest(problem)
        listed = read_manifest(d)
        names = list(listed) if listed is not None else [p.name for p in d.glob("*.parquet")]
        tables = {
            Path(n).stem: pd.read_parquet(d / n) for n in sorted(names) if n.endswith(".parquet")
        }
        return cls(tables, title=title, min_coverage=min_coverage, min_orders=min_orders)


#: the tables a report adds to those of all_tables, listed after per_order
_ADDED = ("worst_order_quotes", "daily_cost")


def _table_names() -> list[str]:
    names = {t for s in SECTIONS for t in s.tables} - OPTIONAL_TABLES
    return sorted(names | {"per_order"})


def execution_report(
    frames: _metrics.FramesLike | str | os.PathLike[str] | Any,
    market: MarketLike | str | os.PathLike[str] | None = None,
    *,
    max_quote_age: float | None = 60.0,
    title: str = DEFAULT_TITLE,
    compare: tuple[Period, Period] | None = None,
    min_coverage: float = MIN_COVERAGE,
    min_orders: int = MIN_ORDERS,
) -> ExecutionReport:
    """The execution-quality report of ``frames``.

    Parameters
    ----------
    frames : OrderFrames, OrderStore, path or OrderParts
        The orders (``orders``, ``trades``, ``evaluated_tickers``; the quotes are read
        through ``frames.quote_fields``, the profile's mapping); an ``OrderStore`` (its
        typed tables); the folder of an export (``OrderFrames.to_parquet``, or loose
        ``orders.parquet``, ``trades.parquet``, ``evaluated_tickers.parquet``); or the
        orders' per-order parts on disk (``OrderParts``, the market already joined).
        A store or a folder is read out of core: its files where they lie, in chunks of
        consecutive orders (``order_parts``), the per-order table kept on disk and
        owned by the report (see :meth:`ExecutionReport.from_parts`); frames in memory
        are computed in memory.
    market : DataFrame or path, optional
        The root of a recording, read where it lies by the report's engine (DuckDB, under
        the memory limit ``$TOOLKIT_REPORT_MEMORY``, default 2GB, spilling to disk beyond
        it): its ``watchticker`` files, and its ``watchtickers`` rows (one per pair) and
        ``_session`` rows; or such rows as a DataFrame (columns
        ``symbol, bid, ask, last`` and ``timestamp``/``updated_at``/``received_at``;
        ``channel``, ``kind``, ``gap_start``, ``gap_end`` for session rows). Enables
        arrival slippage, markouts and the limit-order distances.
    max_quote_age : float or None
        Seconds; an older ticker is not a price at that moment (None: no limit).
    title : str
        The page's title.
    compare : pair of periods, optional
        ``((start_a, end_a), (start_b, end_b))`` of ``createdAt`` (half-open, None =
        open): the headline of each, side by side, in the ``comparison`` table.
    min_coverage : float
        On the page, a metric or chart resting on less than this share of the orders it
        applies to reads "insufficient coverage (n of N)" instead (default 0.20).
    min_orders : int
        Likewise for fewer than this many orders (default 30).

    Returns
    -------
    ExecutionReport

    Raises
    ------
    InvalidRequest
        ``frames`` neither frames, a store nor an export folder; ``market`` a path that is
        no recording, or one of its ticker files damaged or foreign (named); a memory
        limit DuckDB does not read; ``market`` given with order parts.
    """
    if isinstance(frames, OrderParts):
        if market is not None:
            raise InvalidRequest(
                "execution_report: the order parts already hold the market's metrics; "
                "give market= when the parts are built, not with them"
            )
        return _report_of_parts(frames, compare, title, min_coverage, min_orders)
    parts = _order_parts_for(frames, market, max_quote_age=max_quote_age)
    if parts is None:
        orders = frames_source(frames)
        source = None if market is None else market_source(market)
        tables = _metrics.all_tables(orders, source, max_quote_age=max_quote_age, compare=compare)
        tables["worst_order_quotes"] = worst_order_quotes(orders, tables["worst_orders"])
        return ExecutionReport(
            tables, title=title, min_coverage=min_coverage, min_orders=min_orders
        )
    try:
        return _report_of_parts(parts, compare, title, min_coverage, min_orders)
    except BaseException:
        parts.close()
        raise


def _report_of_parts(
    parts: OrderParts,
    compare: tuple[Period, Period] | None,
    title: str,
    min_coverage: float,
    min_orders: int,
) -> ExecutionReport:
    tables = tables_from_parts(parts, compare=compare)
    tables["worst_order_quotes"] = quotes_from_parts(parts, tables["worst_orders"])
    return ExecutionReport.from_parts(
        parts, tables, title=title, min_coverage=min_coverage, min_orders=min_orders
    )


def _order_parts_for(frames: Any, market: Any, *, max_quote_age: float | None) -> OrderParts | None:
    """The orders' per-order parts on disk for the report: an export folder or an order
    store is built out of core, in chunks (``order_parts``); frames already in memory are
    not (None: ``all_tables`` computes the tables in memory, nothing written)."""
    if hasattr(frames, "orders"):
        return None
    from toolkit.report._parts import order_parts

    return order_parts(frames, market, max_quote_age=max_quote_age)
