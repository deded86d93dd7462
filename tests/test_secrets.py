"""Secrets never leak: the API secret and operational tokens are absent from every log
record (DEBUG, httpx included), every repr and every exception's text."""

from __future__ import annotations

import logging

import pytest

from toolkit.client._client import Client
from toolkit.errors import (
    AuthenticationError,
    OrderNotFound,
    RouteNotActive,
    ToolkitError,
    TransportError,
)
from toolkit.sim import Simulator

SECRET = "demo-secret"


async def no_sleep(delay: float) -> None:
    return None


def test_secrets_absent_from_logs_reprs_and_errors(
    fresh_sim: Simulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    errors: list[ToolkitError] = []
    tokens: list[str] = []
    state = fresh_sim.state
    assert state is not None
    order_id = fresh_sim.control.order_ids()[0]
    client = fresh_sim.client(sleep=no_sleep)
    with client:
        tokens.append(client.token())
        client.fetch_order(order_id)
        state.tokens.revoke_all()  # forces a 401 and a renewal
        client.fetch_order(order_id)
        tokens.append(client.token())
        created = client.create_limit_order("BTC/BRL", "buy", "1000", amount="0.001")
        client.cancel_limit_order(created["id"])
        client.cancel_limit_order(created["id"])  # 409 path
        with pytest.raises(OrderNotFound) as nf:
            client.fetch_order("l-999999-none")
        errors.append(nf.value)
        fresh_sim.control.set_knobs(limit_routes_active=False)
        with pytest.raises(RouteNotActive) as rna:
            client.list_limit_orders()
        errors.append(rna.value)
        texts = [repr(client), repr(client.settings), repr(client.auth)]
    bad = Client(
        fresh_sim.base_url, api_key="demo", api_secret="not-" + SECRET, profile=fresh_sim.profile
    )
    with bad, pytest.raises(AuthenticationError) as auth_error:
        bad.token()
    errors.append(auth_error.value)
    dead = Client(
        "http://127.0.0.1:9",
        api_key="demo",
        api_secret=SECRET,
        max_retries=0,
        profile=fresh_sim.profile,
    )
    with dead, pytest.raises(TransportError) as transport_error:
        dead.token()
    errors.append(transport_error.value)
    texts.append(repr(dead))

    assert len(set(tokens)) == 2 and all(tokens)
    for error in errors:
        texts += [str(error), repr(error), error.body or "", error.url or ""]
        cause = error.__cause__
        while cause is not None:
            texts.append(str(cause))
            cause = cause.__cause__
    for record in caplog.records:
        texts.append(record.getMessage())
    assert any("fetchOrder" in t for t in texts)  # the log really captured requests
    secrets = [SECRET, *tokens]
    for text in texts:
        for secret in secrets:
            assert secret not in text, f"secret leaked in: {text[:200]}"
