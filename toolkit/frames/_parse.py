"""Raw fetchOrder bodies -> one Arrow table of the wire schema: the bodies joined as JSON lines,
the pyarrow.json read, and the repair pass (type planning, rewrite) for input it refuses or
would round (an integer beyond int64)."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any

import pyarrow as pa
import pyarrow.json as pj

from toolkit.errors import InvalidRequest, InvalidResponse
from toolkit.frames._schema import ORDER, Field, ListOf, QuoteFields, Struct, order_spec
from toolkit.protocol import (
    JsonShapeError,
    canonical_order_id,
    kind_of,
    loads_bounded,
    order_id_problem,
)
from toolkit.protocol._json import bytes_may_nest_deeper

RawOrder = bytes | bytearray | memoryview | str | Mapping[str, Any]

# large blocks keep the parser's per-block overhead low; threads split the blocks
_BLOCK_SIZE = 4 << 20
_INT64 = (-(2**63), 2**63 - 1)
# an integer literal of 19 digits or more in a value's place may not fit int64, which
# pyarrow.json would read as a double, rounded: the repair pass keeps it as its digits
_LONG_INT = re.compile(rb"[:,\[]\s*-?[0-9]{19,}(?![0-9.eE])")

Path_ = tuple[str, ...]  # a field's place in the JSON; "[]" steps into list items


# --------------------------------------------------------------------------- schema


def _wire_type(spec: Field) -> pa.DataType:
    if isinstance(spec, Struct):
        return pa.struct([pa.field(name, _wire_type(sub)) for name, sub in spec.items()])
    if isinstance(spec, ListOf):
        return pa.list_(_wire_type(spec.item))
    return pa.int64() if spec == "ts" else pa.string()


def _schema_of(order: Struct) -> pa.Schema:
    return pa.schema([pa.field(name, _wire_type(spec)) for name, spec in order.items()])


#: what pyarrow.json is told about the known fields: decimals stay text until we cast them
WIRE_SCHEMA = _schema_of(ORDER)


@lru_cache(maxsize=32)
def wire_schema(fields: QuoteFields | None = None) -> pa.Schema:
    """``WIRE_SCHEMA`` with the evaluatedTickers element named by ``fields``."""
    if fields is None or fields == QuoteFields():
        return WIRE_SCHEMA
    return _schema_of(order_spec(fields))


def _with_type(dtype: pa.DataType, path: Path_, new: pa.DataType) -> pa.DataType:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if head == "[]" and pa.types.is_list(dtype):
        return pa.list_(_with_type(dtype.value_type, rest, new))
    if pa.types.is_struct(dtype):
        return pa.struct(
            [
                pa.field(f.name, _with_type(f.type, rest, new)) if f.name == head else f
                for f in dtype
            ]
        )
    return dtype


def _schema_with(overrides: Mapping[Path_, pa.DataType], schema: pa.Schema) -> pa.Schema:
    root = pa.struct(list(schema))
    for path, new in overrides.items():
        root = _with_type(root, path, new)
    return pa.schema(list(root))


# --------------------------------------------------------------------------- input


def _json_default(value: Any) -> Any:
    # decimals travel as strings on the wire; keep every digit
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"cannot serialise {type(value).__name__} to JSON")


_dumps = json.JSONEncoder(separators=(",", ":"), default=_json_default).encode


def _bodies(raw_orders: Sequence[RawOrder]) -> list[bytes]:
    if isinstance(raw_orders, str | bytes | bytearray | Mapping):
        raise InvalidRequest("build_frames takes a sequence of orders, not a single order")
    out: list[bytes] = []
    append = out.append
    for i, item in enumerate(raw_orders):
        if isinstance(item, bytes):
            append(item)
        elif isinstance(item, str):
            # a lone surrogate has no UTF-8: written as its JSON escape, which the repair
            # pass reads back and nulls with a warning, as the service's own escape
            append(item.encode("utf-8", "backslashreplace"))
        elif isinstance(item, bytearray | memoryview):
            append(bytes(item))
        elif isinstance(item, Mapping):
            try:
                append(_dumps(item).encode())
            except (TypeError, ValueError) as exc:  # a value JSON cannot hold, a cycle
                raise InvalidRequest(f"order #{i}: {exc}") from None
        else:
            raise InvalidRequest(
                f"order #{i}: expected bytes, str or a mapping, got {type(item).__name__}"
            )
    return out


def _check_shapes(bodies: list[bytes]) -> None:
    """Refuse, before pyarrow sees them, bodies that are not one JSON object (pyarrow's
    reader with an explicit schema crashes the process on a bare ``null``) or nest deeper
    than ``MAX_JSON_DEPTH``. Cheap for ordinary bodies: two byte tests and two counts."""
    for i, body in enumerate(bodies):
        # the usual body starts with "{" and ends with "}": no copy; else strip and look
        text = body if body[:1] == b"{" and body[-1:] == b"}" else body.strip()
        if not (text[:1] == b"{" and text[-1:] == b"}"):
            try:
                what = f"not a JSON object but {kind_of(loads_bounded(text))}"
            except JsonShapeError as exc:
                what = "empty" if not text else str(exc).replace("not JSON", "not valid JSON", 1)
            raise InvalidRequest(f"order #{i} is {what}")
        if bytes_may_nest_deeper(text):
            try:
                loads_bounded(text)
            except JsonShapeError as exc:
                raise InvalidRequest(f"order #{i}: {exc}") from None


def _join(bodies: list[bytes]) -> bytes:
    data = b"\n".join(bodies)
    if data.count(b"\n") != len(bodies) - 1:
        # a raw newline can only be whitespace between tokens (JSON escapes it in strings),
        # so a pretty-printed body becomes one line by blanking them
        data = b"\n".join(
            b.replace(b"\r", b" ").replace(b"\n", b" ") if b"\n" in b else b for b in bodies
        )
    return data


def _read(data: bytes, schema: pa.Schema) -> pa.Table:
    return pj.read_json(
        pa.BufferReader(data),
        read_options=pj.ReadOptions(block_size=_BLOCK_SIZE, use_threads=True),
        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer"),
    )


def _holds_double(dtype: pa.DataType) -> bool:
    if pa.types.is_floating(dtype):
        return True
    if pa.types.is_struct(dtype):
        return any(_holds_double(f.type) for f in dtype)
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return _holds_double(dtype.value_type)
    return False


class _RowCountMismatch(Exception):
    pass


def _parse(bodies: list[bytes], fields: QuoteFields | None = None) -> pa.Table:
    fields = fields or QuoteFields()
    schema = wire_schema(fields)
    if not bodies:
        return schema.empty_table()
    _check_shapes(bodies)
    data = _join(bodies)
    try:
        table = _read(data, schema)
        if table.num_rows != len(bodies):
            raise _RowCountMismatch
        # only an inferred field can be a double; then a long integer may have been rounded
        if not (any(_holds_double(f.type) for f in table.schema) and _LONG_INT.search(data)):
            return table
    except (pa.ArrowInvalid, _RowCountMismatch):
        pass
    data, overrides = _repair(bodies, _known(fields))
    try:
        table = _read(data, _schema_with(overrides, schema))
    except pa.ArrowInvalid as exc:
        raise InvalidRequest(f"could not normalise the orders: {exc}") from exc
    if table.num_rows != len(bodies):  # pragma: no cover - _repair emits one line per body
        raise ValueError(f"expected {len(bodies)} orders, parsed {table.num_rows}")
    return table


# --------------------------------------------------------------------------- repair pass
# Only runs when pyarrow refused the input (or read a long integer as a double). It finds,
# per JSON path, the kinds of value the orders hold, and rewrites the paths pyarrow cannot
# type: unknown fields whose kind changes, or holding an integer beyond int64, become
# strings, known text fields holding numbers/objects become their JSON text, known
# timestamps holding fractions become float64 (strings: text), and a known object or list
# holding something else is dropped to null with a warning; so is a text with a lone
# surrogate escape (no UTF-8 holds it: pyarrow refuses the whole input for it). The
# order's own id is the exception: an integer becomes its digits (as everywhere else:
# toolkit.protocol.canonical_order_id), any other non-text id raises InvalidResponse.


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int" if _INT64[0] <= value <= _INT64[1] else "bigint"
    if isinstance(value, float | Decimal):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    return "array"


def _observe(value: Any, path: Path_, kinds: dict[Path_, set[str]]) -> None:
    kind = _kind(value)
    seen = kinds.get(path)
    if seen is None:
        kinds[path] = seen = set()
    seen.add(kind)
    if kind == "object":
        for key, sub in value.items():
            _observe(sub, (*path, key), kinds)
    elif kind == "array":
        for sub in value:
            _observe(sub, (*path, "[]"), kinds)


def _known_fields(spec: Field, path: Path_, out: dict[Path_, Field]) -> None:
    out[path] = spec
    if isinstance(spec, Struct):
        for name, sub in spec.items():
            _known_fields(sub, (*path, name), out)
    elif isinstance(spec, ListOf):
        _known_fields(spec.item, (*path, "[]"), out)


@lru_cache(maxsize=32)
def _known(fields: QuoteFields) -> dict[Path_, Field]:
    known: dict[Path_, Field] = {}
    for name, spec in order_spec(fields).items():
        _known_fields(spec, (name,), known)
    return known


_KNOWN = _known(QuoteFields())

_FAMILY = {"bool": "bool", "int": "number", "float": "number", "string": "string"}


def _plan(
    kinds: dict[Path_, set[str]], known: Mapping[Path_, Field] = _KNOWN
) -> tuple[dict[Path_, str], dict[Path_, pa.DataType]]:
    """Action per path ("text" or "null") and the wire type each repaired path gets."""
    actions: dict[Path_, str] = {}
    overrides: dict[Path_, pa.DataType] = {}
    for path in sorted(kinds, key=len):
        if any(path[:n] in actions for n in range(1, len(path))):
            continue  # an ancestor is already rewritten as a whole
        seen = kinds[path] - {"null"}
        spec = known.get(path)
        if isinstance(spec, Struct | ListOf):
            expected = "object" if isinstance(spec, Struct) else "array"
            if seen - {expected}:
                actions[path] = "null"
        elif spec in ("str", "dec"):
            if seen - {"string"}:
                # the order's id: an integer as its digits, anything else refused
                actions[path] = "id" if path == ("id",) else "text"
        elif spec == "ts":
            if seen - {"int", "float"}:
                actions[path] = "text"
                overrides[path] = pa.string()
            elif "float" in seen:
                overrides[path] = pa.float64()
        else:
            families = {_FAMILY.get(kind, kind) for kind in seen}
            if len(families) > 1 or "bigint" in families:
                actions[path] = "text"
    return actions, overrides


def _as_text(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | Decimal):
        return str(value)  # the number exactly as written
    return json.dumps(value, separators=(",", ":"), default=float)


def _valid_text(text: str) -> bool:
    """Whether ``text`` is text UTF-8 can hold: not a lone surrogate (a ``"\\ud800"``
    escape, which the JSON grammar allows and ``json.loads`` decodes)."""
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


class _Rewriter:
    """Rewrites the values of one order after another per the plan's actions, counting what
    it had to null per path (and the first order it nulled in)."""

    def __init__(self, actions: dict[Path_, str], known: Mapping[Path_, Field]) -> None:
        self.actions = actions
        self.known = known
        self.order = ""
        #: path -> orders whose value was not of the known shape (object, list)
        self.nulled: dict[Path_, int] = {}
        #: path -> [texts that were no valid text (lone surrogates), an order holding one]
        self.invalid: dict[Path_, list[Any]] = {}

    def __call__(self, value: Any, path: Path_) -> Any:
        if isinstance(value, str) and not _valid_text(value):
            # as the recorder does (recording/_misses.py valid_text): a text that is not
            # the one sent is never passed off as it; it is null and counted
            seen = self.invalid.setdefault(path, [0, self.order])
            seen[0] += 1
            return None
        action = self.actions.get(path)
        if action == "text":
            return _as_text(value)
        if action == "id" and value is not None:
            oid = canonical_order_id(value)
            if oid is None:
                raise InvalidResponse(
                    f"{self.order}: its 'id' (spec 2.4) {order_id_problem(value)}; an order "
                    "id must be text or an integer"
                )
            return oid
        if action == "null":
            spec = self.known[path]
            ok = dict if isinstance(spec, Struct) else list
            if value is not None and not isinstance(value, ok):
                self.nulled[path] = self.nulled.get(path, 0) + 1
                return None
        if isinstance(value, dict):
            # a field name is no value: a lone surrogate in one is kept as its escape
            return {
                k if _valid_text(k) else _escaped(k): self(v, (*path, k)) for k, v in value.items()
            }
        if isinstance(value, list):
            item_path = (*path, "[]")
            return [self(v, item_path) for v in value]
        return value

    def warn(self) -> None:
        for path, count in self.nulled.items():
            shape = "object" if isinstance(self.known[path], Struct) else "list"
            warnings.warn(
                f"{count} order(s) had a non-{shape} value in {'.'.join(path)}; it was set to null",
                RuntimeWarning,
                stacklevel=5,
            )
        for path, (count, order) in self.invalid.items():
            warnings.warn(
                f"{count} value(s) of {'.'.join(path).replace('.[]', '[]')} are not valid "
                f"text (a lone UTF-16 surrogate escape such as \\ud800; {order}); they "
                "were set to null",
                RuntimeWarning,
                stacklevel=5,
            )


def _escaped(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode()


def _named(doc: Mapping[str, Any], i: int) -> str:
    oid = doc.get("id")
    if isinstance(oid, str) and oid and _valid_text(oid):
        return f"order {oid!r:.60}"
    return f"order #{i}"


def _repair(
    bodies: list[bytes], known: Mapping[Path_, Field] = _KNOWN
) -> tuple[bytes, dict[Path_, pa.DataType]]:
    docs: list[dict[str, Any]] = []
    for i, body in enumerate(bodies):
        try:
            doc = json.loads(body, parse_float=Decimal)
        except RecursionError:
            raise InvalidRequest(f"order #{i}: JSON nested too deep") from None
        except ValueError as exc:
            raise InvalidRequest(f"order #{i} is not valid JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise InvalidRequest(f"order #{i} is not a JSON object but {_kind(doc)}")
        docs.append(doc)
    kinds: dict[Path_, set[str]] = {}
    for doc in docs:
        for key, value in doc.items():
            _observe(value, (key,), kinds)
    actions, overrides = _plan(kinds, known)
    rewrite = _Rewriter(actions, known)
    encode = json.JSONEncoder(separators=(",", ":"), default=float).encode
    lines = []
    for i, doc in enumerate(docs):
        rewrite.order = _named(doc, i)
        lines.append(encode(rewrite(doc, ())).encode())
    rewrite.warn()
    return b"\n".join(lines), overrides
