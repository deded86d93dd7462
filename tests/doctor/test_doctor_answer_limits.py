"""The doctor's limits against gateways of our own: a listing dripping one byte at a time is
cut at the whole-answer deadline, a gzip bomb at the size cap, a slow service at the run's
deadline, each as a ``check:`` row saying so while the other steps still run; a sign-in
that never completes is one error line from the CLI; bad limits are refused before
anything is sent."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Coroutine, Iterator
from typing import Any

import pytest
from _doctor_wire import (
    KEY,
    LISTING,
    SECRET,
    HttpServer,
    Loop,
    Request,
    answer,
    drip,
    gzip_bomb,
    signin,
    wire_loop,
)

from toolkit.cli import main
from toolkit.client._client import Client
from toolkit.doctor import diagnose
from toolkit.errors import InvalidRequest

BOMB = gzip_bomb(16)  # 16 MiB once decoded, about 16 KiB on the wire
CAP = 256 * 1024


class Gateway:
    """Signs in; the listing answers as ``listing`` says (``drip``, ``bomb``, ``slow``,
    ``empty``), and the sign-in drips when ``signin_drips``; anything else is a 404."""

    def __init__(self) -> None:
        self.listing = "empty"
        self.signin_drips = False

    def __call__(self, req: Request) -> bytes | Coroutine[Any, Any, bytes | None]:
        if req.path == "/auth/signin":
            return drip(req.writer) if self.signin_drips else signin(req)
        if req.path == LISTING:
            if self.listing == "drip":
                return drip(req.writer)
            if self.listing == "bomb":
                return answer(200, BOMB, {"Content-Encoding": "gzip"})
            if self.listing == "slow":
                return self._slow()
            return answer(200, {"orders": []})
        return answer(404, {"message": "not found"})

    async def _slow(self) -> bytes:
        await asyncio.sleep(0.3)  # the service's latency, under the per-request timeout
        return answer(200, {"orders": []})


@pytest.fixture(scope="module")
def loop() -> Iterator[Loop]:
    with wire_loop() as loop:
        yield loop


@pytest.fixture
def gateway(loop: Loop) -> tuple[Gateway, HttpServer]:
    script = Gateway()
    return script, loop.http(script)


def _client(server: HttpServer) -> Client:
    return Client(server.url, server.ws_url, KEY, SECRET)


@pytest.mark.timeout(30)
def test_a_dripping_listing_is_cut_at_the_deadline_and_said(
    gateway: tuple[Gateway, HttpServer],
) -> None:
    script, server = gateway
    script.listing = "drip"
    started = time.monotonic()
    with _client(server) as client:
        d = diagnose(client, payload_timeout=0, timeout=0.5)
    assert time.monotonic() - started < 20
    for step in ("listing", "REST identity"):
        row = d[f"check: {step}"]
        assert (row.status, row.observed) == ("unknown", "timed out"), row
        assert "no complete answer within timeout=0.5s" in row.note
        assert LISTING in row.note
    # the other steps still ran
    assert d["signin.token_field"].status == "match"
    assert d["check: fetchOrder"].observed == "failed"


@pytest.mark.timeout(30)
def test_a_gzip_bomb_is_refused_at_the_size_cap_and_said(
    gateway: tuple[Gateway, HttpServer],
) -> None:
    script, server = gateway
    script.listing = "bomb"
    with _client(server) as client:
        d = diagnose(client, payload_timeout=0, timeout=5, max_response_bytes=CAP)
    row = d["check: listing"]
    assert (row.status, row.observed) == ("unknown", "too large"), row
    assert f"answer larger than max_response_bytes={CAP} (decoded)" in row.note
    assert d["signin.token_field"].status == "match"


@pytest.mark.timeout(30)
def test_the_run_deadline_stops_the_step_running_and_skips_the_rest(
    gateway: tuple[Gateway, HttpServer],
) -> None:
    script, server = gateway
    script.listing = "slow"  # each answer within timeout, dozens of them: too long in all
    started = time.monotonic()
    with _client(server) as client:
        d = diagnose(client, payload_timeout=0, timeout=2, deadline=1.5)
    assert time.monotonic() - started < 10
    assert d["signin.token_field"].status == "match"  # seen before the deadline: kept
    stopped = d["check: listing"]
    assert (stopped.status, stopped.observed) == ("unknown", "stopped")
    assert "deadline=1.5s for the whole run" in stopped.note
    for step in ("list items", "fetchOrder", "WebSocket"):
        row = d[f"check: {step}"]
        assert (row.status, row.observed) == ("unknown", "not run"), row


@pytest.mark.timeout(30)
def test_a_sign_in_that_never_completes_is_one_cli_line(
    gateway: tuple[Gateway, HttpServer],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script, server = gateway
    script.signin_drips = True
    for name in ("TOOLKIT_ENV", "TOOLKIT_PROFILE", "TOOLKIT_PROFILE_ID"):
        monkeypatch.delenv(name, raising=False)
    env = {"BASE_URL": server.url, "WS_URL": server.ws_url, "API_KEY": KEY, "API_SECRET": SECRET}
    for name, value in env.items():
        monkeypatch.setenv(f"TOOLKIT_{name}", value)
    code = main(["doctor", "--wait", "0", "--timeout", "0.5"])
    out = capsys.readouterr()
    err = out.err.strip()
    assert code == 2, out
    assert len(err.splitlines()) == 1 and err.startswith("toolkit doctor: error:")
    assert "no complete answer within timeout=0.5s" in err and "/auth/signin" in err
    assert SECRET not in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("deadline", 0),
        ("deadline", math.nan),
        ("timeout", -1.0),
        ("timeout", math.inf),
        ("payload_timeout", -0.5),
        ("max_response_bytes", 0),
        ("max_response_bytes", 1.5),
    ],
)
def test_bad_limits_are_refused_before_anything_is_sent(
    gateway: tuple[Gateway, HttpServer], option: str, value: object
) -> None:
    _, server = gateway
    with _client(server) as client, pytest.raises(InvalidRequest, match=option):
        diagnose(client, **{option: value})  # type: ignore[arg-type]
    assert server.requests == []
