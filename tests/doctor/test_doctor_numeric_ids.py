"""The doctor fetches listed orders by their id's one form: an integer id as its decimal
text (exact beyond 2**53), a value no id can be (1.5, 1e20, true) not tried at all
(``str()`` of it would name no order)."""

from __future__ import annotations

from toolkit.doctor._rest import _diverse_ids


def test_listed_ids_are_tried_in_their_one_form() -> None:
    items = [
        {"id": 2**60 + 1, "status": "CLOSED"},
        {"id": "77", "status": "OPEN"},
        {"id": 1.5, "status": "OPEN"},
        {"id": 1e20, "status": "EXPIRED"},
        {"id": True, "status": "CANCELLED"},
        {"id": 78, "status": "OPEN"},
    ]
    assert _diverse_ids(items, "id", "status") == [str(2**60 + 1), "77", "78"]
