"""The analysed question: computed once per turn, read by every later step.

``strategies.rules.question.analyze_question`` builds it in the first node of a turn and the
graph stores it in state as ``analysis``. The asked slot comes from the question's form (its
interrogative pattern), never from its topic; qualifiers are what narrows the answer (a region,
a member tier, a product category, a payment method, a period, a version, a regime).
"""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

Slot = Literal["date", "duration", "amount", "count", "person_org", "place", "yesno",
               "procedure", "reason", "none"]
SLOTS: tuple[Slot, ...] = ("date", "duration", "amount", "count", "person_org", "place", "yesno",
                           "procedure", "reason", "none")
QualifierKind = Literal["region", "tier", "category", "payment", "period", "version", "regime"]
Bound = Literal["max", "min", ""]
QUALIFIER_KINDS: tuple[QualifierKind, ...] = ("region", "tier", "category", "payment", "period",
                                              "version", "regime")
ALTERNATIVES = "|"  # a term written as alternatives (「澳门|港澳线」, 「收费|收取」): any of them binds


class QuestionView(TypedDict):
    """The question as the extractive scorer compares it (``normalize_for_compare`` forms).

    Attributes:
        compare: The question through ``normalize_for_compare``, lower-cased.
        bigrams: Its CJK/alphanumeric character bigrams, question fillers left out (sorted).
        asked_types: The answer types its form asks for (duration, amount, count, clock, yesno).
        slot_kinds: The regions, payment methods and tiers it names, by kind (lower case).

    """

    compare: str
    bigrams: list[str]
    asked_types: list[str]
    slot_kinds: dict[str, list[str]]


class QuestionTerms(QuestionView):
    """:class:`QuestionView` plus the weighted terms the extractive answerer looks for.

    Attributes:
        gate_terms: Content terms for the coverage gate (jieba search mode, out-of-dictionary
            guesses split or down-weighted), weight 1.0 (or less for a guess).
        answer_terms: Content terms for sentence scoring; the named qualifiers weigh more.

    """

    gate_terms: dict[str, float]
    answer_terms: dict[str, float]


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
        terms: The extractive answerer's lexical view (``strategies.rules.answer.question_terms``),
            computed in the same step as the rest.
        anchors: The words the asked slot attaches to (the predicate or noun next to the
            interrogative: 「寄回」 in 「几天内寄回」, 「运费」 in 「运费多少」); an answering value must
            stand with one of them.
        bound: ``max`` when the question asks for an upper bound (「最多」「最高」「封顶」), ``min``
            for a lower bound (「最少」「最低」「起」), else ``""``.
        measure: The classifier the question counts in (「岁」 of 「多少岁」, 「张」 of 「几张」), or ``""``.
        per: The unit of the rate an amount or count question asks for (「年」 of 「一年多少钱」,
            「天」 of 「每天最多付多少」), or ``""``.
        excluded: Qualifier values the question negates (「Plus」 of 「我不是Plus」): evidence
            scoped to one of them does not answer.
        written: The customer's money wording and places read as the knowledge base writes them
            (「收钱」 → 「收费|收取」, a city → the city or the knowledge base's group holding it,
            joined by :data:`ALTERNATIVES`), so the coverage gate reads the same words as the
            answerability gate.

    """

    text: str
    norm: str
    tokens: list[str]
    slot: Slot
    subject_terms: list[str]
    qualifiers: dict[str, list[str]]
    order_ids: list[str]
    parts: list[str]
    terms: NotRequired[QuestionTerms]
    anchors: list[str]
    bound: Bound
    measure: str
    per: NotRequired[str]
    excluded: NotRequired[list[str]]
    written: NotRequired[dict[str, str]]


def empty_question(text: str = "") -> Question:
    """Return the analysis of a question with nothing in it (slot ``none``)."""
    return Question(text=text, norm=text, tokens=[], slot="none", subject_terms=[], qualifiers={},
                    order_ids=[], parts=[], anchors=[], bound="", measure="", per="", excluded=[])
