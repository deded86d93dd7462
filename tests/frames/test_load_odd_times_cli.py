"""``toolkit load`` against a service on 127.0.0.1 whose fetchOrder answers carry a NaN,
Infinity or 1e300 time (the simulator never sends one): one odd order is loaded with that
time null and a warning naming it; a service whose every time is so is one line naming
``orders.timestamp_unit``, never a pyarrow traceback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import pytest

from toolkit.cli import main

T0_MS = 1_793_491_200_000

#: order id -> the literal written as its updatedAt
ODD: dict[str, str] = {}


def _body(oid: str) -> bytes:
    order = {
        "id": oid,
        "exchange": "x",
        "symbol": "BTC/BRL",
        "side": "buy",
        "type": "limit",
        "status": "OPEN",
        "amount": "1",
        "limitPrice": "100",
        "createdAt": T0_MS,
        "updatedAt": "@",
    }
    return json.dumps(order).replace('"@"', ODD.get(oid, str(T0_MS))).encode()


class _Service(BaseHTTPRequestHandler):
    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # the sign-in
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        expires = int(time.time() * 1000) + 3_600_000
        self._answer(200, json.dumps({"token": "t", "expiresAt": expires}).encode())

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path != "/orders/fetchOrder":
            self._answer(404, b'{"message": "no such route"}')
            return
        self._answer(200, _body(parse_qs(url.query)["orderId"][0]))

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Service)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    for name in ("TOOLKIT_ENV", "TOOLKIT_WS_URL", "TOOLKIT_PROFILE_ID", "TOOLKIT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("TOOLKIT_BASE_URL", base_url)
    monkeypatch.setenv("TOOLKIT_API_KEY", "demo")
    monkeypatch.setenv("TOOLKIT_API_SECRET", "demo-secret")
    ODD.clear()
    try:
        yield base_url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _load(tmp_path: Path, ids: list[str]) -> int:
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("\n".join(ids) + "\n")
    out = tmp_path / "out"
    return main(["load", "--ids-file", str(ids_file), "--out", str(out), "--no-progress"])


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "1e300"])
def test_one_order_with_a_time_that_is_no_time_is_loaded_with_it_null(
    service: str, literal: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ODD["o-2"] = literal
    with pytest.warns(RuntimeWarning, match=r"1 value\(s\) of updatedAt .*'o-2'"):
        assert _load(tmp_path, ["o-1", "o-2", "o-3"]) == 0
    orders = pd.read_parquet(tmp_path / "out" / "orders.parquet")
    assert orders["id"].tolist() == ["o-1", "o-2", "o-3"]
    assert orders["updatedAt"].isna().tolist() == [False, True, False]
    assert "Traceback" not in capsys.readouterr().err


def test_a_service_whose_every_time_is_no_time_is_one_line(
    service: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ODD.update({"o-1": "NaN", "o-2": "1e300"})
    assert _load(tmp_path, ["o-1", "o-2"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "updatedAt of 2 of 2 orders" in err and "orders.timestamp_unit" in err
    assert not (tmp_path / "out").exists()
