"""Sans-I/O rules of the service shared by every side: statuses and their case, input
validation, bounded JSON, timestamps. Imports only ``toolkit.errors``; no I/O, no heavy
libraries."""

from __future__ import annotations

from toolkit.protocol._ids import canonical_order_id, order_id_problem, require_order_id
from toolkit.protocol._json import (
    MAX_JSON_DEPTH,
    JsonShapeError,
    kind_of,
    loads_bounded,
    parse_object,
)
from toolkit.protocol._statuses import (
    ACTIVE,
    ALL_LIMIT_STATUSES,
    FINALIZED,
    LIVE_LIMIT_STATUSES,
    TERMINAL,
    VALID_STATUS_VALUES,
    LimitStatus,
    MarketStatus,
    StatusShortcut,
    canonical_status,
    is_terminal,
)
from toolkit.protocol._time import iso_to_epoch_ms, to_epoch_ms
from toolkit.protocol._validation import (
    MAX_ORDER_ID_LENGTH,
    order_id_path_segment,
    validate_decimal,
    validate_limit,
    validate_order_id,
    validate_order_ids,
    validate_profile_id,
    validate_side,
    validate_status_filter,
    validate_symbol,
)

__all__ = [
    "ACTIVE",
    "ALL_LIMIT_STATUSES",
    "FINALIZED",
    "LIVE_LIMIT_STATUSES",
    "MAX_JSON_DEPTH",
    "MAX_ORDER_ID_LENGTH",
    "TERMINAL",
    "VALID_STATUS_VALUES",
    "JsonShapeError",
    "LimitStatus",
    "MarketStatus",
    "StatusShortcut",
    "canonical_order_id",
    "canonical_status",
    "is_terminal",
    "iso_to_epoch_ms",
    "kind_of",
    "loads_bounded",
    "order_id_path_segment",
    "order_id_problem",
    "parse_object",
    "require_order_id",
    "to_epoch_ms",
    "validate_decimal",
    "validate_limit",
    "validate_order_id",
    "validate_order_ids",
    "validate_profile_id",
    "validate_side",
    "validate_status_filter",
    "validate_symbol",
]
