"""The doctor's WebSocket opens connections as the client's streams do: a message over the
size the streams take (the client's ``max_response_bytes``) stops the check with a row
saying so, and a redirected upgrade is refused (never followed to the host it points at)
with a row naming where it pointed."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from _doctor_wire import (
    KEY,
    LISTING,
    SECRET,
    TOKEN,
    HttpServer,
    Loop,
    Request,
    answer,
    signin,
    wire_loop,
)
from websockets.asyncio.server import ServerConnection

from toolkit.client._client import Client
from toolkit.doctor import Diagnosis, diagnose

#: below websockets' own 1 MiB default, so only the doctor's cap can refuse the message
CAP = 64 * 1024


def rest(req: Request) -> bytes:
    if req.path == "/auth/signin":
        return signin(req)
    if req.path == LISTING:
        return answer(200, {"orders": []})
    return answer(404, {"message": "not found"})


async def oversized(ws: ServerConnection) -> None:
    """Refuses a wrong token with close 4001; confirms each subscribe and then sends a
    data message twice the cap."""
    if f"token={TOKEN}" not in (ws.request.path if ws.request else ""):
        await ws.close(4001, "bad token")
        return
    async for raw in ws:
        msg = json.loads(raw)
        if msg.get("action") != "subscribe":
            await ws.send(json.dumps({"success": False, "message": "unknown action"}))
            continue
        channel = str(msg["channel"]).lower()
        confirm = {"success": True, "message": f"Successfully subscribed to channel: {channel}"}
        await ws.send(json.dumps(confirm))
        await ws.send(json.dumps({"channel": channel, "message": {"pad": "x" * (2 * CAP)}}))


@pytest.fixture(scope="module")
def loop() -> Iterator[Loop]:
    with wire_loop() as loop:
        yield loop


def _diagnose(base: HttpServer, ws_url: str) -> Diagnosis:
    with Client(base.url, ws_url, KEY, SECRET) as client:
        return diagnose(client, payload_timeout=0.2, timeout=2, max_response_bytes=CAP)


@pytest.mark.timeout(30)
def test_a_message_over_the_streams_size_stops_the_check_with_a_row(loop: Loop) -> None:
    d = _diagnose(loop.http(rest), loop.ws(oversized))
    row = d["check: WebSocket"]
    assert (row.status, row.observed) == ("unknown", "too large"), row
    assert f"larger than max_message_bytes={CAP}" in row.note and "1009" in row.note
    # the wrong token's refusal was still told apart (the close came before any message)
    assert d["stream.refusal_kind"].observed == "close"


@pytest.mark.timeout(30)
def test_a_redirected_upgrade_is_refused_and_said(loop: Loop) -> None:
    elsewhere = loop.http(lambda req: answer(404, {"message": "not here"}))
    target = f"ws://127.0.0.1:{elsewhere.port}/elsewhere"

    def portal(req: Request) -> bytes:
        if req.headers.get("upgrade", "").lower() == "websocket":
            return answer(302, b"", {"Location": f"{target}?from=/?token={TOKEN}"})
        return rest(req)

    gateway = loop.http(portal)
    d = _diagnose(gateway, gateway.ws_url)
    assert elsewhere.requests == []  # nothing was sent where the redirect pointed
    for check in ("WebSocket refusal", "WebSocket"):
        row = d[f"check: {check}"]
        assert (row.status, row.observed) == ("unknown", "failed"), row
        assert f"redirected the WebSocket upgrade to {target} (its query not shown)" in row.note
        assert "(HTTP 302)" in row.note and TOKEN not in row.note
    # a redirect is no refusal of the token
    assert d["stream.refusal_kind"].status == "unknown"
    assert d["stream.refusal_http_statuses"].status == "unknown"
