"""The first node of every turn: reset per-turn fields, take the question, analyse it once."""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from contracts.state import State, replace_evidence
from strategies.deps import Deps
from strategies.rules.answer import question_terms
from strategies.rules.facts import (
    merge_facts,
    message_text,
    relevant_facts,
    render_fact,
    user_stated_facts,
)
from strategies.rules.question import analyze_question, respell_question, vocabulary_for


def start_turn(state: State, deps: Deps | None = None) -> State:
    """Reset per-turn fields; set ``question``, the facts that bear on it and its ``analysis``.

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
    vocab = vocabulary_for(deps.retriever) if deps is not None else None  # [answer] KB regime terms
    rendered = [render_fact(f) for f in facts]
    analysis = analyze_question(question, rendered, vocab)
    embedder = getattr(deps.retriever, "embedder", None) if deps is not None else None
    spelt = respell_question(question, analysis, vocab, embedder)  # [answer] 「押进」 → the KB's 「押金」
    if spelt != question:
        analysis = analyze_question(spelt, rendered, vocab)
    analysis["terms"] = question_terms(spelt)  # the extractive answerer's view, same step
    return {
        "question": question, "analysis": analysis, "facts": facts,
        "known_facts": merge_facts(known, user_stated_facts(question)),
        "evidence": replace_evidence([]), "tool_calls": [], "tool_plan": [], "queries": [],
        "pending_action": None, "draft": "", "feedback": [], "reflections": 0,
        "verification": {}, "citations": [], "answer": "", "status": "answered",
        "fail_reason": None, "llm_error": None, "needs_kb": False, "answered_by": "agent",
        "route": "answer", "intent": "", "domain": "", "confidence": 0.0,
        "boundary_reason": "", "action_label": "",
    }
