"""A session adapts to the connection limits the service shows (spec 8: values not shown):
a close after our silence, before our keep-alive was due, shortens the keep-alive; two
closes at one age although we were talking make it rotate before that age. Each change is
logged once and kept in ``client.learned``; settings given explicitly never change. Live
against the simulator's short limits (both profiles), and sans-I/O for the reading."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolkit.profile import DEFAULT_PROFILE
from toolkit.profile._learned import Learned
from toolkit.sim import Simulator
from toolkit.stream._channels import Backoff
from toolkit.stream._events import Event, SessionEvent
from toolkit.stream._keepalive import UNSET, ConnectionPolicy
from toolkit.stream._limits import LimitLearner

pytestmark = pytest.mark.anyio

FAST: dict[str, Any] = {"backoff": Backoff(initial=0.01, maximum=0.05), "confirm_timeout": 5.0}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _policy(**kw: Any) -> ConnectionPolicy:
    return ConnectionPolicy.resolve(DEFAULT_PROFILE, **kw)


# -- sans-I/O ---------------------------------------------------------------------------


def test_an_idle_close_before_the_keepalive_was_due_halves_the_silence() -> None:
    learned = Learned()
    learner = LimitLearner(DEFAULT_PROFILE, learned)
    policy = learner.after_close(_policy(), 4000, "idle", age=6.3, silence=6.0)
    assert policy.keepalive_every == 3.0
    item = learned["stream.keepalive_interval_s"]
    assert (item.value, item.profile_value) == (3.0, 60.0)
    assert "code 4000 'idle'" in item.evidence and "stream.idle_limit_s = 6.0" in item.evidence


def test_two_closes_at_one_age_while_talking_rotate_before_it() -> None:
    learned = Learned()
    learner = LimitLearner(DEFAULT_PROFILE, learned)
    policy = _policy()
    policy = learner.after_close(policy, 1000, "bye", age=100.0, silence=5.0)
    assert policy.rotate_after == _policy().rotate_after  # one close tells nothing yet
    policy = learner.after_close(policy, 1000, "bye", age=104.0, silence=2.0)
    assert policy.rotate_after == pytest.approx(90.0)
    assert learned["stream.max_duration_s"].value == 100.0


def test_explicit_settings_are_never_changed() -> None:
    learner = LimitLearner(DEFAULT_PROFILE, Learned())
    policy = _policy(ping_interval=30.0, rotate_after=50.0)
    after = learner.after_close(policy, 4000, "idle", age=6.3, silence=6.0)
    after = learner.after_close(after, 1000, "x", age=20.0, silence=1.0)
    after = learner.after_close(after, 1000, "x", age=20.0, silence=1.0)
    assert after == policy


def test_a_cut_or_a_short_silence_tells_nothing() -> None:
    learned = Learned()
    learner = LimitLearner(DEFAULT_PROFILE, learned)
    policy = _policy()
    assert learner.after_close(policy, None, "", age=9.0, silence=9.0) == policy
    assert learner.after_close(policy, 1001, "restart", age=9.0, silence=0.1) == policy
    assert len(learned) == 0


def test_the_policy_learns_only_what_the_profile_decided() -> None:
    assert _policy().learn_keepalive and _policy().learn_rotation
    assert not _policy(ping_interval=None).learn_keepalive
    assert not _policy(rotate_after=UNSET, ping_interval=5.0).learn_keepalive


# -- live ---------------------------------------------------------------------------------


def _connected(seen: list[Event]) -> list[str]:
    return [e.detail for e in seen if isinstance(e, SessionEvent) and e.kind == "connected"]


async def _until(cond: Any, what: str, timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        assert loop.time() < end, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def test_an_idle_limit_below_the_keepalive_is_learnt_and_kept_at_bay(
    fresh_sim: Simulator,
) -> None:
    fresh_sim.control.set_knobs(ws_idle_limit_s=2.0, ws_limit_close_code=4000)
    client = fresh_sim.client()
    try:
        async with client.stream(**FAST) as s:  # keep-alive from the profile (60 s / 30 s)
            seen: list[Event] = []
            s.add_callback(seen.append)
            await s.subscribe("watchOrders")
            await _until(lambda: "stream.keepalive_interval_s" in client.learned, "an idle close")
            learnt = client.learned["stream.keepalive_interval_s"]
            assert 0.9 <= learnt.value <= 2.0, learnt
            # learnt at the close; then the new connection, kept alive at the learnt
            # interval, lives three idle limits more
            await _until(lambda: s.stats.reconnects == 1, "the reconnection")
            conn = s.stats.connection_id
            loop = asyncio.get_running_loop()
            start = loop.time()
            await _until(lambda: loop.time() - start > 6.0, "three idle limits")
            assert s.stats.reconnects == 1 and s.stats.connection_id == conn
    finally:
        await client.aclose()


async def test_a_maximum_duration_is_learnt_and_rotated_before(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(ws_max_duration_s=4.0)
    client = fresh_sim.client()
    try:
        async with client.stream(**FAST) as s:
            seen: list[Event] = []
            s.add_callback(seen.append)
            await s.subscribe("watchOrders")
            await _until(lambda: "stream.max_duration_s" in client.learned, "two closes")
            assert 3.0 <= client.learned["stream.max_duration_s"].value <= 6.0
            before = len(_connected(seen))
            await _until(
                lambda: any("rotated from" in d for d in _connected(seen)[before:]),
                "a rotation before the learnt duration",
            )
    finally:
        await client.aclose()
