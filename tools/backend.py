"""The tool backend protocol and the helpers every backend shares (results, timeouts).

A backend is anything with ``specs()`` and ``call(name, args, *, user_id) -> ToolResult``:
``call`` never raises, bounds its own running time, reads the customer only from ``user_id``
(never from ``args``), and answers another customer's record exactly like a missing one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from contracts.tools import ToolBackend
from tools.types import CODE_ERROR, CODE_OK, CODE_TIMEOUT, ToolResult

__all__ = ["ToolBackend", "failure", "is_backend", "run_with_timeout", "success"]

logger = logging.getLogger(__name__)

MSG_TIMEOUT = "查询超时，请稍后再试"
MSG_ERROR = "系统暂时无法完成该操作，请稍后再试或转人工客服"


def is_backend(obj: object) -> bool:
    """Return True when ``obj`` has callable ``specs`` and ``call`` (a :class:`ToolBackend`)."""
    return callable(getattr(obj, "specs", None)) and callable(getattr(obj, "call", None))


def failure(name: str, code: int, message: str, data: Any = None) -> ToolResult:
    """Return an invalid result (``valid=False``): ``data`` must not be stated as fact."""
    return ToolResult(code=code, data=data, valid=False, source=name, timestamp=time.time(),
                      message=message)


def success(name: str, data: Any, message: str = "") -> ToolResult:
    """Return a valid result."""
    return ToolResult(code=CODE_OK, data=data, valid=True, source=name, timestamp=time.time(),
                      message=message or "查询成功")


def run_with_timeout(name: str, work: Callable[[], ToolResult], timeout: float,
                     on_timeout: Callable[[], None] | None = None) -> ToolResult:
    """Run ``work`` in a daemon thread; return its result, 408 after ``timeout`` s, 500 if it raised.

    Args:
        name: The tool name (for the result and the log).
        work: Produces the result; may raise (the error type is logged, never shown).
        timeout: Seconds to wait.
        on_timeout: Called when the wait ran out (e.g. to make a write roll back).

    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # everything becomes a result
            box["error"] = exc

    worker = threading.Thread(target=run, name=f"tool-{name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        if on_timeout is not None:
            on_timeout()
        logger.warning("tool %s timed out after %.1fs", name, timeout)
        return failure(name, CODE_TIMEOUT, MSG_TIMEOUT)
    if "error" in box:
        logger.error("tool %s raised %s", name, type(box["error"]).__name__)
        return failure(name, CODE_ERROR, MSG_ERROR)
    value: ToolResult = box["value"]
    return value
