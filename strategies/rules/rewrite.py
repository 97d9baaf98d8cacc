"""The rules rewriter: the question, then one normalised query expanded with policy terms and facts.

``COLLOQUIAL_EXPANSIONS`` (:mod:`strategies.rules.lexicon`) maps colloquial wording to the policy
terms the knowledge base uses; the carried-forward tier, region and payment method are added,
and an elliptical follow-up is prefixed with the previous question.
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts.facts import Fact, FactKind
from strategies.protocols import Queries, Turn
from strategies.rules.facts import fact_value
from strategies.rules.lexicon import COLLOQUIAL_EXPANSIONS
from strategies.rules.normalize import normalize_for_compare

MAX_QUERIES = 3
_EXPANDING_FACTS: tuple[FactKind, ...] = ("tier", "region", "payment")


def expand_query(question: str, facts: Sequence[Fact]) -> list[str]:
    """Return offline queries: the question, then one normalised + expanded query (if different).

    The expansion adds policy terms for colloquial wording, the relevant carried facts
    (region, payment method, tier) and, for an elliptical follow-up, the previous question.

    Args:
        question: The customer's question.
        facts: Carried-forward facts (see ``strategies.rules.facts.relevant_facts``).

    """
    norm = normalize_for_compare(question)
    terms = [t for key, expansion in COLLOQUIAL_EXPANSIONS.items() if key in norm for t in expansion]
    for kind in _EXPANDING_FACTS:
        value = fact_value(facts, kind)
        if value and value not in norm:
            terms.append(value)
    previous = fact_value(facts, "previous_question")
    parts = [previous or "", norm, *dict.fromkeys(t for t in terms if t not in norm)]
    expanded = " ".join(p for p in parts if p).strip()
    return [question] if expanded == question else [question, expanded]


class RulesRewriter:
    """The deterministic rewriter (offline mode and the LLM rewriter's fallback)."""

    def rewrite(self, turn: Turn) -> Queries:
        """Return the question and its expansion."""
        return Queries(queries=expand_query(turn.question["text"], turn.facts))
