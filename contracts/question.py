"""The analysed question: computed once per turn, read by every later step.

``strategies.rules.question.analyze_question`` builds it in the first node of a turn and the
graph stores it in state as ``analysis``. The asked slot comes from the question's form (its
interrogative pattern), never from its topic; qualifiers are what narrows the answer (a region,
a member tier, a product category, a payment method, a period, a version, a regime).
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

Slot = Literal["date", "duration", "amount", "count", "person_org", "place", "yesno",
               "procedure", "reason", "none"]
SLOTS: tuple[Slot, ...] = ("date", "duration", "amount", "count", "person_org", "place", "yesno",
                           "procedure", "reason", "none")
QualifierKind = Literal["region", "tier", "category", "payment", "period", "version", "regime"]
QUALIFIER_KINDS: tuple[QualifierKind, ...] = ("region", "tier", "category", "payment", "period",
                                              "version", "regime")


class Question(TypedDict):
    """One customer question, analysed.

    Attributes:
        text: The raw question.
        norm: Normalised text (width, traditional → simplified, Chinese numerals → digits, case).
        tokens: Content tokens of ``norm`` (jieba), question fillers removed.
        slot: What kind of value the question asks for (``none`` for statements, greetings and
            bare ids).
        subject_terms: The terms naming what the question is about (content tokens minus the
            interrogative words and the qualifiers).
        qualifiers: Qualifier kind → the values the question (or a carried-forward customer
            fact) names.
        order_ids: Order or ticket ids the question names.
        parts: The sub-questions of a multi-part question (empty for a single question).

    """

    text: str
    norm: str
    tokens: list[str]
    slot: Slot
    subject_terms: list[str]
    qualifiers: dict[str, list[str]]
    order_ids: list[str]
    parts: list[str]


def empty_question(text: str = "") -> Question:
    """Return the analysis of a question with nothing in it (slot ``none``)."""
    return Question(text=text, norm=text, tokens=[], slot="none", subject_terms=[], qualifiers={},
                    order_ids=[], parts=[])
