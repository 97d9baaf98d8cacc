"""The loop breaker: cut off a tool called again with the same arguments within one turn.

Pure functions over the turn's call history (a list of ``{"name", "args", ...}`` dicts). Two
calls are identical when their names match and their arguments are equal after
canonicalisation (strings stripped, record ids (``*_id``) upper-cased, keys sorted, ``None``
values dropped), so ``{"order_id": " so2026110100123"}`` repeats ``{"order_id": "SO2026110100123"}``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from tools.types import CODE_LOOP, ToolResult

# A reply shown to the customer when the loop breaker stops a tool: the product's own offer of a
# human agent (the same offer as the no-answer reply's). No rule reads questions with it.
LOOP_MESSAGE = "同样的查询已重复多次，已停止重复调用；请换个问法，或转接人工客服"


def canonical_args(args: Mapping[str, Any] | None) -> str:
    """Return the canonical JSON text of a tool's arguments.

    Args:
        args: The arguments (``None`` counts as no arguments).

    Returns:
        Compact JSON with sorted keys; strings stripped, ``*_id`` values upper-cased, ``None`` dropped.

    """
    clean: dict[str, Any] = {}
    for key, value in (args or {}).items():
        if value is None:
            continue
        if isinstance(value, str):
            value = value.strip()
            if str(key).endswith("_id"):
                value = value.upper()
        clean[str(key)] = value
    return json.dumps(clean, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def count_calls(
    history: Sequence[Mapping[str, Any]], name: str, args: Mapping[str, Any] | None
) -> int:
    """Return how many calls in ``history`` are identical to ``name(args)``."""
    key = canonical_args(args)
    return sum(
        1
        for call in history
        if call.get("name") == name and canonical_args(call.get("args")) == key
    )


def is_repeated_call(
    history: Sequence[Mapping[str, Any]],
    name: str,
    args: Mapping[str, Any] | None,
    max_repeats: int = 2,
) -> bool:
    """Return whether the call must be cut off: it already appears ``max_repeats - 1`` times.

    With the default ``max_repeats=2`` the first call runs and an identical second call in the
    same turn is cut off; a call with different arguments is never affected.

    Args:
        history: The turn's earlier calls, each a mapping with ``name`` and ``args``.
        name: The tool about to be called.
        args: Its arguments.
        max_repeats: The occurrence (counting this one) at which identical calls are refused.

    Returns:
        True when the call should not run (use ``loop_breaker_result``).

    Raises:
        ValueError: ``max_repeats`` is smaller than 2 (every call would be cut off).

    """
    if max_repeats < 2:
        raise ValueError(f"max_repeats must be at least 2, got {max_repeats}")
    return count_calls(history, name, args) >= max_repeats - 1


def loop_breaker_result(name: str) -> ToolResult:
    """Return the observation recorded instead of running a repeated call (code 429)."""
    return ToolResult(
        code=CODE_LOOP,
        data=None,
        valid=False,
        source=name,
        timestamp=time.time(),
        message=LOOP_MESSAGE,
    )


class LoopBreaker:
    """A per-turn convenience wrapper: remembers the calls made and refuses identical repeats."""

    def __init__(self, max_repeats: int = 2) -> None:
        if max_repeats < 2:
            raise ValueError(f"max_repeats must be at least 2, got {max_repeats}")
        self.max_repeats = max_repeats
        self.history: list[dict[str, Any]] = []

    def check(self, name: str, args: Mapping[str, Any] | None) -> ToolResult | None:
        """Return a 429 result when ``name(args)`` must be cut off, else None (the call may run)."""
        if is_repeated_call(self.history, name, args, self.max_repeats):
            return loop_breaker_result(name)
        return None

    def record(self, name: str, args: Mapping[str, Any] | None) -> None:
        """Remember that ``name(args)`` was called in this turn."""
        self.history.append({"name": name, "args": dict(args or {})})
