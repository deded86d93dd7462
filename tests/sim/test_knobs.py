"""Simulator knobs are checked by type and range at start and on PATCH /_sim/knobs: a bad
value is refused naming the knob and changes nothing (before: accepted, then every
request answered 500)."""

from __future__ import annotations

from typing import Any

import pytest

from toolkit.sim import Simulator
from toolkit.sim._control import SimControlError
from toolkit.sim._knobs import Knobs, check_knob

BAD: list[tuple[str, Any]] = [
    ("latency_ms", "abc"),
    ("latency_ms", -5),
    ("listing_503_rate", 7),
    ("listing_503_rate", float("nan")),
    ("rate_limit_per_s", 0),
    ("token_ttl_s", -1),
    ("page_max", 0),
    ("page_max", 2.5),
    ("history_orders", True),
    ("limit_events", "some"),
    ("engine", "yes"),
    ("service_name", ""),
    ("numeric_ids", True),
    ("numeric_ids", "some"),
    ("numeric_id_base", -1),
    ("numeric_id_base", 1.5),
    ("listing_fault_page", -1),
    ("listing_fault_status", 200),
    ("listing_fault_status", True),
    ("omit_market_type", "yes"),
]


@pytest.mark.parametrize(("name", "value"), BAD)
def test_a_bad_value_is_refused_naming_the_knob(name: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"knob {name}"):
        check_knob(name, value)
    knobs = Knobs()
    before = knobs.as_dict()
    with pytest.raises(ValueError, match=f"knob {name}"):
        knobs.update(**{"listing_lag_s": 1.0, name: value})
    assert knobs.as_dict() == before  # nothing applied, not even the good one


def test_good_values_pass_unchanged() -> None:
    for name, value in [("latency_ms", 50), ("rate_limit_per_s", None), ("token_ttl_s", 0.0),
                        ("limit_events", "outcome_only"), ("engine", False)]:  # fmt: skip
        assert check_knob(name, value) == value


def test_simulator_refuses_a_bad_knob_at_start() -> None:
    with pytest.raises(ValueError, match="knob latency_ms"):
        Simulator(latency_ms="abc")


def test_patch_refuses_a_bad_knob_with_400_and_keeps_serving(fresh_sim: Simulator) -> None:
    with pytest.raises(SimControlError) as info:
        fresh_sim.control.set_knobs(latency_ms="abc")
    assert info.value.args[0] == 400 or "400" in str(info.value)
    assert fresh_sim.control.knobs()["latency_ms"] == 0.0
    assert fresh_sim.control.order_ids()  # still serving
