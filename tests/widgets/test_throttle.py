"""The repaint throttle on a fake clock: interval, delay, and no repaint lost."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from toolkit.widgets._throttle import RepaintThrottle


def test_first_repaint_is_immediate(clock: Any) -> None:
    t = RepaintThrottle(10, clock)
    assert t.ready()
    assert t.acquire()
    assert t.repaints == 1


def test_interval_is_enforced_on_the_injected_clock(clock: Any) -> None:
    t = RepaintThrottle(10, clock)
    assert t.acquire()
    clock.advance(0.05)
    assert not t.acquire()
    assert t.delay() == pytest.approx(0.05)
    clock.advance(0.05)
    assert t.delay() == 0.0
    assert t.acquire()
    assert t.repaints == 2


def test_at_most_max_hz_per_second_under_a_flood(clock: Any) -> None:
    t = RepaintThrottle(10, clock)
    granted: list[float] = []
    for _ in range(50_000):  # 10 simulated seconds at 5,000 asks per second
        clock.advance(0.0002)
        if t.acquire():
            granted.append(clock.now)
    assert 95 <= len(granted) <= 101
    gaps = [b - a for a, b in itertools.pairwise(granted)]
    assert min(gaps) >= 0.1 - 1e-9


@pytest.mark.parametrize("bad", [0, -1.0])
def test_rejects_a_non_positive_rate(bad: float) -> None:
    with pytest.raises(ValueError, match="max_hz"):
        RepaintThrottle(bad)
