"""One path grammar for payload and error settings reaches into lists (issue #26: error
bodies such as ``{"errors": [{"detail": ...}]}`` or ``{"detail": [{"msg": ...}]}`` could not
be described): ``errors[0].detail`` or ``errors.0.detail``; a mapping's own key wins."""

from __future__ import annotations

import pytest

from toolkit.profile import get_path, has_path, set_path


@pytest.mark.parametrize(
    ("payload", "path", "expected"),
    [
        ({"errors": [{"detail": "bad id"}]}, "errors[0].detail", "bad id"),
        ({"errors": [{"detail": "bad id"}]}, "errors.0.detail", "bad id"),
        ({"detail": [{"msg": "m1"}, {"msg": "m2"}]}, "detail[1].msg", "m2"),
        ({"grid": [[1, 2], [3, 4]]}, "grid[1][0]", 3),
        ({"a": {"0": "key"}}, "a.0", "key"),  # a key named "0" stays a key
        ({"a.b": 1}, "a.b", None),  # dots always separate steps
        ({"a": {"b": None}}, "a.b", None),
    ],
)
def test_get_path_reaches_into_lists(payload: object, path: str, expected: object) -> None:
    assert get_path(payload, path) == expected


@pytest.mark.parametrize(
    "path", ["errors[5].detail", "errors[x].detail", "errors[-1].detail", "errors.9", "nope[0]"]
)
def test_a_missing_or_bad_index_is_the_default(path: str) -> None:
    payload = {"errors": [{"detail": "d"}]}
    assert get_path(payload, path, "DEFAULT") == "DEFAULT"
    assert not has_path(payload, path)


def test_set_path_writes_the_shape_get_path_reads() -> None:
    body: dict[str, object] = {}
    set_path(body, "errors[0].detail", "no such order")
    assert body == {"errors": [{"detail": "no such order"}]}
    assert get_path(body, "errors[0].detail") == "no such order"
    flat: dict[str, object] = {}
    set_path(flat, "message", "x")
    assert flat == {"message": "x"}
