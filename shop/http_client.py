"""A tool backend that talks to an HTTP order service (the second backend of the demo order system).

``CSAGENT_TOOLS=shop.http_client:http_backend`` with ``CSAGENT_ORDER_SERVICE_URL=http://host:port``
selects it. It serves the same declared tools as the SQLite toolbox (:mod:`shop.decls`) over the
routes of :mod:`shop.http_service`, with the standard library's ``urllib``:

* arguments are validated against the tool's model first (aliases accepted; a bad argument or
  one naming the user is a 400 without any request);
* every request has a timeout per socket operation and the whole call a deadline of
  ``DEADLINE_FACTOR`` times it (→ 408; for a write the message says the outcome is unknown);
* HTTP errors become result codes (400/403/404/422 as they are, 504 → 408, other 4xx/5xx →
  500), an unreachable service or a body that is not the expected JSON → 502;
* ``call`` never raises.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote, urlencode

from shop.decls import REGISTRY
from tools.backend import failure, run_with_timeout, success
from tools.registry import ArgumentError, ToolRegistry
from tools.types import (
    CODE_BAD_ARGS,
    CODE_ERROR,
    CODE_FORBIDDEN,
    CODE_NOT_FOUND,
    CODE_REJECTED,
    CODE_TIMEOUT,
    CODE_UNAVAILABLE,
    ToolResult,
    ToolSpec,
)

logger = logging.getLogger(__name__)

URL_ENV = "CSAGENT_ORDER_SERVICE_URL"
DEADLINE_FACTOR = 2.0
MSG_UNAVAILABLE = "订单系统暂时无法连接，请稍后再试或转人工客服"
MSG_TIMEOUT = "查询超时，请稍后再试"
MSG_WRITE_TIMEOUT = "办理请求超时，结果暂未确认，请稍后查询订单或转人工客服"
MSG_BAD_REPLY = "订单系统返回了无法识别的结果，请稍后再试或转人工客服"
_PASS_THROUGH = {400: CODE_BAD_ARGS, 403: CODE_FORBIDDEN, 404: CODE_NOT_FOUND, 422: CODE_REJECTED,
                 408: CODE_TIMEOUT, 504: CODE_TIMEOUT}


def _route(name: str, user: str, args: dict[str, Any]) -> tuple[str, str, dict[str, Any] | None]:
    """Return (method, path, JSON body) for one tool call of the demo order service."""
    base = f"/v1/users/{quote(user, safe='')}"
    order = quote(str(args.get("order_id", "")), safe="")
    if name == "order_lookup":
        return "GET", f"{base}/orders/{order}" if order else f"{base}/orders", None
    if name == "logistics_tracking":
        return "GET", f"{base}/orders/{order}/shipment", None
    if name == "order_cancel":
        return "POST", f"{base}/orders/{order}/cancel", {}
    if name == "after_sales_apply":
        return "POST", f"{base}/orders/{order}/after-sales", {k: args[k] for k in ("kind", "reason")}
    query = urlencode({k: v for k, v in args.items() if v is not None})
    return "GET", f"{base}/products?{query}", None


class HttpOrderBackend:
    """The demo order tools served by an HTTP order service."""

    def __init__(self, base_url: str, *, timeout: float = 5.0,
                 registry: ToolRegistry = REGISTRY) -> None:
        """Talk to the service at ``base_url`` (``http://host:port``).

        Raises:
            ValueError: ``base_url`` is not an http(s) URL or ``timeout`` is not positive.

        """
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"order service URL must start with http:// or https://, got {base_url!r}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.registry = registry
        self._specs = registry.specs()

    def specs(self) -> list[ToolSpec]:
        """Return the declared tools."""
        return list(self._specs)

    def call(self, name: str, args: dict[str, Any], *, user_id: str) -> ToolResult:
        """Run ``name`` for ``user_id`` against the service; never raises."""
        if name not in self.registry:
            return failure(name, CODE_NOT_FOUND, f"没有名为 {name} 的功能，当前可用：{'、'.join(self.registry.names())}")
        if not isinstance(user_id, str) or not user_id.strip():
            return failure(name, CODE_FORBIDDEN, "未获取到登录用户身份，无法办理")
        try:
            clean = self.registry.validate(name, args)
        except ArgumentError as exc:
            return failure(name, CODE_BAD_ARGS, exc.customer_message)
        method, path, body = _route(name, user_id.strip(), clean)
        # urllib's timeout bounds each socket operation; this bounds the whole call (a service
        # that drips its reply byte by byte); an exception inside becomes a 500 result.
        result = run_with_timeout(name, lambda: self._request(name, method, path, body),
                                  self.timeout * DEADLINE_FACTOR)
        if result["code"] == CODE_TIMEOUT and method == "POST":
            return failure(name, CODE_TIMEOUT, MSG_WRITE_TIMEOUT)
        return result

    def _request(self, name: str, method: str, path: str, body: dict[str, Any] | None) -> ToolResult:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8") if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json",
                                                  "Accept": "application/json"})
        write = method == "POST"
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except TimeoutError:
            logger.warning("order service %s timed out after %.1fs", name, self.timeout)
            return failure(name, CODE_TIMEOUT, MSG_WRITE_TIMEOUT if write else MSG_TIMEOUT)
        except (urllib.error.URLError, ConnectionError, OSError) as exc:
            if isinstance(getattr(exc, "reason", None), TimeoutError | socket.timeout):
                return failure(name, CODE_TIMEOUT, MSG_WRITE_TIMEOUT if write else MSG_TIMEOUT)
            logger.warning("order service unreachable for %s: %s", name, type(exc).__name__)
            return failure(name, CODE_UNAVAILABLE, MSG_UNAVAILABLE)
        return self._result(name, status, raw, write)

    def _result(self, name: str, status: int, raw: bytes, write: bool) -> ToolResult:
        try:
            payload = json.loads(raw.decode("utf-8"))
            if not isinstance(payload, dict) or not isinstance(payload.get("message", ""), str):
                raise ValueError("not an object with a message")
        except ValueError:
            logger.warning("order service answered %s with an unreadable body (HTTP %s)", name, status)
            return failure(name, CODE_UNAVAILABLE, MSG_BAD_REPLY)
        message, data = str(payload.get("message") or ""), payload.get("data")
        if status == 200:
            if data in (None, "", [], {}):
                return failure(name, CODE_NOT_FOUND, "未查询到相关结果")
            return success(name, data, message)
        code = _PASS_THROUGH.get(status, CODE_ERROR)
        if code == CODE_TIMEOUT and write:
            message = MSG_WRITE_TIMEOUT
        return failure(name, code, message or MSG_BAD_REPLY, data)


def http_backend(settings: Any) -> HttpOrderBackend:
    """Return the HTTP backend (the ``CSAGENT_TOOLS=shop.http_client:http_backend`` factory).

    The service URL comes from the settings' ``order_service_url`` when it has one, else
    ``CSAGENT_ORDER_SERVICE_URL``; the timeout from ``tool_timeout``.

    Raises:
        ValueError: No URL configured, or a malformed one.

    """
    url = getattr(settings, "order_service_url", None) or os.environ.get(URL_ENV, "").strip()
    if not url:
        raise ValueError(f"{URL_ENV} is not set (the order service's base URL, e.g. http://127.0.0.1:8090)")
    return HttpOrderBackend(str(url), timeout=float(getattr(settings, "tool_timeout", 5.0)))
