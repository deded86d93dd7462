"""The core metrics on Spark: the portable query of ``_portable`` transpiled by SQLGlot, over
temporary views of the same files; a local session built when none is given, and a clear
error when pyspark, SQLGlot or a Java runtime is missing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolkit.errors import InvalidRequest
from toolkit.report._core import Files, plan
from toolkit.report._portable import PER_ORDER, VENUES, core_sql, to_spark, venues_sql

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

INSTALL = "pip install 'toolkit[spark]' and a Java runtime (17+, java on PATH or JAVA_HOME)"
#: Spark refuses Parquet nanosecond timestamps (old recordings): read them as integers
NANOS_AS_LONG = "spark.sql.legacy.parquet.nanosAsLong"


def _needs() -> None:
    try:
        import pyspark  # noqa: F401
        import sqlglot  # noqa: F401
    except ImportError as exc:
        raise InvalidRequest(f"engine='spark' needs {exc.name}: {INSTALL}") from None


def local_session() -> Any:
    """A local Spark session on every core, in UTC, without its web UI."""
    _needs()
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        raise InvalidRequest(f"engine='spark' needs a Java runtime: {INSTALL}")
    from pyspark.sql import SparkSession

    try:
        session = (
            SparkSession.builder.master(f"local[{os.cpu_count() or 1}]")
            .appName("toolkit-core-metrics")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", "4g")
            .config("spark.sql.shuffle.partitions", str(max(4, 2 * (os.cpu_count() or 1))))
            .config(NANOS_AS_LONG, "true")
            .getOrCreate()
        )
    except Exception as exc:  # the gateway's errors have no common base
        raise InvalidRequest(f"engine='spark' could not start Spark ({exc}): {INSTALL}") from None
    session.sparkContext.setLogLevel("ERROR")
    return session


def run_spark(files: Files, spark: Any, max_quote_age: float | None) -> dict[str, pd.DataFrame]:
    """The core metrics of ``files`` on ``spark`` (None: a local session, stopped after)."""
    _needs()
    own = spark is None
    session = local_session() if own else spark
    try:
        session.conf.set(NANOS_AS_LONG, "true")
        session.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")

        def define(view: str, paths: Sequence[str]) -> None:
            session.read.parquet(*paths).createOrReplaceTempView(view)

        sources = plan(files, define, ns_as_long=True)
        if sources.gaps:
            session.createDataFrame(files.gaps, "gs bigint, ge bigint").createOrReplaceTempView(
                "gaps"
            )
        # a window per pair would be one task per pair: the bucket join spreads
        per_order = session.sql(to_spark(core_sql(sources, max_quote_age, "buckets")))
        per_order.createOrReplaceTempView("per_order")
        per_order.cache()
        try:
            po = per_order.toPandas()
            venues = session.sql(to_spark(venues_sql("per_order"))).toPandas()
        finally:
            per_order.unpersist()
    finally:
        if own:
            session.stop()
    return {"per_order": po[list(PER_ORDER)], "venues": venues[list(VENUES)]}
