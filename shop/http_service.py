"""A small local HTTP order service over the demo shop data (JSON in, JSON out).

``python -m shop.http_service --db PATH [--host 127.0.0.1] [--port 0]`` serves the demo
database and prints one line ``serving on http://HOST:PORT`` once it accepts connections. It
stands in for a shop's own order system in tests and demos; the agent talks to it through
:mod:`shop.http_client`. The caller (the agent's backend) passes the authenticated customer in
the path; the service answers another customer's order exactly like a missing one.

Routes (every response body is ``{"data": ..., "message": "..."}``):

=======  ============================================  ===========================================
GET      /v1/users/{user}/orders                       the customer's recent orders
GET      /v1/users/{user}/orders/{order}               one order
GET      /v1/users/{user}/orders/{order}/shipment      carrier, tracking number, events
POST     /v1/users/{user}/orders/{order}/cancel        cancel (writes)
POST     /v1/users/{user}/orders/{order}/after-sales   ``{"kind", "reason"}`` (writes)
GET      /v1/users/{user}/products?query=&category=&max_price=   in-stock recommendations
GET      /healthz                                      ``{"ok": true}``
=======  ============================================  ===========================================

Status codes: 200 ok, 400 bad arguments, 403/404 not found (not the caller's / missing),
422 not allowed by the rules, 504 the lookup timed out, 500 the service failed.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from shop.tools import ShopToolbox
from tools.types import CODE_OK, CODE_TIMEOUT

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024
_ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("GET", re.compile(r"^/v1/users/(?P<user>[^/]+)/orders$"), "order_lookup"),
    ("GET", re.compile(r"^/v1/users/(?P<user>[^/]+)/orders/(?P<order>[^/]+)$"), "order_lookup"),
    ("GET", re.compile(r"^/v1/users/(?P<user>[^/]+)/orders/(?P<order>[^/]+)/shipment$"),
     "logistics_tracking"),
    ("POST", re.compile(r"^/v1/users/(?P<user>[^/]+)/orders/(?P<order>[^/]+)/cancel$"),
     "order_cancel"),
    ("POST", re.compile(r"^/v1/users/(?P<user>[^/]+)/orders/(?P<order>[^/]+)/after-sales$"),
     "after_sales_apply"),
    ("GET", re.compile(r"^/v1/users/(?P<user>[^/]+)/products$"), "product_recommend"),
)


def http_status(code: int) -> int:
    """Return the HTTP status for a tool result code (0 → 200, 408 → 504, others as they are)."""
    if code == CODE_OK:
        return 200
    if code == CODE_TIMEOUT:
        return 504
    return code if 400 <= code < 600 else 500


class OrderServiceHandler(BaseHTTPRequestHandler):
    """Maps each route onto one tool of the demo toolbox."""

    server: OrderServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Log requests at debug level instead of writing to stderr."""
        logger.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        """Serve a read route."""
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        """Serve a write route."""
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        if self.server.delay:
            time.sleep(self.server.delay)
        url = urlsplit(self.path)
        if method == "GET" and url.path == "/healthz":
            self._send(200, {"ok": True})
            return
        for verb, pattern, tool in _ROUTES:
            match = pattern.match(url.path)
            if match and verb == method:
                args = self._args(method, url.query, match.groupdict())
                if args is None:
                    return
                user = unquote(match["user"])
                result = self.server.toolbox.call(tool, args, user_id=user)
                self._send(http_status(result["code"]),
                           {"data": result["data"], "message": result["message"]})
                return
        self._send(404, {"data": None, "message": f"no route {method} {url.path}"})

    def _args(self, method: str, query: str, parts: dict[str, str]) -> dict[str, Any] | None:
        """Return the tool arguments from path, query and body, or None after a 400 reply."""
        args: dict[str, Any] = {k: v[-1] for k, v in parse_qs(query).items()}
        if parts.get("order"):
            args["order_id"] = unquote(parts["order"])
        if method == "POST":
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._send(413, {"data": None, "message": "请求过大"})
                return None
            try:
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
            except ValueError:
                self._send(400, {"data": None, "message": "请求体不是合法的 JSON"})
                return None
            if not isinstance(body, dict):
                self._send(400, {"data": None, "message": "请求体必须是 JSON 对象"})
                return None
            args.update(body)
        return args

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status, HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "")
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class OrderServer(ThreadingHTTPServer):
    """The HTTP server holding the toolbox (and an optional artificial delay for tests)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], toolbox: ShopToolbox, *, delay: float = 0.0) -> None:
        """Bind ``address`` (port 0 picks a free port) and serve ``toolbox``."""
        super().__init__(address, OrderServiceHandler)
        self.toolbox = toolbox
        self.delay = delay

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Log a failed request (e.g. the client hung up) instead of printing a traceback."""
        logger.warning("order service: request from %s failed", client_address, exc_info=True)

    @property
    def url(self) -> str:
        """Return the base URL the server listens on."""
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


def make_server(db: str | Path, *, host: str = "127.0.0.1", port: int = 0,
                delay: float = 0.0, timeout: float = 5.0) -> OrderServer:
    """Return a bound (not yet serving) order service over the shop database ``db``."""
    return OrderServer((host, port), ShopToolbox(db, timeout=timeout), delay=delay)


def main(argv: list[str] | None = None) -> int:
    """Run the service until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m shop.http_service", description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True, help="the demo shop SQLite file (created when absent)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before each reply")
    args = parser.parse_args(argv)
    server = make_server(args.db, host=args.host, port=args.port, delay=args.delay)
    sys.stdout.write(f"serving on {server.url}\n")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
