"""Secrets never leak: the API secret and operational tokens are absent from every log
record (DEBUG, httpx included), every repr and every exception's text."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from toolkit.client._client import Client
from toolkit.errors import (
    AuthenticationError,
    BadRequest,
    InvalidResponse,
    OrderNotFound,
    RouteNotActive,
    ServiceError,
    ToolkitError,
    TransportError,
    scrub,
)
from toolkit.sim import Simulator

SECRET = "demo-secret"


async def no_sleep(delay: float) -> None:
    return None


def test_secrets_absent_from_logs_reprs_and_errors(
    fresh_sim: Simulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    errors: list[ToolkitError] = []
    tokens: list[str] = []
    state = fresh_sim.state
    assert state is not None
    order_id = fresh_sim.control.order_ids()[0]
    client = fresh_sim.client(sleep=no_sleep)
    with client:
        tokens.append(client.token())
        client.fetch_order(order_id)
        state.tokens.revoke_all()  # forces a 401 and a renewal
        client.fetch_order(order_id)
        tokens.append(client.token())
        created = client.create_limit_order("BTC/BRL", "buy", "1000", amount="0.001")
        client.cancel_limit_order(created["id"])
        client.cancel_limit_order(created["id"])  # 409 path
        with pytest.raises(OrderNotFound) as nf:
            client.fetch_order("l-999999-none")
        errors.append(nf.value)
        fresh_sim.control.set_knobs(limit_routes_active=False)
        with pytest.raises(RouteNotActive) as rna:
            client.list_limit_orders()
        errors.append(rna.value)
        texts = [repr(client), repr(client.settings), repr(client.auth)]
    bad = Client(
        fresh_sim.base_url, api_key="demo", api_secret="not-" + SECRET, profile=fresh_sim.profile
    )
    with bad, pytest.raises(AuthenticationError) as auth_error:
        bad.token()
    errors.append(auth_error.value)
    dead = Client(
        "http://127.0.0.1:9",
        api_key="demo",
        api_secret=SECRET,
        max_retries=0,
        profile=fresh_sim.profile,
    )
    with dead, pytest.raises(TransportError) as transport_error:
        dead.token()
    errors.append(transport_error.value)
    texts.append(repr(dead))

    assert len(set(tokens)) == 2 and all(tokens)
    for error in errors:
        texts += [str(error), repr(error), error.body or "", error.url or ""]
        cause = error.__cause__
        while cause is not None:
            texts.append(str(cause))
            cause = cause.__cause__
    for record in caplog.records:
        texts.append(record.getMessage())
    assert any("fetchOrder" in t for t in texts)  # the log really captured requests
    secrets = [SECRET, *tokens]
    for text in texts:
        for secret in secrets:
            assert secret not in text, f"secret leaked in: {text[:200]}"


# ------------------------------------------------ a service that echoes a secret encoded

#: a base64-style secret with every character some encoder escapes: ``/`` (PHP ``\/``),
#: ``< > &`` (Go's HTML-safe ``\u003c``), non-ASCII (``ensure_ascii``), ``+ =`` (URL)
ECHOED = "Zm9v/YmFy+c2V<j>&cmV0==é"


def encoded_forms(secret: str) -> dict[str, str]:
    """``secret`` as the usual encoders write it inside a JSON string or a URL."""
    ascii_json = json.dumps(secret)[1:-1]
    plain_json = json.dumps(secret, ensure_ascii=False)[1:-1]

    def html_safe(text: str, upper: bool) -> str:
        for char in "<>&":
            text = text.replace(char, f"\\u{ord(char):04X}" if upper else f"\\u{ord(char):04x}")
        return text

    return {
        "raw": secret,
        "json": ascii_json,
        "json-unicode": plain_json,
        "php": ascii_json.replace("/", "\\/"),
        "php-unicode": plain_json.replace("/", "\\/"),
        "go": html_safe(plain_json, upper=False),
        "html-safe-upper": html_safe(ascii_json.replace("/", "\\/"), upper=True),
        "quote": quote(secret, safe=""),
        "quote-path": quote(secret),
        "quote_plus": quote_plus(secret),
    }


FORMS = encoded_forms(ECHOED)


@pytest.mark.parametrize("form", list(FORMS))
def test_scrub_hides_every_common_encoding_of_a_secret(form: str) -> None:
    text = f'{{"message": "bad secret {FORMS[form]} (key demo-key)"}}'
    cleaned = scrub(text, [ECHOED, None, "ab"])
    assert cleaned == '{"message": "bad secret *** (key demo-key)"}'


def assert_no_secret(texts: list[str]) -> None:
    for text in texts:
        for name, form in FORMS.items():
            assert form not in text, f"secret ({name}) leaked in: {text[:300]}"


class EchoService:
    """A service on 127.0.0.1 whose answers echo the API secret through ``encoder``:
    sign-in answers ``signin_status`` (200: a token), the listing ``listing_status`` (200:
    an HTML page, not JSON)."""

    def __init__(self) -> None:
        self.encoder = "php"
        self.signin_status = 200
        self.listing_status = 400
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def _send(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if service.signin_status == 200:
                    self._send(200, b'{"token": "tok-echo-0123456789", "expiresAt": 4102444800}')
                else:
                    message = f"apiSecret {sent['apiSecret']} refused"
                    self._send(service.signin_status, service.body(message))

            def do_GET(self) -> None:
                body = service.body(f"credentials (secret {ECHOED}) may not list")
                if service.listing_status == 200:
                    body = b"<html>" + body
                self._send(service.listing_status, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def body(self, message: str) -> bytes:
        """``{"message": ...}`` with the secret as this service's encoder writes it."""
        plain = json.dumps({"message": message.replace(ECHOED, "@SECRET@")}, ensure_ascii=False)
        return plain.replace("@SECRET@", FORMS[self.encoder]).encode()

    def __enter__(self) -> EchoService:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def echo() -> Iterator[EchoService]:
    with EchoService() as service:
        yield service


def _texts_of(error: ToolkitError) -> list[str]:
    return [str(error), repr(error), error.body or "", error.message]


@pytest.mark.parametrize("encoder", ["php", "json", "go", "html-safe-upper", "quote_plus"])
def test_an_echoed_secret_never_reaches_errors_or_logs(
    echo: EchoService, encoder: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    echo.encoder = encoder
    texts: list[str] = []
    with Client(echo.base_url, api_key="demo-key", api_secret=ECHOED, max_retries=0) as client:
        with pytest.raises(BadRequest) as refused:  # a route's 400 echoes it
            client.list_limit_orders()
        assert "may not list" in str(refused.value)  # the message is still told
        texts += _texts_of(refused.value)
        echo.listing_status = 200  # a 2xx that is not JSON quotes its body
        with pytest.raises(InvalidResponse) as garbled:
            client.list_limit_orders()
        texts += _texts_of(garbled.value)
    for status, kind in ((401, AuthenticationError), (400, ServiceError)):
        echo.signin_status = status  # the sign-in's refusals echo it too
        client = Client(echo.base_url, api_key="demo-key", api_secret=ECHOED)
        with client, pytest.raises(kind) as signin:
            client.token()
        texts += _texts_of(signin.value)
    texts += [record.getMessage() for record in caplog.records]
    assert any("***" in t for t in texts)  # the echo really reached the errors, hidden
    assert_no_secret(texts)


def test_the_cli_never_prints_an_echoed_secret(
    echo: EchoService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    from toolkit.cli import main

    for name in ("TOOLKIT_ENV", "TOOLKIT_WS_URL", "TOOLKIT_PROFILE_ID", "TOOLKIT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOLKIT_BASE_URL", echo.base_url)
    monkeypatch.setenv("TOOLKIT_API_KEY", "demo-key")
    monkeypatch.setenv("TOOLKIT_API_SECRET", ECHOED)
    code = main(["load", "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and "the service refused the input" in err
    assert_no_secret([err])
