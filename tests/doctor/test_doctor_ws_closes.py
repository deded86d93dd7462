"""The doctor's WebSocket step survives a service that closes it (issue: a 6 s idle limit
with close 4000 cut the step, and every stream and payload row read "not observed"): what
was seen before a close is kept, a new connection with the same subscriptions carries on,
kept alive inside the silence the close showed, and the idle limit (or the maximum
duration) and a keep-alive interval under it are written. Against the real simulator with
short limits, and sans-I/O for the reading of the closes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit.doctor import diagnose
from toolkit.profile import DEFAULT_PROFILE, dump_profile, load_profile
from toolkit.sim import Simulator
from toolkit.stream._limits import Close, read_limits


@pytest.fixture
def idle_sim() -> Iterator[Simulator]:
    # no engine: the channels stay quiet, so the doctor waits the whole --wait in silence
    with Simulator(
        seed=3, engine=False, history_orders=20, ws_idle_limit_s=2.0, ws_limit_close_code=4000
    ) as s:
        yield s


def test_an_idle_close_is_survived_read_and_written(idle_sim: Simulator, tmp_path: Path) -> None:
    with idle_sim.client() as client:
        d = diagnose(client, payload_timeout=6.0)
    assert "WebSocket" not in d.steps_failed
    # seen before the close, kept
    assert d["stream.subscribed_text"].status == "match"
    assert d["stream.keepalive_action"].status == "match"
    idle = d["stream.idle_limit_s"]
    assert idle.status == "differs" and 1.9 <= idle.observed <= 4.0, idle
    assert "code 4000 'idle timeout'" in idle.note
    assert "a connection kept alive outlived it" in idle.note
    every = d["stream.keepalive_interval_s"]
    assert every.status == "differs" and every.value < idle.value
    # the profile written from it loads (keep-alive under the idle limit)
    written = load_profile(dump_profile(d.profile(), tmp_path / "p.toml", comments=d.comments()))
    assert written.stream.idle_limit_s == idle.value
    assert written.stream.keepalive_interval_s < written.stream.idle_limit_s


def test_a_quiet_service_within_its_limits_changes_nothing(sim: Simulator) -> None:
    with sim.client() as client:
        d = diagnose(client, payload_timeout=0.3)
    assert d["stream.idle_limit_s"].status == "unknown"
    assert d["stream.max_duration_s"].status == "unknown"


def _close(age: float, silence: float, alive: bool, code: int = 4000) -> Close:
    return Close(code, "x", age, silence, alive)


def test_read_limits_an_idle_close_confirmed_by_a_connection_kept_alive() -> None:
    limits = read_limits([_close(6.2, 6.0, False)], survived_s=9.0)
    assert limits.idle_s == 6.0 and limits.idle_confirmed
    assert limits.max_duration_s is None


def test_read_limits_an_idle_close_the_wait_could_not_confirm() -> None:
    limits = read_limits([_close(6.2, 6.0, False)], survived_s=2.0)
    assert limits.idle_s == 6.0 and not limits.idle_confirmed


def test_read_limits_two_closes_at_one_age_are_the_maximum_duration() -> None:
    """Closed at 3 s though kept alive, like the silent one before it: a duration."""
    limits = read_limits([_close(3.0, 2.9, False), _close(3.05, 0.4, True)], survived_s=None)
    assert limits.idle_s is None
    assert limits.max_duration_s == pytest.approx(3.05)


def test_read_limits_a_short_silence_tells_nothing() -> None:
    """A close 0.1 s after our last message (a restart, a drop) is no idle limit."""
    limits = read_limits([_close(30.0, 0.1, False, code=1001)], survived_s=5.0)
    assert limits.idle_s is None and limits.max_duration_s is None


def test_the_default_profile_is_what_the_quiet_test_assumes() -> None:
    assert DEFAULT_PROFILE.stream.idle_limit_s > 60


def test_an_idle_limit_is_seen_when_every_payload_came_early(tmp_path: Path) -> None:
    """A busy service (payloads at once) with an idle limit under the wait: the doctor
    stays silent for the rest of the wait, so the limit shows although data kept coming
    (profiles/stranger.toml: 6 s, close 4000; it was written as unknown, 600 s)."""
    with Simulator(
        seed=3, engine=True, tick_interval_s=0.1, order_interval_s=0.2, history_orders=20,
        ws_idle_limit_s=2.0, ws_limit_close_code=4000,
    ) as busy, busy.client() as client:  # fmt: skip
        d = diagnose(client, payload_timeout=4.0)
    assert d["payloads.balance_free"].status == "match"  # every payload came
    idle = d["stream.idle_limit_s"]
    assert idle.status == "differs" and 1.9 <= idle.observed <= 4.0, idle
    assert d["stream.keepalive_interval_s"].value < idle.value
