"""Typed graph state: the narrow input, the full working state, and the output a backend reads.

- ``status`` is one of ``answered | refused | handoff | needs_confirmation``.
- Per-turn fields are reset by the first node of every turn (``start_turn``); only
  ``messages`` and ``known_facts`` carry across turns (``facts`` and ``analysis`` are
  recomputed from them).
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

from typing import Annotated, Any, Literal, cast

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from contracts.evidence import EVIDENCE_RESET, Evidence
from contracts.facts import Fact
from contracts.question import Question
from contracts.routing import FailReason, Route, Status
from contracts.tools import PendingAction, ToolCallPlan, ToolCallRecord
from contracts.verification import Verification

__all__ = ["EVIDENCE_RESET", "Citation", "InputState", "OutputState", "State", "reduce_evidence",
           "replace_evidence"]


def reduce_evidence(existing: list[Evidence] | None,
                    new: list[Evidence] | str | None) -> list[Evidence]:
    """Merge evidence de-duplicated by id.

    The string ``EVIDENCE_RESET`` (or a list starting with ``{"id": EVIDENCE_RESET}``, see
    :func:`replace_evidence`) clears it first.
    """
    merged = list(existing or [])
    if new is None:
        return merged
    if new == EVIDENCE_RESET:
        return []
    items = list(new) if not isinstance(new, str) else []
    if items and items[0].get("id") == EVIDENCE_RESET:
        merged, items = [], items[1:]
    seen = {item["id"]: i for i, item in enumerate(merged)}
    for item in items:
        if item["id"] in seen:
            merged[seen[item["id"]]] = item
        else:
            seen[item["id"]] = len(merged)
            merged.append(item)
    return merged


def replace_evidence(items: list[Evidence]) -> list[Evidence]:
    """Return an evidence update that replaces this turn's evidence with ``items``."""
    marker = cast(Evidence, {"id": EVIDENCE_RESET})
    return [marker, *items]


class Citation(TypedDict):
    """A cited evidence item as the chat backend shows it."""

    id: str
    title: str
    source: str
    version: str


class InputState(TypedDict):
    """What a caller sends: the conversation so far (normally just the new user message)."""

    messages: Annotated[list[AnyMessage], add_messages]


class OutputState(TypedDict, total=False):
    """What a chat backend reads after a turn."""

    status: Status
    answer: str
    citations: list[Citation]
    fail_reason: FailReason | None
    verification: Verification | dict[str, Any]  # {} until the verifier ran this turn
    answered_by: Literal["agent", "human"]


class State(OutputState, total=False):
    """The full working state of one conversation thread (every key optional: nodes return parts)."""

    messages: Annotated[list[AnyMessage], add_messages]
    question: str
    analysis: Question  # the question analysed once per turn (start_turn)
    facts: list[Fact]  # facts from earlier turns that bear on the current question
    route: Route
    intent: str
    domain: str
    confidence: float
    boundary_reason: str
    queries: list[str]
    evidence: Annotated[list[Evidence], reduce_evidence]
    tool_calls: list[ToolCallRecord]  # this turn's calls
    pending_action: PendingAction | None  # write action awaiting confirmation
    draft: str
    gate: dict[str, Any] | None  # the answerability gate's decision behind the draft (for the trace)
    feedback: list[str]  # unsupported claims fed back to generation
    reflections: int  # reflection rounds used in this turn (bounded by Context.max_reflections)
    known_facts: list[Fact]  # carried across turns
    tool_plan: list[ToolCallPlan]  # planned by the boundary router
    action_label: str  # the action the customer asked for, in Chinese (e.g. 申请退款)
    needs_kb: bool  # also retrieve policy evidence after the tool calls
    llm_error: str | None  # why an LLM step fell back to the offline path (last one this turn)
