"""Typed graph state: the narrow input, the full working state, and the output a backend reads.

Contract (other packages rely on these names):
- Evidence items are dicts: ``{"id", "kind": "chunk"|"tool", "doc_id", "title", "text",
  "source", "version", "effective_date", "superseded": bool, "conflict": bool, "scores": {...}}``;
  tool evidence ids look like ``tool:order_lookup#1`` and carry ``"result"`` (the ToolResult).
- ``verification`` is ``{"overall": "pass"|"fail"|"need_recheck", "claims": [{"claim", "status":
  "supported"|"unsupported"|"unknown", "evidence_ids", "reason"}], "checks": [...]}``.
- ``status`` is one of ``answered | refused | handoff | needs_confirmation``.
- Per-turn fields are reset by the first node of every turn (``start_turn``); only
  ``messages`` and ``known_facts`` carry across turns (``facts`` is recomputed from them).
- Status while an interrupt is pending: ``needs_confirmation`` (confirm payload) or ``handoff``
  (handoff payload); the node that routes into the interrupt sets it, so ``get_state`` shows
  it. After the human agent's reply is delivered the status is ``answered`` with
  ``answered_by="human"`` (the reply is the human's, not verified by the agent); after a
  confirmation the status is ``answered`` (yes: the write result is reported, no: nothing is
  changed and the answer says so).
- A question the knowledge base does not cover ends ``refused`` with ``fail_reason
  "no_evidence"`` and the fixed reply 「当前知识库中没有找到相关信息」 plus a human offer;
  out-of-scope or blacklisted questions end ``refused`` (``out_of_scope``); an action with no
  tool ends ``refused`` (``no_capability``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

Status = Literal["answered", "refused", "handoff", "needs_confirmation"]
Route = Literal["answer", "tool", "confirm", "refuse", "clarify", "handoff", "chitchat"]
FailReason = Literal["no_evidence", "conflicts_with_evidence", "tool_failure", "low_confidence",
                     "out_of_scope", "no_capability", "llm_error", "reflection_exhausted"]
EVIDENCE_RESET = "__reset__"


def reduce_evidence(
    existing: list[dict[str, Any]] | None, new: list[dict[str, Any]] | str | None
) -> list[dict[str, Any]]:
    """Merge evidence de-duplicated by id.

    The string ``EVIDENCE_RESET`` (or a list starting with ``{"id": EVIDENCE_RESET}``) clears
    it first.
    """
    existing = list(existing or [])
    if new is None:
        return existing
    if new == EVIDENCE_RESET:
        return []
    items = list(new) if not isinstance(new, str) else []
    if items and items[0].get("id") == EVIDENCE_RESET:
        existing, items = [], items[1:]
    seen = {item["id"]: i for i, item in enumerate(existing)}
    for item in items:
        if item["id"] in seen:
            existing[seen[item["id"]]] = item
        else:
            seen[item["id"]] = len(existing)
            existing.append(item)
    return existing


class InputState(TypedDict):
    """What a caller sends: the conversation so far (normally just the new user message)."""

    messages: Annotated[list[AnyMessage], add_messages]


class OutputState(TypedDict, total=False):
    """What a chat backend reads after a turn."""

    status: Status
    answer: str
    citations: list[dict[str, Any]]  # [{"id", "title", "source", "version"}]
    trace_id: str
    fail_reason: str | None
    verification: dict[str, Any]
    answered_by: Literal["agent", "human"]


class State(InputState, OutputState, total=False):
    """The full working state of one conversation thread."""

    question: str
    facts: list[str]  # facts from earlier turns that bear on the current question
    route: Route
    intent: str
    domain: str
    confidence: float
    boundary_reason: str
    queries: list[str]
    evidence: Annotated[list[dict[str, Any]], reduce_evidence]
    tool_calls: list[dict[str, Any]]  # [{"name", "args", "result"}] for this turn
    pending_action: dict[str, Any] | None  # write action awaiting confirmation
    draft: str
    feedback: list[str]  # unsupported claims fed back to generation
    reflections: int  # reflection rounds used in this turn (bounded by Context.max_reflections)
    node_latency_ms: dict[str, float]
    known_facts: list[dict[str, str]]  # carried across turns: {"kind", "value", "source"}
    tool_plan: list[dict[str, Any]]  # [{"name", "args"}] planned by the boundary router
    action_label: str  # the action the customer asked for, in Chinese (e.g. 申请退款)
    needs_kb: bool  # also retrieve policy evidence after the tool calls
    llm_error: str | None  # why an LLM step fell back to the offline path (last one this turn)
