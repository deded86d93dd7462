"""``tk.diagnose(client)`` against the simulator: under the default profile every observable
row matches; against a simulator serving ``profiles/alt.toml`` with the client on the default
profile it finds every difference a read-only check can see, and the profile it writes lets a
client sign in, list, fetch and subscribe. It never writes, and never shows a secret."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from conftest import ALT, activity, needs_profiled_sim

import toolkit as tk
from toolkit.client._client import Client
from toolkit.doctor import UNOBSERVABLE, Diagnosis, adiagnose, diagnose
from toolkit.doctor._report import Redactor
from toolkit.profile import DEFAULT_PROFILE, dumps_profile
from toolkit.sim import Simulator

#: points of DEFAULT_PROFILE.diff(alt) a read-only check cannot show as differences
NOT_OBSERVABLE = {
    # only a (batch) cancel would show them; the doctor never writes
    "rest.cancel_profile_in",
    "rest.cancel_status",
    "rest.batch_cancel_path",
    "rest.batch_ids_field",
    "rest.batch_cancel_max",
    # only limit orders changing state would show which events are published
    "stream.limit_events",
    # would need a connection held open (idle) for minutes or hours
    "stream.max_duration_s",
    "stream.idle_limit_s",
    # a client choice that only has to stay below the idle limit
    "stream.keepalive_interval_s",
}
#: points seen, but what was seen is compatible with the default, so nothing needs changing
COMPATIBLE = {
    "orders.timestamp_unit",  # "auto" tells seconds from milliseconds per value
    "stream.refusal_close_codes",  # alt's 4401 is among the default's codes
}
#: points seen, but what was seen cannot tell the values apart: unknown, the default kept
AMBIGUOUS = {
    "signin.expiry_unit",  # alt's ttl 3600 at "expiresIn": an hour in s, or 3.6 s in ms
}


def _diagnose(sim: Simulator, **settings: Any) -> Diagnosis:
    with activity(sim), sim.client(**settings) as client:
        return diagnose(client, payload_timeout=5.0)


@pytest.fixture(scope="module")
def default_diagnosis(default_sim: Simulator) -> Diagnosis:
    return _diagnose(default_sim)


@pytest.fixture(scope="module")
def alt_diagnosis(alt_sim: Simulator) -> Diagnosis:
    return _diagnose(alt_sim, profile=DEFAULT_PROFILE)


def test_default_profile_every_observable_row_matches(default_diagnosis: Diagnosis) -> None:
    d = default_diagnosis
    assert d.ok and d.differs == []
    # the account holds fewer limit orders than one default page: the default is unseen
    unseen = set(UNOBSERVABLE) | {"listing.page_default"}
    for row in d.rows:
        if row.setting in unseen:
            assert row.status in ("match", "unknown"), row
        else:
            assert row.status == "match", row
    assert d["payloads.ticker_bid"].observed == "bid"
    assert d["listing.page_max"].observed == 100
    assert d.profile().diff(DEFAULT_PROFILE) == []


def test_tk_diagnose_is_the_public_name(default_sim: Simulator) -> None:
    assert tk.diagnose is diagnose


def test_async_twin(default_sim: Simulator) -> None:
    async def main() -> Diagnosis:
        async with default_sim.client() as client:
            return await adiagnose(client, payload_timeout=0.2)

    d = asyncio.run(main())
    assert d.ok and d["rest.fetch_order_param"].status == "match"


@needs_profiled_sim
def test_alt_every_observable_difference_is_found(alt_diagnosis: Diagnosis) -> None:
    expected = {name for name, _, _ in DEFAULT_PROFILE.diff(ALT)}
    found = set(alt_diagnosis.differs)
    assert found == expected - NOT_OBSERVABLE - COMPATIBLE - AMBIGUOUS
    for setting in NOT_OBSERVABLE | AMBIGUOUS:
        assert alt_diagnosis[setting].status == "unknown"
    for setting in COMPATIBLE:
        assert alt_diagnosis[setting].status == "match"
    assert alt_diagnosis["rest.fetch_order_param"].line == '[rest] fetch_order_param = "id"'
    assert alt_diagnosis["signin.token_field"].value == "data.accessToken"
    assert not alt_diagnosis.ok


@needs_profiled_sim
def test_alt_observed_profile_holds_alts_observable_values(alt_diagnosis: Diagnosis) -> None:
    observed = alt_diagnosis.profile()
    left = {name for name, _, _ in observed.diff(ALT)}
    assert left <= NOT_OBSERVABLE | COMPATIBLE | AMBIGUOUS
    assert observed.listing.page_min <= observed.listing.page_default <= observed.listing.page_max


@needs_profiled_sim
def test_a_client_on_the_observed_profile_works(
    alt_sim: Simulator, alt_diagnosis: Diagnosis
) -> None:
    profile = load_profile_text(dumps_profile(alt_diagnosis.profile()))
    with alt_sim.client(profile=profile) as client:
        client.signin()
        items = client.list_limit_orders(limit=profile.listing.page_min)
        assert items
        first = items[0]
        oid = first.get("id") or first.get(profile.listing.id_field)
        order = client.fetch_order(str(oid))
        assert order

        async def subscribe_all() -> list[str]:
            texts = []
            async with client.stream() as s:
                texts.append(await s.subscribe("watchOrders"))
                texts.append(await s.subscribe("watchTicker", symbol="BTC/BRL"))
                texts.append(await s.subscribe("watchTickers"))
                texts.append(await s.subscribe("watchBalance"))
            return texts

        assert len(asyncio.run(subscribe_all())) == 4


def load_profile_text(text: str) -> tk.ServiceProfile:
    import tomllib

    return tk.ServiceProfile.from_dict(tomllib.loads(text))


def test_read_only_and_redacted(default_sim: Simulator, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[str, str]] = []
    secrets: list[str] = []
    actions: list[str] = []
    send = httpx.AsyncClient.send
    add = Redactor.add

    async def recording_send(self: httpx.AsyncClient, request: httpx.Request, **kw: Any) -> Any:
        sent.append((request.method, request.url.path))
        return await send(self, request, **kw)

    def recording_add(self: Redactor, secret: str | None) -> None:
        if secret:
            secrets.append(secret)
        add(self, secret)

    from toolkit.doctor import _ws

    ask = _ws._Conn.ask

    async def recording_ask(self: Any, request: dict[str, Any]) -> Any:
        actions.append(str(request.get("action")))
        return await ask(self, request)

    monkeypatch.setattr(httpx.AsyncClient, "send", recording_send)
    monkeypatch.setattr(Redactor, "add", recording_add)
    monkeypatch.setattr(_ws._Conn, "ask", recording_ask)
    before = default_sim.control.order_ids()
    with default_sim.client() as client:
        d = diagnose(client, payload_timeout=0.2)
    assert default_sim.control.order_ids() == before
    assert sent and {m for m, _ in sent} <= {"GET", "POST"}
    assert {p for m, p in sent if m == "POST"} == {DEFAULT_PROFILE.signin.path}
    assert set(actions) <= {"subscribe", "unsubscribe", "ping"}
    assert "demo-secret" in secrets and len(secrets) >= 3  # secret, wrong secret, token
    views = [d.to_text(), d._repr_html_(), repr(d), repr(d.rows), str(d.comments())]
    shown = "\n".join([*views, dumps_profile(d.profile(), comments=d.comments())])
    for secret in secrets:
        assert secret not in shown


def test_redactor_hides_every_secret() -> None:
    r = Redactor(["s3cret-value", None, "abc"])  # too short to hide safely: kept
    r.add("tok.en.value-123456")
    assert r("x s3cret-value y tok.en.value-123456 abc") == "x *** y *** abc"
    assert r.value(("tok.en.value-123456", 1)) == ("***", 1)


def test_unreachable_service_is_one_clear_error() -> None:
    client = Client("http://127.0.0.1:9", api_key="k", api_secret="s", timeout=1.0)
    with client, pytest.raises(tk.TransportError, match="no answer from"):
        diagnose(client, payload_timeout=0.1)


def test_missing_credentials_are_one_clear_error() -> None:
    client = Client("http://127.0.0.1:9")
    with client, pytest.raises(tk.InvalidRequest, match="TOOLKIT_API_SECRET"):
        diagnose(client)


def test_views(default_diagnosis: Diagnosis) -> None:
    text = default_diagnosis.to_text()
    assert text.splitlines()[0].split()[:4] == ["setting", "assumed", "observed", "status"]
    assert "rest.cancel_status" in text and "unknown" in text
    html = default_diagnosis._repr_html_()
    assert "<table>" in html and "signin.token_field" in html
    assert default_diagnosis.summary().startswith("service at http://127.0.0.1:")
