"""The LLM rewriter: 1–3 retrieval queries in the knowledge base's policy wording."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from strategies.llm.prompts import REWRITE_SYSTEM, REWRITE_USER
from strategies.llm.schemas import RewrittenQueries
from strategies.llm.structured import structured_call
from strategies.protocols import Queries, StepFailed, Turn
from strategies.rules.facts import render_facts
from strategies.rules.rewrite import MAX_QUERIES


class LLMRewriter:
    """Rewrite with the chat model; the original question stays query 1."""

    def __init__(self, llm: BaseChatModel) -> None:
        self.llm = llm

    def rewrite(self, turn: Turn) -> Queries:
        """Return the question and the model's queries (at most ``MAX_QUERIES``)."""
        question = turn.question["text"]
        outcome = structured_call(self.llm, RewrittenQueries, [
            SystemMessage(REWRITE_SYSTEM),
            HumanMessage(REWRITE_USER.format(facts=render_facts(turn.facts), question=question))])
        if outcome.value is None:
            raise StepFailed(f"rewrite: {outcome.error}")
        queries = [question, *(q.strip() for q in outcome.value.queries if q.strip())]
        return Queries(queries=list(dict.fromkeys(queries))[:MAX_QUERIES])
