"""Query rewrite: 1–3 retrieval queries; the original question is always query 1."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from graph.context import Context
from graph.deps import Deps
from graph.state import State
from nodes.facts import fact_value
from nodes.lexicon import COLLOQUIAL_EXPANSIONS
from nodes.llm import structured_call
from nodes.normalize import normalize_for_compare
from nodes.prompts import REWRITE_SYSTEM, REWRITE_USER
from nodes.schemas import RewrittenQueries

MAX_QUERIES = 3


def expand_query(question: str, facts: list[str]) -> list[str]:
    """Return offline queries: the question, then one normalised + expanded query (if different).

    The expansion adds policy terms for colloquial wording, the relevant carried facts
    (region, payment method, tier) and, for an elliptical follow-up, the previous question.

    Args:
        question: The customer's question.
        facts: Carried-forward facts (see ``nodes.facts.relevant_facts``).

    """
    norm = normalize_for_compare(question)
    terms = [t for key, expansion in COLLOQUIAL_EXPANSIONS.items() if key in norm for t in expansion]
    for label in ("会员等级", "地区", "支付方式"):
        value = fact_value(facts, label)
        if value and value not in norm:
            terms.append(value)
    previous = fact_value(facts, "上一个问题")
    parts = [previous or "", norm, *dict.fromkeys(t for t in terms if t not in norm)]
    expanded = " ".join(p for p in parts if p).strip()
    return [question] if expanded == question else [question, expanded]


def rewrite_query(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Rewrite the question into retrieval queries (LLM when configured, else deterministic)."""
    question, facts = state["question"], state.get("facts") or []
    offline = expand_query(question, facts)
    if deps.llm is None:
        return {"queries": offline}
    outcome = structured_call(deps.llm, RewrittenQueries, [
        SystemMessage(REWRITE_SYSTEM),
        HumanMessage(REWRITE_USER.format(facts="；".join(facts) or "无", question=question))])
    if outcome.value is None:
        return {"queries": offline, "llm_error": f"rewrite: {outcome.error}"}
    queries = [question, *(q.strip() for q in outcome.value.queries if q.strip())]
    return {"queries": list(dict.fromkeys(queries))[:MAX_QUERIES]}
