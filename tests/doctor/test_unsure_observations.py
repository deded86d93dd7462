"""What the doctor does when an observation does not settle a setting: a ttl whose unit only
its field's name tells (``ttlMs``), a ttl whose magnitude fits seconds and milliseconds
alike, and a service that refuses every keep-alive action tried. It never advises a value
it guessed, and never writes one it saw refused."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator

import pytest

from toolkit.doctor import Diagnosis, diagnose
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, dumps_profile
from toolkit.sim import Simulator
from toolkit.stream._keepalive import ConnectionPolicy

#: a ttl in ms under a name that says so, and a keep-alive none of the usual names reach
NAMED_MS = DEFAULT_PROFILE.replace(
    {
        "signin.expiry_field": "session.ttlMs",
        "signin.expiry_kind": "ttl",
        "signin.expiry_unit": "ms",
        "stream.keepalive_action": "status",
        "stream.keepalive_reply_field": "event",
        "stream.keepalive_reply_value": "alive",
    },
    name="named-ms",
)
#: a ttl in ms under a name that says no unit
UNNAMED_MS = NAMED_MS.replace({"signin.expiry_field": "session.ttl"}, name="unnamed-ms")


def _diagnose(sim: Simulator, profile: ServiceProfile) -> Diagnosis:
    with sim.client(profile=profile) as client:
        return diagnose(client, payload_timeout=0.3)


@pytest.fixture(scope="module")
def named_sim() -> Iterator[Simulator]:
    # 100 s = ttlMs 100000: 27.8 h if it were seconds, so only the name tells
    with Simulator(seed=5, engine=False, profile=NAMED_MS, token_ttl_s=100.0) as sim:
        yield sim


def test_a_ttl_named_in_ms_matches_a_profile_saying_ms(named_sim: Simulator) -> None:
    row = _diagnose(named_sim, NAMED_MS)["signin.expiry_unit"]
    assert (row.status, row.observed, row.line) == ("match", "ms", "")
    assert "ttlMs" in row.note


def test_a_ttl_named_in_ms_matches_auto(named_sim: Simulator) -> None:
    # the client's auto reads the unit from the field's name too
    d = _diagnose(named_sim, DEFAULT_PROFILE)
    assert d["signin.expiry_field"].value == "session.ttlMs"
    row = d["signin.expiry_unit"]
    assert (row.status, row.observed) == ("match", "ms")
    assert d.profile().signin.expiry_unit == "auto"


def test_an_ambiguous_ttl_never_advises_changing_an_explicit_unit() -> None:
    with Simulator(seed=5, engine=False, profile=UNNAMED_MS, token_ttl_s=100.0) as sim:
        d = _diagnose(sim, UNNAMED_MS)
    row = d["signin.expiry_unit"]
    assert (row.status, row.observed, row.line) == ("unknown", None, "")
    assert "100000" in row.note and "signin.expiry_unit" in row.note
    assert d.profile().signin.expiry_unit == "ms"
    assert "signin.expiry_unit" not in d.differs


def test_every_keepalive_refused_is_unknown_and_never_written_as_seen(
    named_sim: Simulator,
) -> None:
    d = _diagnose(named_sim, DEFAULT_PROFILE)
    row = d["stream.keepalive_action"]
    assert (row.status, row.observed, row.assumed) == ("unknown", None, "ping")
    for action in ("ping", "heartbeat", "keepalive", "keep_alive"):
        assert f"{action} -> Unknown action: {action}" in row.note
    assert "refused every keep-alive" in row.note and "stream.keepalive_action" in row.note
    observed = d.profile()
    assert observed.stream.keepalive_action == ""  # the refused "ping" is not written
    assert ConnectionPolicy.resolve(observed).keepalive is None  # so it is never sent
    text = dumps_profile(observed, comments=d.comments())
    assert tomllib.loads(text)["stream"]["keepalive_action"] == ""
    comment = text.split('keepalive_action = ""')[0].rsplit("\n", 2)[-2]
    assert comment.startswith("# doctor: not observed; the service refused every keep-alive")
    assert d["stream.keepalive_reply_field"].status == "unknown"
