"""The HTTP order-service backend: the same results as SQLite, timeouts, HTTP errors as result codes."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from shop.http_client import MSG_UNAVAILABLE, MSG_WRITE_TIMEOUT, HttpOrderBackend, http_backend
from shop.http_service import OrderServer, make_server
from shop.tools import ShopToolbox
from tools.types import (
    CODE_BAD_ARGS,
    CODE_ERROR,
    CODE_FORBIDDEN,
    CODE_NOT_FOUND,
    CODE_OK,
    CODE_REJECTED,
    CODE_TIMEOUT,
    CODE_UNAVAILABLE,
)

U1 = "u1001"


def serve(server: ThreadingHTTPServer) -> Iterator[ThreadingHTTPServer]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[OrderServer]:
    yield from serve(make_server(tmp_path / "http.sqlite"))  # type: ignore[misc]


@pytest.fixture
def sqlite(tmp_path: Path) -> ShopToolbox:
    return ShopToolbox(tmp_path / "local.sqlite")


def comparable(result: Any) -> dict[str, Any]:
    return {k: result[k] for k in ("code", "data", "valid", "source", "message")}


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("order_lookup", {}),
    ("order_lookup", {"order_id": "SO2026112500103"}),
    ("order_lookup", {"order_id": "so2026112000102"}),
    ("logistics_tracking", {"order_id": "SO2026112500103"}),
    ("logistics_tracking", {"order_id": "SO2026112800104"}),  # not shipped: 404 with data
    ("order_lookup", {"order_id": "SO2026112300203"}),  # another user's: 403, same message as missing
    ("order_lookup", {"order_id": "SO2099010100999"}),  # missing
    ("product_recommend", {"query": "降噪耳机", "max_price": 600}),
    ("product_recommend", {"query": "火箭发动机"}),
    ("order_cancel", {"order_id": "SO2026112500103"}),  # in transit: 422
    ("order_cancel", {"order_id": "SO2026112900105"}),  # unpaid: cancelled
    ("after_sales_apply", {"order_id": "SO2026112000102", "kind": "return", "reason": "不想要了"}),
    ("after_sales_apply", {"order_id": "SO2026101500101", "kind": "return", "reason": "不想要了"}),
    ("nope", {}),
]


def test_http_backend_gives_the_sqlite_results(service: OrderServer, sqlite: ShopToolbox) -> None:
    client = HttpOrderBackend(service.url)
    assert [s.name for s in client.specs()] == [s.name for s in sqlite.specs()]
    for name, args in CALLS:
        over_http, local = client.call(name, dict(args), user_id=U1), sqlite.call(name, dict(args), user_id=U1)
        assert comparable(over_http) == comparable(local), (name, args)
    codes = [client.call(n, dict(a), user_id="u1002")["code"] for n, a in CALLS[:2]]
    assert codes == [CODE_OK, CODE_FORBIDDEN]


def test_arguments_are_validated_before_any_request(tmp_path: Path) -> None:
    client = HttpOrderBackend("http://127.0.0.1:9", timeout=0.5)  # nothing listens: no request may go out
    bad = client.call("order_cancel", {"order_id": "SO2026112900105", "user_id": "u1002"}, user_id=U1)
    assert bad["code"] == CODE_BAD_ARGS and "user_id" in bad["message"]
    assert client.call("order_cancel", {"order_id": "12"}, user_id=U1)["code"] == CODE_BAD_ARGS
    assert client.call("order_lookup", {}, user_id=" ")["code"] == CODE_FORBIDDEN


def test_aliases_reach_the_service(service: OrderServer) -> None:
    result = HttpOrderBackend(service.url).call("order_lookup", {"orderId": "SO2026112500103"}, user_id=U1)
    assert result["valid"] and result["data"]["order_id"] == "SO2026112500103"


def test_unreachable_service_is_502_not_an_exception() -> None:
    result = HttpOrderBackend("http://127.0.0.1:9", timeout=0.5).call("order_lookup", {}, user_id=U1)
    assert result["code"] == CODE_UNAVAILABLE and not result["valid"] and result["message"] == MSG_UNAVAILABLE


def test_slow_service_times_out(tmp_path: Path) -> None:
    for server in serve(make_server(tmp_path / "slow.sqlite", delay=1.5)):
        client = HttpOrderBackend(server.url, timeout=0.3)  # type: ignore[attr-defined]
        read = client.call("order_lookup", {}, user_id=U1)
        write = client.call("order_cancel", {"order_id": "SO2026112900105"}, user_id=U1)
        assert read["code"] == write["code"] == CODE_TIMEOUT
        assert write["message"] == MSG_WRITE_TIMEOUT  # the outcome of a write is not claimed


class _Scripted(BaseHTTPRequestHandler):
    """Answers every request with the server's scripted (status, body)."""

    def do_GET(self) -> None:  # noqa: N802
        status, body = self.server.reply  # type: ignore[attr-defined]
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize(("status", "body", "code"), [
    (500, {"data": None, "message": "boom"}, CODE_ERROR),
    (503, b"<html>down</html>", CODE_UNAVAILABLE),
    (200, b"not json", CODE_UNAVAILABLE),
    (200, {"data": [], "message": ""}, CODE_NOT_FOUND),
    (422, {"data": {"status": "运输中"}, "message": "不能取消"}, CODE_REJECTED),
    (404, {"data": None, "message": "没有"}, CODE_NOT_FOUND),
    (504, {"data": None, "message": "慢"}, CODE_TIMEOUT),
    (418, {"data": None, "message": "teapot"}, CODE_ERROR),
])
def test_http_errors_become_result_codes(status: int, body: Any, code: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    server.reply = (status, body)  # type: ignore[attr-defined]
    for _ in serve(server):
        host, port = server.server_address[:2]
        result = HttpOrderBackend(f"http://{host!s}:{port}", timeout=2).call("order_lookup", {}, user_id=U1)
        assert result["code"] == code and not result["valid"]
        assert result["message"]


def test_factory_reads_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    class S:
        tool_timeout = 2.0

    monkeypatch.delenv("CSAGENT_ORDER_SERVICE_URL", raising=False)
    with pytest.raises(ValueError, match="CSAGENT_ORDER_SERVICE_URL"):
        http_backend(S())
    monkeypatch.setenv("CSAGENT_ORDER_SERVICE_URL", "http://127.0.0.1:8090/")
    backend = http_backend(S())
    assert backend.base_url == "http://127.0.0.1:8090" and backend.timeout == 2.0
    with pytest.raises(ValueError, match="http"):
        HttpOrderBackend("ftp://x")


class _Drip(BaseHTTPRequestHandler):
    """Sends a valid reply one byte at a time, each byte well within the socket timeout."""

    def do_GET(self) -> None:  # noqa: N802
        import time

        raw = json.dumps({"data": {"orders": []}, "message": "ok"}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        for byte in raw:
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(0.1)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_dripping_service_hits_the_call_deadline() -> None:
    import time

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Drip)
    for _ in serve(server):
        host, port = server.server_address[:2]
        started = time.monotonic()
        result = HttpOrderBackend(f"http://{host!s}:{port}", timeout=0.5).call("order_lookup", {}, user_id=U1)
        assert result["code"] == CODE_TIMEOUT
        assert time.monotonic() - started < 2.0  # the deadline (2 x 0.5 s), not the 3+ s drip
