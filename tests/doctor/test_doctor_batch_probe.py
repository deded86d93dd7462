"""``toolkit doctor --probe-cancel`` also learns the batch cancel (spec 4.4: shapes not
shown): its route, the field of its id list and its largest batch, from batch cancels of
order ids that do not exist, so nothing in the account changes and every row says what was
sent. Against the simulator serving ``profiles/stranger.toml``, then sans-I/O on answers
the simulator never gives (no route at all, no limit, an unclear answer)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolkit.doctor import diagnose
from toolkit.doctor._batch_probe import fields_named, probe_batch_cancel
from toolkit.doctor._probe import Answer, Probe
from toolkit.doctor._report import Findings, Redactor, Row
from toolkit.profile import DEFAULT_PROFILE, load_profile
from toolkit.sim import Simulator

ROOT = Path(__file__).resolve().parents[2]
STRANGER = load_profile(ROOT / "profiles" / "stranger.toml")


@pytest.fixture(scope="module")
def stranger_sim() -> Iterator[Simulator]:
    with Simulator(seed=5, engine=False, history_orders=30, profile=STRANGER) as sim:
        yield sim


def _states(sim: Simulator) -> dict[str, str]:
    return {o.id: o.status for o in sim.state.orders.values()}  # type: ignore[attr-defined]


def test_the_stranger_batch_cancel_is_learnt_and_nothing_changes(stranger_sim: Simulator) -> None:
    before = _states(stranger_sim)
    # as CI runs it: no TOOLKIT_PROFILE_ID, so a made-up profileId is sent
    with stranger_sim.client(profile=DEFAULT_PROFILE, profile_id=None) as client:
        d = diagnose(client, payload_timeout=0.2, probe_cancel=True)
    observed = d.profile().rest
    placement = d["rest.cancel_profile_in"]
    assert (placement.status, placement.value) == ("differs", "query")
    assert "(made up: TOOLKIT_PROFILE_ID is not set)" in placement.note
    assert (observed.batch_cancel_path, observed.batch_ids_field, observed.batch_cancel_max) == (
        "/orders/limit/orders/cancel-many",
        "orderIdList",
        25,
    )
    note = d["rest.batch_cancel_path"].note
    assert "POST /orders/limit/orders/cancel orderIds=[1 id] -> 404" in note
    assert "POST /orders/limit/orders/cancel-many orderIds=[1 id] -> 422" in note
    assert "toolkit-doctor-no-such-profile-" in note
    assert "orderIdList=[25 ids] -> 202" in d["rest.batch_cancel_max"].note
    assert "orderIdList=[26 ids] -> 422" in d["rest.batch_cancel_max"].note
    assert _states(stranger_sim) == before


def test_without_the_option_no_batch_is_sent(stranger_sim: Simulator) -> None:
    with stranger_sim.client(profile=DEFAULT_PROFILE) as client:
        d = diagnose(client, payload_timeout=0.2)
    row = d["rest.batch_cancel_path"]
    assert row.status == "unknown" and "--probe-cancel" in row.note


def test_a_refusal_names_the_field() -> None:
    said = "orderIdList must be a non-empty list of order ids"
    assert fields_named(said) == ["orderIdList"]
    assert fields_named("missing field order_ids (or ids)") == ["order_ids"]


# ------------------------------------------------------------------ sans-I/O
def _probe(answer: Callable[[str, dict[str, Any]], int]) -> tuple[Probe, list[str]]:
    """A probe whose requests are answered by ``answer(path, body)`` (a status)."""
    sent: list[str] = []
    redact = Redactor()
    pr = Probe(
        "http://127.0.0.1:1",
        "ws://127.0.0.1:1",
        "k",
        "s",
        DEFAULT_PROFILE,
        httpx.AsyncClient(),
        Findings(DEFAULT_PROFILE, redact),
        redact,
    )
    pr.token = "t" * 20

    async def request(method: str, path: str, **kw: Any) -> Answer:
        sent.append(f"{method} {path}")
        if method == "GET":
            return Answer(404, {"message": "no such order"}, "no such order")
        status = answer(path, kw.get("json_body") or {})
        return Answer(status, {}, json.dumps({"message": "refused"}))

    pr.request = request  # type: ignore[method-assign]
    return pr, sent


def _row(pr: Probe, setting: str) -> Row:
    return next(r for r in pr.findings.rows(DEFAULT_PROFILE.settings(), {}) if r.setting == setting)


def _run(pr: Probe) -> None:
    async def go() -> None:
        try:
            await probe_batch_cancel(pr)
        finally:
            await pr.http.aclose()

    asyncio.run(go())


def test_no_route_answers_every_batch_row_says_what_was_sent() -> None:
    pr, sent = _probe(lambda path, body: 404)
    _run(pr)
    for setting in ("rest.batch_cancel_path", "rest.batch_ids_field", "rest.batch_cancel_max"):
        row = _row(pr, setting)
        assert row.status == "unknown"
        assert "no batch-cancel route answered" in row.note
        assert "POST /orders/limit/cancel orderIds=[1 id] -> 404" in row.note
    assert all(s.startswith(("GET", "POST")) for s in sent)


def test_a_batch_without_a_limit_is_at_least_the_largest_tried() -> None:
    pr, _sent = _probe(lambda path, body: 202)
    _run(pr)
    row = _row(pr, "rest.batch_cancel_max")
    assert row.value == 1000 and "at least that" in row.note


def test_an_unclear_answer_to_a_size_leaves_the_max_unknown() -> None:
    def answer(path: str, body: dict[str, Any]) -> int:
        return 202 if len(body["orderIds"]) <= 100 else 500

    pr, _sent = _probe(answer)
    _run(pr)
    row = _row(pr, "rest.batch_cancel_max")
    assert row.status == "unknown" and "no clear answer" in row.note
