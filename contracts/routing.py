"""Route, status and fail-reason vocabularies, and the router's decision."""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

from contracts.tools import PendingAction, ToolCallPlan

Status = Literal["answered", "refused", "handoff", "needs_confirmation"]
Route = Literal["answer", "tool", "confirm", "refuse", "clarify", "handoff", "chitchat"]
FailReason = Literal["no_evidence", "conflicts_with_evidence", "tool_failure", "low_confidence",
                     "out_of_scope", "no_capability", "llm_error", "reflection_exhausted",
                     "internal_error"]
FAIL_REASONS: tuple[FailReason, ...] = (
    "no_evidence", "conflicts_with_evidence", "tool_failure", "low_confidence", "out_of_scope",
    "no_capability", "llm_error", "reflection_exhausted", "internal_error")


class RouteDecision(TypedDict):
    """What a router decided for one customer message (the boundary node's state update)."""

    route: Route
    domain: str
    intent: str
    confidence: float
    boundary_reason: str
    status: NotRequired[Status]
    fail_reason: NotRequired[FailReason | None]
    action_label: NotRequired[str]
    tool_plan: NotRequired[list[ToolCallPlan]]
    pending_action: NotRequired[PendingAction | None]
    needs_kb: NotRequired[bool]
    llm_error: NotRequired[str | None]
