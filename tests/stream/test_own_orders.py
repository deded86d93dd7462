"""The order book's watch over its own client's creates (sans-I/O: the timers are called
by the test). The create's answer shows at once; a profile that says every limit state is
notified, and an order of this client that is not, teaches ``outcome_only`` once; a lost
connection or a notification that came first teaches nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolkit.profile._learned import Learned
from toolkit.stream._event_types import OrderEvent, SessionEvent
from toolkit.stream._own_orders import SETTING, OwnOrderWatch


class FakeClient:
    def __init__(self) -> None:
        self.learned = Learned()


def order(oid: str, status: str = "OPEN") -> dict[str, Any]:
    return {"id": oid, "status": status, "updatedAt": 1_795_000_000_000}


def notification(oid: str) -> OrderEvent:
    return OrderEvent("watchorders", 1, "c1", 1, None, oid, "OPEN", "OPEN", 1, {"id": oid})


def applied(body: dict[str, Any]) -> OrderEvent:
    return OrderEvent(
        "watchorders", 1, "", 0, None, body["id"], body["status"], body["status"], 1, body, True
    )


@pytest.fixture
def loop() -> Any:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def make(loop: Any, *, expect: bool = True) -> tuple[OwnOrderWatch, FakeClient, list[Any]]:
    client, calls = FakeClient(), []
    book: list[dict[str, Any]] = []

    def apply(body: dict[str, Any]) -> OrderEvent:
        book.append(body)
        return applied(body)

    def reconcile() -> None:
        calls.append("reconcile")

    watch = OwnOrderWatch(apply, loop, reconcile, client, expect_events=expect)
    return watch, client, calls


def test_a_created_order_never_notified_teaches_outcome_only_once(loop: Any) -> None:
    watch, client, calls = make(loop)
    watch._created(order("a"))
    watch._created(order("b"))
    assert set(watch._waiting) == {"a", "b"}
    watch._silent("a", watch._losses)  # its grace ran out with the connection up
    assert watch.learnt and calls == ["reconcile"]
    item = client.learned[SETTING]
    assert (item.value, item.profile_value) == ("outcome_only", "all")
    assert "a created by this client was not notified" in item.evidence
    assert watch._waiting == {}  # the other wait is void: learnt already
    watch._silent("b", watch._losses)
    assert calls == ["reconcile"]


def test_a_notified_order_teaches_nothing(loop: Any) -> None:
    watch, client, _ = make(loop)
    watch._created(order("a"))
    watch.seen(notification("a"))
    assert watch._waiting == {} and not watch.learnt and len(client.learned) == 0


def test_a_notification_before_the_create_answer_is_not_waited_for(loop: Any) -> None:
    watch, _, _ = make(loop)
    watch.seen(notification("a"))  # the stream was faster than the REST answer
    watch._created(order("a"))
    assert watch._waiting == {}


def test_a_silence_across_a_lost_connection_proves_nothing(loop: Any) -> None:
    watch, client, calls = make(loop)
    watch._created(order("a"))
    losses = watch._losses
    watch.seen(SessionEvent("_session", 1, "c1", 0, None, "dropped"))
    watch._silent("a", losses)
    assert not watch.learnt and calls == [] and len(client.learned) == 0


def test_no_check_when_the_profile_says_outcome_only_or_the_order_is_final(loop: Any) -> None:
    watch, _, _ = make(loop, expect=False)
    watch._created(order("a"))
    assert watch._waiting == {}
    watch, _, _ = make(loop)
    watch._created(order("r", "REJECTED"))
    assert watch._waiting == {}


def test_a_create_answered_on_another_thread_is_handed_to_the_loop(loop: Any) -> None:
    watch, _, _ = make(loop)
    watch.created(order("a"))  # no running loop here: scheduled on the book's
    assert watch._waiting == {}
    loop.run_until_complete(asyncio.sleep(0))
    assert set(watch._waiting) == {"a"}
    watch.close()
    assert watch._waiting == {}
