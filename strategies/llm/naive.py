"""Naive RAG with the same model: the "guards off" baseline of ``csagent eval --guards off``.

Retrieve, then one plain prompt: no boundary router, no question analysis or answerability
gate, no tool calls, no verifier, no reflection, no citation requirement. It exists only so the
evaluation can show, on the same cases and the same model, what the guards change
(issue 10.5); the product never answers this way.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from contracts.evidence import Evidence
from strategies.rules.evidence import hit_to_evidence

NAIVE_SYSTEM = "你是电商店铺的客服，请根据下面的资料用简体中文回答客户的问题。"
NAIVE_USER = "资料：\n{context}\n\n客户问题：{question}"


def naive_evidence(retriever: Any, question: str, *, k: int = 5) -> list[Evidence]:
    """Return the top-``k`` hybrid hits for the raw question (no rewrite, no hygiene screen)."""
    return [hit_to_evidence(hit) for hit in retriever.search(question, mode="hybrid", k=k)]


def naive_answer(llm: BaseChatModel, question: str, evidence: list[Evidence]) -> str:
    """Return the model's plain answer from the evidence texts (raises on endpoint failure)."""
    context = "\n\n".join(str(e.get("text", "")) for e in evidence)
    reply = llm.invoke([SystemMessage(NAIVE_SYSTEM),
                        HumanMessage(NAIVE_USER.format(context=context, question=question))])
    return str(reply.content or "").strip()
