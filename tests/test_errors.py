"""Tests of toolkit.errors: the tree, redaction of URLs and scrubbing of secrets."""

from __future__ import annotations

import inspect

import pytest

from toolkit import errors as ex


def test_the_tree_matches_its_docstring() -> None:
    service: list[type[ex.ToolkitError]] = [
        ex.InvalidResponse, ex.BadRequest, ex.AuthenticationError, ex.PermissionDenied,
        ex.OrderNotFound, ex.RouteNotActive, ex.Conflict, ex.RateLimited,
        ex.ServiceUnavailable,
    ]  # fmt: skip
    for cls in service:
        assert issubclass(cls, ex.ServiceError)
    for base in (ex.TransportError, ex.ServiceError, ex.InvalidRequest, ex.PaginationLoop):
        assert issubclass(base, ex.ToolkitError)
    assert issubclass(ex.InvalidRequest, ValueError)
    doc = ex.__doc__ or ""
    classes = [
        obj
        for _, obj in inspect.getmembers(ex, inspect.isclass)
        if issubclass(obj, ex.ToolkitError)
    ]
    for cls in classes:
        assert cls.__name__ in doc


def test_error_carries_the_exchange_with_a_redacted_url() -> None:
    err = ex.ServiceUnavailable(
        "down",
        method="GET",
        url="ws://u:pw@host/?token=abc.def&limit=5",
        status=503,
        body="x" * 5000,
    )
    assert err.method == "GET" and err.status == 503
    assert err.url == "ws://host/?token=***&limit=5"
    assert err.body is not None and len(err.body) == 2000
    assert "abc.def" not in str(err) and "pw" not in str(err)
    assert str(err) == "down (GET ws://host/?token=***&limit=5 -> 503)"
    assert "abc.def" not in repr(err)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h/p?apiSecret=s&x=1", "http://h/p?apiSecret=***&x=1"),
        ("http://h/p?paginationToken=a%2Bb", "http://h/p?paginationToken=a%2Bb"),
        ("http://h/p", "http://h/p"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert ex.redact_url(url) == expected


def test_scrub_removes_known_secrets_and_bearer_values() -> None:
    text = 'echo {"apiSecret":"hunter22"} Authorization: Bearer eyJabc.def'
    cleaned = ex.scrub(text, ["hunter22", None, ""])
    assert "hunter22" not in cleaned and "eyJabc.def" not in cleaned
    assert "Bearer ***" in cleaned
