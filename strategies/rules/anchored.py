"""Code-anchored claims: answer sentences that are evidence text, near verbatim, with values bound.

The LLM claim checker of a small model can call a sentence "unsupported" that the evidence
states word for word (issue 10: the 0.5B verifier vetoed code-verified extractive answers, and
the turns ended in handoff where offline answered). The rule, in both directions general:

- A sentence is **anchored** when the code checks passed it (values present and bound, the
  regime and the tier right, no claimed action, no hostile text) and it is a near-verbatim copy
  of ONE evidence unit it rests on (and says something: ``CONTENT_MIN`` content bigrams): at least ``EXTRACTIVE_MIN`` of its content bigrams occur in
  that unit, and the code checks find no problem with it against that unit alone.
- An LLM verdict on an anchored sentence is advisory: recorded, never a veto. An LLM verdict
  counts when it is about a sentence that is not anchored (the model's own wording, a synthesis
  across units), or when it cannot be located in one sentence of the answer at all (then it is
  taken at its word: the conservative side).
- When every sentence of an answer is anchored, asking the LLM cannot change the outcome, so it
  is not asked.

Constants: ``EXTRACTIVE_MIN``, ``MATCH_MIN``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contracts.verification import ClaimResult
from strategies.rules.answerability import Unit, evidence_units
from strategies.rules.claims import bigram_coverage, content_bigrams
from strategies.rules.verify import check_sentence

EXTRACTIVE_MIN = 0.9  # share of a sentence's content bigrams that must occur in one unit
CONTENT_MIN = 4  # content bigrams a sentence needs to count as evidence text (「无」 does not)
MATCH_MIN = 0.5  # share of an LLM claim's bigrams in an answer sentence to locate it there


def is_anchored(claim: ClaimResult, units: Mapping[str, Unit], question: str = "") -> bool:
    """Return True when the code passed ``claim`` and it copies one of its supporting units.

    Args:
        claim: A code claim result (``source`` absent or ``"code"``) with ``unit_ids``.
        units: The turn's evidence units by id.
        question: The customer's question (context words, as in the code checks).

    """
    if claim.get("source", "code") != "code" or claim["status"] != "supported" \
            or len(content_bigrams(claim["claim"])) < CONTENT_MIN:
        return False
    for unit_id in claim.get("unit_ids") or []:
        unit = units.get(unit_id)
        if unit is None or unit.superseded:
            continue
        if bigram_coverage(claim["claim"], unit.text) >= EXTRACTIVE_MIN \
                and not check_sentence(claim["claim"], [unit.text], question):
            return True
    return False


def anchored_claims(claims: Sequence[ClaimResult], evidence: Sequence[Mapping[str, Any]],
                    question: str = "") -> list[str]:
    """Return the texts of the code claims that are anchored (see the module doc)."""
    units = {u.id: u for u in evidence_units(evidence, include_tools=True)}
    return [c["claim"] for c in claims if is_anchored(c, units, question)]


def located_sentences(llm_claim: str, sentences: Sequence[str]) -> list[str]:
    """Return the answer sentences an LLM claim is about (the best bigram matches; [] if none).

    A claim without content bigrams, or whose best match covers less than ``MATCH_MIN`` of it,
    is located nowhere; ties return every best sentence.
    """
    if not content_bigrams(llm_claim):
        return []
    scored = [(bigram_coverage(llm_claim, s), s) for s in sentences]
    best = max((score for score, _ in scored), default=0.0)
    return [s for score, s in scored if score == best] if best >= MATCH_MIN else []


def split_llm_verdicts(llm_claims: Sequence[ClaimResult], code_claims: Sequence[ClaimResult],
                       anchored: Sequence[str]) -> tuple[list[ClaimResult], list[ClaimResult]]:
    """Split the LLM's claims into (counted, advisory).

    A ``supported`` verdict is counted as it is; an ``unsupported``/``unknown`` verdict is
    advisory only when the sentence(s) it is located in are all anchored, counted otherwise.
    """
    sentences = [c["claim"] for c in code_claims]
    anchored_set = set(anchored)
    counted: list[ClaimResult] = []
    advisory: list[ClaimResult] = []
    for claim in llm_claims:
        where = located_sentences(claim["claim"], sentences) if claim["status"] != "supported" else []
        if where and all(s in anchored_set for s in where):
            advisory.append({**claim, "reason": f"{claim['reason']}（advisory: the code verified "
                                                f"this sentence as evidence text）".strip()})
        else:
            counted.append(claim)
    return counted, advisory
