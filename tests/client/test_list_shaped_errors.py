"""A service whose error bodies put the words in a list (``{"errors": [{"detail": ...}]}``,
as some gateways do): the profile says so with ``rest.error_message_field =
"errors[0].detail"``, the client's errors quote those words, and the doctor finds the
path on its own. Against the real simulator serving that shape."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolkit.doctor import diagnose
from toolkit.errors import OrderNotFound
from toolkit.profile import DEFAULT_PROFILE
from toolkit.sim import Simulator

LISTED = DEFAULT_PROFILE.replace({"rest.error_message_field": "errors[0].detail"})


@pytest.fixture(scope="module")
def listed_sim() -> Iterator[Simulator]:
    with Simulator(seed=5, engine=False, history_orders=30, profile=LISTED) as s:
        yield s


def test_the_simulator_serves_the_list_shape(listed_sim: Simulator) -> None:
    assert listed_sim.state.shape.error("x") == {"errors": [{"detail": "x"}]}  # type: ignore[attr-defined]


def test_the_client_quotes_words_under_a_list_path(listed_sim: Simulator) -> None:
    with listed_sim.client() as client, pytest.raises(OrderNotFound) as info:
        client.cancel_limit_order("l-999999-none")
    message = str(info.value)
    assert "order not found in this profile" in message
    assert "errors" not in message and "detail" not in message  # the words, not the JSON


def test_the_doctor_finds_a_list_path_in_error_bodies(listed_sim: Simulator) -> None:
    with listed_sim.client(profile=DEFAULT_PROFILE) as client:
        d = diagnose(client, payload_timeout=0.2)
    row = d["rest.error_message_field"]
    assert (row.status, row.value) == ("differs", "errors[0].detail"), row
