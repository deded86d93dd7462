"""A reconnect loop survives any length of outage: the backoff's delay stays at its
maximum however many attempts came before (``factor**attempt`` would overflow a float
after about 1024 doublings, some 8.5 hours of outage at 30 s)."""

from __future__ import annotations

import random

import pytest

from toolkit.stream._channels import Backoff


@pytest.mark.parametrize("factor", [2.0, 1.5, 10.0, float("inf")])
def test_the_delay_stays_at_the_maximum_after_10000_attempts(factor: float) -> None:
    b = Backoff(initial=0.5, maximum=30.0, factor=factor, jitter=0.0)
    b.attempt = 10_000
    assert b.next_delay() == 30.0
    assert b.attempt == 10_001  # the count goes on


def test_the_schedule_is_unchanged_below_the_cap_and_jitter_still_applies() -> None:
    exact = Backoff(initial=0.5, maximum=30.0, factor=2.0, jitter=0.0)
    assert [exact.next_delay() for _ in range(8)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
    late = Backoff(initial=0.5, maximum=30.0, factor=2.0, jitter=0.5, rng=random.Random(3))
    late.attempt = 10_000
    delays = [late.next_delay() for _ in range(20)]
    assert all(15.0 <= d <= 30.0 for d in delays) and len(set(delays)) > 1


def test_iterating_through_a_long_outage_never_raises() -> None:
    b = Backoff(initial=0.5, maximum=30.0, factor=2.0, jitter=0.5, rng=random.Random(0))
    it = iter(b)
    assert max(next(it) for _ in range(3000)) <= 30.0
