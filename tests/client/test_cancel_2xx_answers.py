"""2xx cancel answers that are no acceptance (answers the simulator never gives, from a
hand-made service on httpx.MockTransport): a proxy's HTML page, another order's answer,
an empty or status-less body confirmed with fetchOrder; a batch whose items are other
orders'. None of them may read "accepted" or "deferred, do not resend" for an order that
can still execute."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest

from toolkit.client._cancel import (
    CancelOutcome,
    CancelResult,
    after_batch,
    confirmed,
)
from toolkit.client._client import Client
from toolkit.errors import InvalidResponse
from toolkit.widgets._order_format import (
    _LABELS,
    FAILED_TONE,
    MEANINGS,
    outcome_html,
    outcome_label,
)

PORTAL = "<html><body>Access denied by firewall policy (ref 1234)</body></html>"
NOT_REACHED = (
    "the cancel may not have reached the service; read the order (fetchOrder) before resending"
)
STAMP = 1767225600000


async def no_sleep(delay: float) -> None:
    return None


class Service:
    """The cancel answer (``cancel``), the batch answers (one per request) and the
    orders as fetchOrder reads them (id -> body, or an HTTP status); every request is
    recorded as ``METHOD path``."""

    def __init__(self, cancel: httpx.Response | None = None) -> None:
        self.cancel = cancel or httpx.Response(500)
        self.batch: list[httpx.Response] = []
        self.orders: dict[str, dict[str, Any] | int] = {}
        self.sent: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.sent.append(f"{request.method} {path}")
        if path == "/orders/fetchOrder":
            order = self.orders.get(request.url.params["orderId"], 404)
            if isinstance(order, int):
                return httpx.Response(order, json={"message": "no"})
            return httpx.Response(200, json=order)
        if request.method == "PATCH":
            return self.cancel
        if path == "/orders/limit/orders/cancel":
            json.loads(request.content)
            return self.batch.pop(0)
        return httpx.Response(500)

    def client(self, **settings: Any) -> Client:
        return Client(
            "http://127.0.0.1:9",  # never dialled: the mock transport answers
            profile_id="P1",
            transport=httpx.MockTransport(self),
            sleep=no_sleep,
            **settings,
        )

    @property
    def fetches(self) -> int:
        return self.sent.count("GET /orders/fetchOrder")


def order(order_id: str, status: str, **more: Any) -> dict[str, Any]:
    return {"id": order_id, "type": "limit", "status": status, **more}


# --- single cancel ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(200, text=PORTAL, headers={"content-type": "text/html"}),
        httpx.Response(202, text="accepted"),
        httpx.Response(202, json=["o1", "o2"]),
    ],
    ids=["html-page", "text", "array-of-ids"],
)
def test_a_batch_2xx_of_an_unknown_shape_is_decided_by_fetch_order(
    answer: httpx.Response, caplog: pytest.LogCaptureFixture
) -> None:
    """The batch answer's shape is not shown (spec 4.4): whatever it is, each order is
    read; an order still OPEN was not cancelled (a firewall's page answered), so resend."""
    service = Service()
    service.batch = [answer]
    service.orders = {"o1": order("o1", "OPEN"), "o2": order("o2", "CANCELLING")}
    with caplog.at_level(logging.INFO, "toolkit.rest"), service.client() as client:
        results = client.cancel_limit_orders(["o1", "o2"])
    assert results[0].outcome is CancelOutcome.NOT_APPLIED and results[0].should_resend
    assert not results[1].should_resend
    assert service.fetches == 2
    if answer.headers.get("content-type", "").startswith("text/"):
        assert any("may not come from the service" in r.getMessage() for r in caplog.records)


def test_a_later_batch_request_answered_by_a_portal_is_decided_by_fetch_order() -> None:
    service = Service()
    service.batch = [
        httpx.Response(202, json={"orders": [{"id": "o1", "accepted": True}]}),
        httpx.Response(200, text=PORTAL, headers={"content-type": "text/html"}),
    ]
    service.orders = {"o2": order("o2", "OPEN")}
    profile = service.client().profile.replace({"rest.batch_cancel_max": 1})
    with service.client(profile=profile) as client:
        results = client.cancel_limit_orders(["o1", "o2"])
    assert [(r.order_id, r.outcome) for r in results] == [
        ("o1", CancelOutcome.ACCEPTED),
        ("o2", CancelOutcome.NOT_APPLIED),
    ]


def test_batch_items_of_other_orders_are_ignored_and_open_orders_not_applied(
    caplog: pytest.LogCaptureFixture,
) -> None:
    service = Service()
    items = [{"id": "zz1", "accepted": True}, {"id": "zz2", "accepted": True}]
    service.batch = [httpx.Response(202, json={"orders": items})]
    service.orders = {"o1": order("o1", "OPEN"), "o2": order("o2", "OPEN")}
    with caplog.at_level(logging.WARNING, "toolkit.rest"), service.client() as client:
        results = client.cancel_limit_orders(["o1", "o2"])
    assert [(r.order_id, r.outcome) for r in results] == [
        ("o1", CancelOutcome.NOT_APPLIED),
        ("o2", CancelOutcome.NOT_APPLIED),
    ]
    assert all(r.should_resend and r.status == "OPEN" for r in results)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'zz1'" in w and "'zz2'" in w and "not asked" in w for w in warnings), warnings


def test_an_order_missing_from_the_batch_items_is_confirmed_with_fetch_order() -> None:
    service = Service()
    items = [{"id": "o1", "accepted": True, "status": "CANCELLING", "cancelRequestedAt": STAMP}]
    service.batch = [httpx.Response(202, json={"orders": items})]
    service.orders = {"o2": order("o2", "OPEN"), "o3": order("o3", "TRIGGERED")}
    with service.client() as client:
        results = client.cancel_limit_orders(["o1", "o2", "o3"])
    assert [(r.order_id, r.outcome) for r in results] == [
        ("o1", CancelOutcome.ACCEPTED),
        ("o2", CancelOutcome.NOT_APPLIED),
        ("o3", CancelOutcome.DEFERRED),  # executing: the batch's refusal is recorded
    ]
    assert service.fetches == 2  # o2 and o3 only


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(202),
        httpx.Response(202, json={"orders": [{"id": "o1", "accepted": False, "status": "OPEN"}]}),
    ],
    ids=["empty", "refused-item"],
)
def test_an_open_order_after_a_batch_2xx_is_never_deferred(answer: httpx.Response) -> None:
    service = Service()
    service.batch = [answer]
    service.orders = {"o1": order("o1", "OPEN")}
    with service.client() as client:
        (result,) = client.cancel_limit_orders(["o1"])
    assert result.outcome is CancelOutcome.NOT_APPLIED and result.should_resend
    assert "do not resend" not in str(result)


# --- the rules, sans I/O --------------------------------------------------------------------


def test_after_batch_and_confirmed_map_each_state() -> None:
    after = {
        s: after_batch("o1", order("o1", s), 202).outcome
        for s in ("OPEN", "TRIGGERED", "CANCELLING", "CLOSED")
    }
    assert after == {
        "OPEN": CancelOutcome.NOT_APPLIED,
        "TRIGGERED": CancelOutcome.DEFERRED,
        "CANCELLING": CancelOutcome.ALREADY_CANCELLING,
        "CLOSED": CancelOutcome.ALREADY_FINAL,
    }
    states = ("OPEN", "TRIGGERED", "PROCESSING", "CANCELLING", "CANCELLED", "EXPIRED", "REJECTED")
    confirmed_outcomes = {s: confirmed("o1", {}, order("o1", s), 202).outcome for s in states}
    assert confirmed_outcomes == {
        "OPEN": CancelOutcome.NOT_APPLIED,
        "TRIGGERED": CancelOutcome.NOT_APPLIED,
        "PROCESSING": CancelOutcome.NOT_APPLIED,
        "CANCELLING": CancelOutcome.ACCEPTED,
        "CANCELLED": CancelOutcome.ACCEPTED,
        "EXPIRED": CancelOutcome.ALREADY_FINAL,
        "REJECTED": CancelOutcome.ALREADY_FINAL,
    }
    with pytest.raises(InvalidResponse, match="has no 'status'"):
        confirmed("o1", {}, {"id": "o1"}, 202)
    # only NOT_APPLIED asks for a resend
    for outcome in CancelOutcome:
        assert CancelResult("o1", outcome, None).should_resend is (
            outcome is CancelOutcome.NOT_APPLIED
        )


def test_every_outcome_has_a_row_text_and_not_applied_offers_cancel_again() -> None:
    for outcome in CancelOutcome:
        assert outcome.value in MEANINGS and outcome.value in _LABELS, outcome
        assert str(CancelResult("o1", outcome, "OPEN"))  # every outcome has a description
    text, tone = outcome_label("not_applied", "OPEN", "OPEN")
    assert text == "not applied (OPEN)" and tone == FAILED_TONE  # the view shows Cancel again
    assert "click Cancel to try again" in outcome_html("o1", "not_applied", text, tone)
