"""Structured tool results and tool specs, shared by the shop backend and the graph."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

# Result codes: 0 ok; 404 not found / empty; 403 not the caller's; 400 bad arguments;
# 408 timeout; 422 the request is understood but not allowed by the rules (e.g. after-sales
# outside the 7-day window, cancelling a shipped order); 429 loop breaker cut the call off;
# 500 the tool raised.
CODE_OK = 0
CODE_BAD_ARGS = 400
CODE_FORBIDDEN = 403
CODE_NOT_FOUND = 404
CODE_TIMEOUT = 408
CODE_REJECTED = 422
CODE_LOOP = 429
CODE_ERROR = 500


class ToolResult(TypedDict):
    """What every tool returns; ``valid`` is False whenever ``data`` must not be stated as fact."""

    code: int
    data: Any
    valid: bool
    source: str  # the tool name, e.g. "order_lookup"
    timestamp: float  # unix seconds
    message: str  # a plain Chinese sentence saying what happened (for the observation / the customer)


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """A tool that really exists: the capability boundary is the set of registered specs."""

    name: str
    description: str  # Chinese, one line, shown to the customer in "what I can do"
    parameters: dict[str, Any] = field(default_factory=dict)  # JSON schema of the arguments
    write: bool = False  # changes data: needs the high-risk confirmation step
    capabilities: tuple[str, ...] = ()  # action labels it covers, e.g. ("refund", "return")
