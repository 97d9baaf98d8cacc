"""One protocol per decision step; each has a rules strategy and an LLM strategy.

A strategy that cannot produce its result (an LLM endpoint failed, its output was unusable)
raises :class:`StepFailed`; the explicit combinations in :mod:`strategies.combined` catch it,
run the fallback and record the reason in state (``llm_error``). Strategies are pure with
respect to the graph: they take typed inputs and return typed results; nodes adapt state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from contracts.evidence import Evidence
from contracts.facts import Fact
from contracts.profile import Profile, empty_profile
from contracts.question import Question
from contracts.routing import FailReason, RouteDecision
from contracts.tools import ToolCallPlan, ToolSpec
from contracts.verification import Verification


class StepFailed(Exception):
    """A strategy could not produce a result; ``reason`` goes to state as ``llm_error``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, kw_only=True)
class Turn:
    """What every decision step may read about the current turn."""

    question: Question  # the analysed question (``question["text"]`` is the raw text)
    facts: list[Fact] = field(default_factory=list)  # carried-forward facts that bear on it
    profile: Profile = field(default_factory=empty_profile)
    tools: tuple[ToolSpec, ...] = ()  # the registered tools (the capability boundary)
    vocab: Any = None  # [answer] strategies.rules.question.Vocabulary of the KB (answerability)


@dataclass(frozen=True, kw_only=True)
class AnswerRequest:
    """The inputs of answer generation for one round (first draft or after a reflection)."""

    turn: Turn
    queries: list[str]
    evidence: list[Evidence]
    feedback: list[str] = field(default_factory=list)  # claims the verifier rejected
    needs_kb: bool = False  # a tool turn that also asked about policy
    final_round: bool = False  # the last reflection round: no further verification retry follows


@dataclass(frozen=True, kw_only=True)
class Draft:
    """A draft answer (with 【来源:id】 tags) and why it is not a verified answer, if so.

    ``llm_error``: why an LLM answerer's result was replaced by the fallback's (combinations).
    ``gate``: the answerability gate's decision over the evidence, for the trace
    (:func:`strategies.rules.answerability.gate_summary`); None when no gate ran.
    """

    text: str
    fail_reason: FailReason | None = None
    llm_error: str | None = None
    gate: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class Queries:
    """Retrieval queries (the question first); ``llm_error`` as for :class:`Draft`."""

    queries: list[str]
    llm_error: str | None = None


@dataclass(frozen=True, kw_only=True)
class CheckRequest:
    """The inputs of a claim check."""

    question: str
    answer: str
    evidence: list[Evidence]
    write_succeeded: bool = False  # a write tool succeeded this turn (allows 「已为您办理」)
    require_citations: bool = False  # every factual sentence must carry a 【来源】 tag
    use_llm: bool = True  # per run (``Context.llm_verify``); LLM checkers skip when False
    llm_after_code_fail: bool = True  # [llm] False: no LLM claim check of a draft the code rejected
    analysis: Question | None = None  # [answer] the analysed question (binding, attribution)
    vocab: Any = None  # [answer] strategies.rules.question.Vocabulary of the KB


@dataclass(frozen=True, kw_only=True)
class ToolRequest:
    """The inputs of tool planning: the matched profile action and the order id, if any."""

    turn: Turn
    action: Mapping[str, Any]  # a profile action (``intent``, ``tool``, ``label``, ``args``)
    order_id: str | None = None


class Embedder(Protocol):
    """Encodes queries to normalised vectors (the rules router's nearest intent example)."""

    def embed_queries(self, texts: list[str]) -> Any:
        """Return an (n, d) float32 array of normalised vectors."""
        ...


class Router(Protocol):
    """Decide the route of a turn (answer, tool, confirm, refuse, clarify, handoff, chitchat)."""

    def route(self, turn: Turn) -> RouteDecision | None:
        """Return the decision, or None when this strategy cannot decide.

        Raises:
            StepFailed: the strategy failed (the caller falls back).

        """
        ...


class Rewriter(Protocol):
    """Turn the question into 1–3 retrieval queries; the original question is query 1."""

    def rewrite(self, turn: Turn) -> Queries:
        """Return the queries.

        Raises:
            StepFailed: the strategy failed (the caller falls back).

        """
        ...


class Answerer(Protocol):
    """Write a cited draft answer from this turn's evidence."""

    def answer(self, request: AnswerRequest) -> Draft:
        """Return the draft.

        Raises:
            StepFailed: the strategy failed (the caller falls back).

        """
        ...


class ClaimChecker(Protocol):
    """Check an answer's claims against the evidence they cite."""

    def check(self, request: CheckRequest) -> Verification:
        """Return the verification (claims, checks, overall)."""
        ...


class ToolPlanner(Protocol):
    """Plan the tool calls that answer a request for data or an action."""

    def plan(self, request: ToolRequest) -> list[ToolCallPlan]:
        """Return the planned calls (may be empty: nothing registered can serve it).

        Raises:
            StepFailed: the strategy failed (the caller falls back).

        """
        ...
