"""The doctor on a service it has never seen (``profiles/stranger.toml``): payloads keyed
by asset or symbol (``wallet.*`` with the asset as the key, ``data.*``), ISO-8601 payload
stamps, integer ids beside a nested limit price. Sans-I/O on the inference, then
``diagnose`` against a simulator serving the stranger with the client on the default."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import activity

from toolkit.doctor import Diagnosis, diagnose
from toolkit.doctor import _shapes as sh
from toolkit.profile import get_items, item_field, load_profile
from toolkit.sim import Simulator

ROOT = Path(__file__).resolve().parents[2]
STRANGER = load_profile(ROOT / "profiles" / "stranger.toml")
WALLET = {
    "wallet": {
        "BTC": {"available": "1.2", "onHold": "0.1", "total": "1.3"},
        "BRL": {"available": "100.00", "onHold": "0.00", "total": "100.00"},
    },
    "ts": "2026-11-27T09:23:40.637Z",
}
#: a read-only doctor cannot see these (tests/doctor/test_diagnose.py says why)
NOT_OBSERVABLE = {
    "rest.cancel_profile_in",
    "rest.cancel_status",
    "rest.batch_cancel_path",
    "rest.batch_ids_field",
    "rest.batch_cancel_max",
    "stream.max_duration_s",
    "stream.idle_limit_s",
    "stream.keepalive_interval_s",
    "stream.refusal_http_statuses",  # the stranger refuses by a close
}
#: seen, and what was seen is compatible with the default kept
COMPATIBLE = {
    "signin.expiry_unit",  # "auto" reads its ms moment the same
    "orders.timestamp_unit",  # "auto" tells ms per value
    "stream.refusal_close_codes",  # 1008 is among the default's codes
}


# ------------------------------------------------------------------ sans-I/O
def test_a_balance_keyed_by_asset_is_wallet_star_with_the_key_as_asset() -> None:
    mapped = sh.map_balance(WALLET)
    assert mapped == {
        "list": "wallet.*",
        "time": "ts",
        "asset": "*",
        "free": "available",
        "locked": "onHold",
        "total": "total",
    }
    # what the client reads with these settings: every asset under its key
    items = get_items(WALLET, mapped["list"])
    assert [item_field(i, k, "*") for k, i in items] == ["BTC", "BRL"]


def test_a_keyed_item_that_names_its_asset_keeps_the_field() -> None:
    named = {"wallet": {k: {**v, "ccy": k} for k, v in WALLET["wallet"].items()}}
    assert sh.map_balance(named)["asset"] == "ccy"
    itself = dict(WALLET["wallet"])  # the payload is the keyed object
    assert sh.map_balance(itself)["list"] == "*"


def test_keyed_tickers_are_found_and_lists_still_win() -> None:
    keyed = {"data": {"BTC/BRL": {"pair": "BTC/BRL", "bid": "1"}, "SOL/BRL": {"pair": "SOL/BRL"}}}
    assert sh.find_items(keyed) == "data.*"
    items = sh.keyed_items(keyed, "data.*")
    assert sh.key_field(items, "pair") == "pair"
    assert sh.key_field(items, None) == "*"
    assert sh.find_items({"tickers": [{"symbol": "BTC/BRL"}], "x": {"BTC": {}}}) == "tickers"
    # keys that are no symbol or asset are no keyed items
    assert sh.find_keyed({"data": {"first": {"a": 1}}}) is None
    assert sh.find_keyed({"data": {"BTC": "1.0"}}) is None


def test_an_integer_id_is_not_taken_for_the_limit_price() -> None:
    items: list[dict[str, Any]] = [
        {
            "ref": 4245563 + n,
            "market": "BTC/BRL",
            "way": "buy",
            "kind": "limit",
            "phase": "OPEN",
            "trigger": {"price": f"30{n}776.00"},
            "openedAt": 1795736129538 + n,
        }
        for n in range(3)
    ]
    assumed = {"id_field": "id", "limit_price_field": "limitPrice"}
    mapped = sh.map_list_items(items, assumed)
    assert mapped["id_field"] == "ref"
    assert mapped["limit_price_field"] == "trigger.price"


def test_iso_stamps_are_times() -> None:
    assert sh.time_unit("2026-11-27T09:23:40.637Z") == "iso"
    ticker = {
        "pair": "BTC/BRL",
        "bestBid": "1",
        "bestAsk": "3",
        "lastPrice": "2",
        "at": WALLET["ts"],
    }
    assert sh.map_ticker(ticker)["time"] == "at"


# ------------------------------------------------------------------ against the stranger
@pytest.fixture(scope="module")
def stranger_sim() -> Iterator[Simulator]:
    with Simulator(seed=5, engine=False, history_orders=60, profile=STRANGER) as sim:
        yield sim


@pytest.fixture(scope="module")
def stranger_diagnosis(stranger_sim: Simulator) -> Diagnosis:
    from toolkit.profile import DEFAULT_PROFILE

    with activity(stranger_sim), stranger_sim.client(profile=DEFAULT_PROFILE) as client:
        return diagnose(client, payload_timeout=5.0)


def test_the_doctor_writes_the_strangers_observable_points(
    stranger_diagnosis: Diagnosis,
) -> None:
    observed = stranger_diagnosis.profile()
    left = {name for name, _, _ in observed.diff(STRANGER)}
    assert left <= NOT_OBSERVABLE | COMPATIBLE, sorted(left - NOT_OBSERVABLE - COMPATIBLE)
    pl = observed.payloads
    assert (pl.balance_list, pl.balance_asset, pl.tickers_list) == ("wallet.*", "*", "data.*")
    assert (pl.balance_time, pl.ticker_time, observed.orders.quote_time_field) == (
        "asOf",
        "at",
        "at",
    )
    rows = {r.setting: r for r in stranger_diagnosis.rows}
    for name in ("list", "asset", "free", "locked", "total", "time"):
        assert rows[f"payloads.balance_{name}"].status == "differs", rows[
            f"payloads.balance_{name}"
        ]
