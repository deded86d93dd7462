"""The silent-service knobs: ``silent`` takes requests and never answers (a black hole),
``silent_after_requests`` answers N more service requests first; the control API answers
throughout, so a test can switch it back."""

from __future__ import annotations

import httpx
import pytest

from toolkit.sim import Simulator
from toolkit.sim._control import SimControlError

PATH = "/orders/fetchOrder"


def test_silent_after_n_requests_counts_down_then_holds_every_request(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    oid = fresh_sim.control.order_ids()[0]
    fresh_sim.control.set_knobs(silent_after_requests=2)
    for left in (1, 0):
        assert fresh_http.get(PATH, params={"orderId": oid}).status_code == 200
        assert fresh_sim.control.knobs()["silent_after_requests"] == left
    with pytest.raises(httpx.ReadTimeout):  # taken, never answered
        fresh_http.get(PATH, params={"orderId": oid}, timeout=0.5)
    knobs = fresh_sim.control.knobs()  # the control API still answers
    assert knobs["silent"] is True and knobs["silent_after_requests"] is None
    with pytest.raises(httpx.ReadTimeout):  # sign-in too
        httpx.post(
            fresh_sim.base_url + "/auth/signin",
            json={"apiKey": "demo", "apiSecret": "demo-secret"},
            timeout=0.5,
        )
    fresh_sim.control.set_knobs(silent=False)
    assert fresh_http.get(PATH, params={"orderId": oid}).status_code == 200


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_a_bad_count_is_refused(fresh_sim: Simulator, bad: object) -> None:
    with pytest.raises(SimControlError, match="knob silent_after_requests"):
        fresh_sim.control.set_knobs(silent_after_requests=bad)
