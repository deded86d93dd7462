"""One form for an order id whatever its JSON type (spec 2.5 shows no field types): text as
sent, an integer as its exact decimal digits, anything that cannot be an exact integer
refused (never its text: a float beyond 2**53 may be another order's id)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from toolkit.errors import InvalidResponse
from toolkit.protocol import canonical_order_id, require_order_id

BIG = 2**60 + 1  # beyond 2**53: a double cannot hold it


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("123", "123"),
        (123, "123"),
        (BIG, str(BIG)),
        (2**70 + 3, str(2**70 + 3)),  # beyond int64 too
        (-5, "-5"),
        ("l-000001-ab12", "l-000001-ab12"),
        (123.0, "123"),
        (Decimal("123.0"), "123"),
        (float(2**53 - 1), str(2**53 - 1)),
    ],
)
def test_an_id_has_one_form(value: Any, text: str) -> None:
    assert canonical_order_id(value) == text


@pytest.mark.parametrize(
    "value",
    [
        1.5,
        1e20,
        float(2**60),
        float(2**53),  # 2**53 + 1 reads as it
        Decimal("1E+20"),
        Decimal("1.5"),
        True,
        False,
        None,
        "",
        {},
        [],
        float("nan"),
        float("inf"),
    ],
    ids=repr,
)
def test_what_cannot_be_an_exact_id_is_no_id(value: Any) -> None:
    assert canonical_order_id(value) is None
    with pytest.raises(InvalidResponse, match=r"listing\.id_field") as info:
        require_order_id(value, "listing item's 'id' (listing.id_field)")
    assert "text or an integer" in str(info.value)


def test_neighbours_beyond_2_53_stay_apart() -> None:
    # read as doubles, these 51 ids would be one key (50 orders lost, 1 phantom)
    ids = [BIG + k for k in range(51)]
    assert len({float(i) for i in ids}) < 51
    assert len({canonical_order_id(i) for i in ids}) == 51
