"""The first node of every turn: reset per-turn fields, take the question, carry facts forward."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage

from graph.state import EVIDENCE_RESET, State
from nodes.facts import merge_facts, message_text, relevant_facts, user_stated_facts


def start_turn(state: State) -> dict[str, Any]:
    """Reset per-turn fields; set ``question`` and the facts that bear on it.

    Raises:
        ValueError: when the conversation has no customer message.

    """
    messages = state.get("messages") or []
    humans = [m for m in messages if isinstance(m, HumanMessage)]
    if not humans:
        raise ValueError("a turn needs a customer (human) message")
    question = message_text(humans[-1]).strip()
    history = messages[: messages.index(humans[-1])]
    known = list(state.get("known_facts") or [])
    for message in history:  # the customer's own earlier words (never the assistant's)
        if isinstance(message, HumanMessage):
            known = merge_facts(known, user_stated_facts(message_text(message)))
    facts = relevant_facts(question, known, history)
    return {
        "question": question, "facts": facts,
        "known_facts": merge_facts(known, user_stated_facts(question)),
        "evidence": EVIDENCE_RESET, "tool_calls": [], "tool_plan": [], "queries": [],
        "pending_action": None, "draft": "", "feedback": [], "reflections": 0,
        "verification": {}, "citations": [], "answer": "", "status": "answered",
        "fail_reason": None, "llm_error": None, "needs_kb": False, "answered_by": "agent",
        "route": "answer", "intent": "", "domain": "", "confidence": 0.0,
        "boundary_reason": "", "action_label": "",
    }
