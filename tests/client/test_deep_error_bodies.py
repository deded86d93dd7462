"""A body nested far deeper than 64 levels (a WAF page or gateway error such as
``{"message": [[[[...``) in an error answer or in the sign-in answer ends as the usual
ToolkitError, never a RecursionError (docs/src/guide/errors.md: bounded JSON)."""

from __future__ import annotations

import httpx
import pytest

from toolkit.client._auth import TokenAuth
from toolkit.client._client import Client
from toolkit.client._transport import Route
from toolkit.errors import (
    BadRequest,
    Conflict,
    InvalidResponse,
    OrderNotFound,
    PermissionDenied,
    ServiceError,
    ServiceUnavailable,
    ToolkitError,
)
from toolkit.profile import DEFAULT_PROFILE

BASE = "http://127.0.0.1:9"  # never dialled: the mock transport answers
SIGNIN = DEFAULT_PROFILE.signin.path
DEEP = b'{"message": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"


def _signin_ok() -> httpx.Response:
    return httpx.Response(200, json={"token": "t-1", "expiresAt": None})


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, BadRequest),
        (403, PermissionDenied),
        (404, OrderNotFound),
        (409, Conflict),
        (418, ServiceError),
        (503, ServiceUnavailable),
    ],
)
def test_a_deeply_nested_error_body_gives_the_status_error(
    status: int, error: type[ToolkitError]
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == SIGNIN:
            return _signin_ok()
        return httpx.Response(status, content=DEEP)

    transport = httpx.MockTransport(handler)
    client = Client(BASE, api_key="k", api_secret="s", transport=transport, max_retries=0)
    with client, pytest.raises(ToolkitError) as info:
        client.fetch_order("o-1")
    assert type(info.value) is error
    assert info.value.status == status and info.value.order_id == "o-1"


def test_a_deeply_nested_error_body_reads_as_no_message() -> None:
    with Client(BASE, transport=httpx.MockTransport(lambda r: httpx.Response(200))) as client:
        request = httpx.Request("GET", f"{BASE}/orders/fetchOrder?orderId=o-1")
        exc = client._rest.error(httpx.Response(403, content=DEEP, request=request), Route.OTHER)
    # read as no message under the error field; the start of the body is quoted, bounded
    # (every 4xx carries the service's words whatever the body's shape)
    assert str(exc).startswith('other: permission denied: {"message": [[[')
    assert len(str(exc)) < 400


def test_a_deeply_nested_signin_answer_is_invalid_response() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == SIGNIN:
            return httpx.Response(200, content=DEEP)
        return httpx.Response(200, json={"id": "o-1"})

    transport = httpx.MockTransport(handler)
    with Client(BASE, api_key="k", api_secret="s", transport=transport) as client:
        with pytest.raises(InvalidResponse, match="nested deeper than 64 levels") as info:
            client.fetch_order("o-1")
        with pytest.raises(InvalidResponse, match="nested deeper than 64 levels"):
            client.token()
    assert info.value.method == "POST" and info.value.url is not None
    assert SIGNIN in info.value.url and "signin.token_field" in str(info.value)


def test_accept_signin_refuses_a_deep_body_sans_io() -> None:
    auth = TokenAuth("k", "s", BASE)
    response = httpx.Response(200, content=DEEP, request=auth.signin_request())
    with pytest.raises(InvalidResponse, match="nested deeper than 64 levels"):
        auth.accept_signin(response)
    not_json = httpx.Response(200, content=b"<html>", request=auth.signin_request())
    with pytest.raises(InvalidResponse, match="sign-in answer is not JSON"):
        auth.accept_signin(not_json)
