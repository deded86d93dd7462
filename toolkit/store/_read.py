"""``OrderStore.frames``'s read: per part file, the orders of the window chosen on the part's
own narrow columns (id, type, symbol, createdAt, updatedAt; never the bodies), then their
rows taken from the typed tables (``_tables``); a part without tables matching it has its
bodies of the window parsed, one part at a time."""

from __future__ import annotations

import warnings
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from toolkit.errors import InvalidRequest
from toolkit.store._files import StoreFiles, schema
from toolkit.store._tables import KEY, TABLE_NAMES, Tables, _bodies, derive, part_token

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from toolkit.frames import OrderFrames
    from toolkit.profile import ServiceProfile

#: the columns of a part file a window is chosen on
_NARROW = ["id", "type", "symbol", "createdAt", "updatedAt", "_source"]


def read_frames(
    files: StoreFiles,
    profile: ServiceProfile,
    *,
    months: Collection[str] | None,
    filter: Any,
    columns: Collection[str] | None,
    exact: bool,
) -> OrderFrames:
    """The frames of the orders of ``months`` that ``filter`` (an expression on the part
    files' columns) keeps, with ``_source`` after ``id``; ``columns`` keeps those columns
    (and the keys) of each frame. See :meth:`OrderStore.frames`."""
    from toolkit.frames._frames import frames_from_tables

    source, joined = _collect(
        files, profile, months=months, filter=filter, columns=columns, exact=exact
    )
    # the orders come in the part files' order: their _source is that column as it is
    in_order = joined["orders"].column("id").equals(source.column("id"))
    kind = (
        {}
        if in_order
        else dict(zip(source["id"].to_pylist(), source["_source"].to_pylist(), strict=True))
    )
    # only ``joined`` holds the tables now: their memory goes back as they become frames
    frames = frames_from_tables(joined, profile=profile)
    orders = frames.orders
    at = list(orders.columns).index("id") + 1
    if not len(orders):
        orders.insert(at, "_source", [])
    elif in_order:
        orders.insert(at, "_source", source["_source"].to_pandas().set_axis(orders.index))
    else:  # pragma: no cover - the frames never reorder the orders; by id then
        orders.insert(at, "_source", orders["id"].map(kind))
    return frames


def _collect(
    files: StoreFiles,
    profile: ServiceProfile,
    *,
    months: Collection[str] | None,
    filter: Any,
    columns: Collection[str] | None,
    exact: bool,
) -> tuple[pa.Table, dict[str, pa.Table]]:
    """The ``id`` and ``_source`` of the orders chosen, and the five tables of their rows
    (joined over the part files), warning what their derivation said."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from toolkit.frames._frames import build_tables

    tables = Tables(files, profile)
    got: dict[str, list[pa.Table]] = {name: [] for name in TABLE_NAMES}
    sources: list[pa.Table] = []
    said: list[str] = []
    found_columns: set[str] = set()
    fmt = ds.ParquetFileFormat()
    with files.snapshot(months) as snap:
        parts: list[tuple[pa.Table, dict[str, pa.Table], list[str]]] = []
        if not snap.merging:
            for path, handle in snap.parts:
                files.part_metadata(path, handle)
                fragment = fmt.make_fragment(handle)
                chosen = fragment.to_table(schema=schema(), columns=_NARROW, filter=filter)
                if not chosen.num_rows:
                    continue
                ids = None if filter is None else chosen.column("id").combine_chunks()
                typed = None if exact else tables.read(path, part_token(handle), columns, ids)
                if typed is None:
                    rows = files.read_part(path, ["id", "body"], handle)
                    if ids is not None:
                        rows = rows.filter(pc.is_in(rows.column("id"), value_set=ids))
                    parts.append((chosen, *derive(_bodies(rows), profile, exact=exact)))
                    continue
                parts.append((chosen, *typed))
    chosen_ids = pa.chunked_array([c.column("id") for c, _, _ in parts], pa.string())
    if snap.merging or pc.count_distinct(chosen_ids).as_py() != len(chosen_ids):
        # an order in two files (a compaction under way, or one an older toolkit left
        # unfinished): the bodies, each order once (StoreFiles.read)
        rows = files.read(["id", "_source", "body"], months=months, filter=filter)
        parts = [(rows.select(["id", "_source"]), *derive(_bodies(rows), profile, exact=exact))]
    for chosen, part_tables, part_said in parts:
        sources.append(chosen.select(["id", "_source"]))
        said.extend(part_said)
        for name in TABLE_NAMES:
            got[name].append(part_tables[name])
            found_columns.update(part_tables[name].column_names)
    empty = build_tables([], profile=profile, exact=exact)
    try:
        joined = {
            name: pa.concat_tables([empty[name], *got[name]], promote_options="default")
            if got[name]
            else empty[name]
            for name in TABLE_NAMES
        }
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        # a field of other types in different parts: the bodies parsed at once make it text
        rows = files.read(["id", "_source", "body"], months=months, filter=filter)
        sources = [rows.select(["id", "_source"])]
        joined, said = derive(_bodies(rows), profile, exact=exact)
    for message in dict.fromkeys(said):
        warnings.warn(message, RuntimeWarning, stacklevel=4)
    if columns is not None:
        known = found_columns | {c for t in empty.values() for c in t.column_names}
        unknown = sorted(set(columns) - known - {"_source"})
        if unknown:
            raise InvalidRequest(
                f"columns= {', '.join(map(repr, unknown))}: no frame has such a column "
                "(docs: the column dictionary)"
            )
        joined = {
            name: t.select([c for c in t.column_names if c == KEY[name] or c in columns])
            for name, t in joined.items()
        }
    source = (
        pa.concat_tables(sources).combine_chunks()
        if sources
        else pa.table({"id": pa.array([], pa.string()), "_source": pa.array([], pa.string())})
    )
    return source, joined
