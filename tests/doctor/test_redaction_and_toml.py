"""The doctor's output stays secret-free and writable: a service that echoes the API secret
through its own JSON/URL encoder never shows it in the diagnosis, and values or notes
holding control characters still give profile lines and files that load back."""

from __future__ import annotations

import json
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from toolkit.client._client import Client
from toolkit.doctor import Diagnosis, Row, diagnose
from toolkit.doctor._report import Redactor
from toolkit.profile import DEFAULT_PROFILE, dump_profile, dumps_profile, load_profile

#: a secret with characters every usual encoder escapes (``/``, ``< > &``, ``+ =``, é)
SECRET = "Zm9v/YmFy+c2V<j>&cmV0==é"


def forms(secret: str) -> dict[str, str]:
    """``secret`` as the usual encoders write it inside a JSON string or a URL."""
    ascii_json = json.dumps(secret)[1:-1]
    plain_json = json.dumps(secret, ensure_ascii=False)[1:-1]
    go = plain_json
    for char in "<>&":
        go = go.replace(char, f"\\u{ord(char):04x}")
    return {
        "raw": secret,
        "json": ascii_json,
        "json-unicode": plain_json,
        "php": ascii_json.replace("/", "\\/"),
        "go": go,
        "go-upper": go.replace("\\u003c", "\\u003C").replace("\\u003e", "\\u003E"),
        "quote": quote(secret, safe=""),
        "quote_plus": quote_plus(secret),
    }


@pytest.mark.parametrize("form", [pytest.param(f, id=n) for n, f in forms(SECRET).items()])
def test_redactor_hides_encoded_secrets(form: str) -> None:
    redact = Redactor([SECRET])
    assert redact(f"listing answered 400: secret {form} refused") == (
        "listing answered 400: secret *** refused"
    )


class PhpEchoService:
    """Signs in (a wrong secret is refused with 401), and answers every GET with a 400 whose
    body echoes the secret the way PHP's ``json_encode`` writes it (``/`` as ``\\/``,
    non-ASCII as ``\\u00e9``)."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def _send(self, status: int, payload: object) -> None:
                data = json.dumps(payload).replace("/", "\\/").encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if sent.get("apiSecret") == SECRET:
                    self._send(200, {"token": "tok-echo-0123456789", "expiresAt": 4102444800})
                else:
                    self._send(401, {"message": f"apiSecret {sent.get('apiSecret')} refused"})

            def do_GET(self) -> None:
                self._send(400, {"message": f"key with secret {SECRET} may not read this"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def php_echo() -> Iterator[PhpEchoService]:
    service = PhpEchoService()
    service.thread.start()
    try:
        yield service
    finally:
        service.server.shutdown()
        service.server.server_close()


def test_a_secret_echoed_php_style_never_reaches_the_diagnosis(php_echo: PhpEchoService) -> None:
    with Client(php_echo.base_url, api_key="demo-key", api_secret=SECRET) as client:
        d = diagnose(client, payload_timeout=0.1, timeout=2.0)
    listing = d["check: listing"]
    assert listing.status == "unknown" and "may not read this" in listing.note
    assert "***" in listing.note  # the echo reached the diagnosis, hidden
    shown = "\n".join([d.to_text(), d._repr_html_(), str(d.comments()), dumps_profile(d.profile())])
    wrong = SECRET + "-doctor-wrong"
    for secret in (SECRET, wrong):
        for name, form in forms(secret).items():
            assert form not in shown, f"secret ({name}) shown: {form}"


# ------------------------------------------------ control characters in what is written

AWKWARD = "pong\x7f \x1b[31m\x00\x85 \u2028 end"


def _diagnosis_with_control_characters() -> Diagnosis:
    rows = [
        Row(
            "stream.keepalive_reply_value",
            "pong",
            AWKWARD,
            "differs",
            AWKWARD,
            note="reply seen: \x1b[31mred\x1b[0m\x7f\x9b",
        ),
        Row("listing.id_field", "id", "id", "match", "id", note="fields: id,\x0bname\x00"),
    ]
    return Diagnosis(assumed=DEFAULT_PROFILE, rows=rows)


def test_a_profile_line_with_control_characters_is_valid_toml() -> None:
    row = _diagnosis_with_control_characters()["stream.keepalive_reply_value"]
    section, _, line = row.line.partition("] ")
    assert section == "[stream"
    assert tomllib.loads(line) == {"keepalive_reply_value": AWKWARD}


def test_the_written_profile_loads_back_whatever_the_service_showed(tmp_path: Path) -> None:
    d = _diagnosis_with_control_characters()
    target = dump_profile(d.profile(), tmp_path / "observed.toml", comments=d.comments())
    observed = load_profile(target)
    assert observed.stream.keepalive_reply_value == AWKWARD
    assert observed == d.profile()
    assert "\\u001B[31mred" in target.read_text(encoding="utf-8")  # the note, shown escaped
