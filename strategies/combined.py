"""The explicit combinations of rules and LLM strategies, and :func:`select`, the one place that chooses.

Offline (no chat model) every step uses its rules strategy. With a chat model:

- router: :class:`GuardedRouter`: the hard guards (an explicit request for a human, a
  blacklisted domain, a bare yes) are checked before the model, since their verdict would
  overrule any route it gives (no call is spent on it), and so is a turn where every route the
  model could propose is the rules' own or would be overruled; otherwise the LLM router decides
  (:mod:`strategies.llm.router`), and the rules router decides only when the model's route
  contradicts the profile (a refusal of a whitelisted subject, a tool or confirm route for a
  question naming no profile action), when the model is unsure, or when the call fails.
- rewriter and answerer: :class:`FallbackRewriter` / :class:`FallbackAnswerer`: the LLM
  strategy; the rules strategy only when it fails (the reason is kept as ``llm_error``).
- claim checker: :class:`CodeThenLLMChecker`: the code checks always, then (when the run
  allows it, ``Context.llm_verify``) the LLM's per-claim verdicts, merged; on sentences the
  code verified as evidence text the LLM's verdict is advisory (no veto).
- tool planner: the LLM planner (registry schemas offered with ``bind_tools``), the rules
  planner when it fails (:class:`strategies.llm.tools.FallbackToolPlanner`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from langchain_core.language_models import BaseChatModel

from contracts.evidence import Evidence
from contracts.routing import RouteDecision
from contracts.verification import Verification, overall_of
from strategies.llm.answer import LLMAnswerer
from strategies.llm.rewrite import LLMRewriter
from strategies.llm.router import LLMRouter, RouterCalibration
from strategies.llm.tools import FallbackToolPlanner, LLMToolPlanner
from strategies.llm.verify import LLMClaimChecker
from strategies.protocols import (
    Answerer,
    AnswerRequest,
    CheckRequest,
    ClaimChecker,
    Draft,
    Embedder,
    Queries,
    Rewriter,
    Router,
    StepFailed,
    ToolPlanner,
    Turn,
)
from strategies.rules.anchored import anchored_claims, split_llm_verdicts
from strategies.rules.answer import RulesAnswerer
from strategies.rules.answerability import GatedAnswerer  # [answer]
from strategies.rules.rewrite import RulesRewriter
from strategies.rules.router import RulesRouter, guard_decision
from strategies.rules.tools import RulesToolPlanner
from strategies.rules.verify import RulesClaimChecker


class GuardedRouter:
    """Hard guards, then the primary router; the fallback router when it fails or declines.

    The primary (the LLM router) returns None when its route is overruled (a contradiction of
    the profile, or unsure); a :class:`StepFailed` is kept as ``llm_error``.
    """

    def __init__(self, primary: Router, fallback: RulesRouter, probe: RulesRouter | None = None) -> None:
        self.primary = primary
        self.fallback = fallback
        # The rules' route, to know whether the model could change it, planned without an LLM:
        # the fallback's planner may be the LLM planner, and a call spent only to decide whether
        # to make another call is the cost this check is there to save. No embedder either: the
        # nearest intent example only labels an ``answer`` route's domain, never changes the route.
        self.probe = probe or RulesRouter(RulesToolPlanner())

    def route(self, turn: Turn) -> RouteDecision:
        """Return the guards' decision, else the primary's, else the fallback's.

        A primary that cannot change the fallback's route (``can_change``: every route it could
        propose is the rules' one or would be overruled) is not asked.
        """
        guarded = guard_decision(turn)
        if guarded is not None:
            return guarded
        can_change = getattr(self.primary, "can_change", None)
        if can_change is not None and not can_change(self.probe.route(turn), turn):
            ruled = self.fallback.route(turn)
            note = f"[LLM router not asked: no route it could propose would change {ruled['route']}]"
            return {**ruled, "boundary_reason": f"{ruled.get('boundary_reason', '')} {note}".strip()}
        before = list(getattr(self.primary, "overruled", None) or [])
        try:
            decision = self.primary.route(turn)
        except StepFailed as failed:
            return {**self.fallback.route(turn), "llm_error": failed.reason}
        if decision is not None:
            return decision
        ruled = self.fallback.route(turn)
        overruled = list(getattr(self.primary, "overruled", None) or [])
        if overruled != before:  # the model's proposal and why it was not taken: in the trace
            ruled = {**ruled, "boundary_reason": f"{ruled.get('boundary_reason', '')}"
                                                 f" [{overruled[-1]}]".strip()}
        return ruled


class FallbackRewriter:
    """The primary rewriter; the fallback's queries when it fails."""

    def __init__(self, primary: Rewriter, fallback: Rewriter) -> None:
        self.primary = primary
        self.fallback = fallback

    def rewrite(self, turn: Turn) -> Queries:
        """Return the primary's queries, else the fallback's with the failure reason."""
        try:
            return self.primary.rewrite(turn)
        except StepFailed as failed:
            return replace(self.fallback.rewrite(turn), llm_error=failed.reason)


class FallbackAnswerer:
    """The primary answerer; the fallback's draft when it fails."""

    def __init__(self, primary: Answerer, fallback: Answerer) -> None:
        self.primary = primary
        self.fallback = fallback

    def answer(self, request: AnswerRequest) -> Draft:
        """Return the primary's draft, else the fallback's with the failure reason."""
        try:
            return self.primary.answer(request)
        except StepFailed as failed:
            return replace(self.fallback.answer(request), llm_error=failed.reason)


class CodeThenLLMChecker:
    """The code checks, then the LLM claim check; a claim the code rejects stays unsupported.

    An LLM ``unsupported`` fails the answer and ``unknown`` makes it ``need_recheck`` — except
    on a sentence the code verified as evidence text (:mod:`strategies.rules.anchored`: a near
    verbatim copy of one evidence unit, values bound): there the LLM verdict is advisory
    (``Verification["advisory"]``), and when every sentence is such text the LLM is not asked.
    A failed LLM call is recorded as a failed ``llm_claims`` check and otherwise ignored. The
    LLM is asked only when the code checks found claims and the request allows it (``use_llm``),
    and, when ``llm_after_code_fail`` is False (the graph's verifier node), only about a draft the
    code checks passed.
    """

    def __init__(self, code: ClaimChecker, llm: ClaimChecker) -> None:
        self.code = code
        self.llm = llm

    def check(self, request: CheckRequest) -> Verification:
        """Return the merged verification."""
        first = self.code.check(request)
        if not request.use_llm or not first["claims"]:
            return first
        if first["overall"] == "fail" and not request.llm_after_code_fail:
            return first  # rejected already: an LLM verdict cannot change that (the graph's cost cut)
        anchored = anchored_claims(first["claims"], request.evidence, request.question)
        if len(anchored) == len(first["claims"]):  # evidence text only: the LLM cannot add
            return {**first, "checks": [*first["checks"], {"name": "llm_claims_not_needed", "ok": True}]}
        second = self.llm.check(request)
        counted, advisory = split_llm_verdicts(second["claims"], first["claims"], anchored)
        claims = [*first["claims"], *counted]
        out: Verification = {"overall": overall_of(claims), "claims": claims,
                             "checks": [*first["checks"], *second["checks"]]}
        if advisory:
            out["advisory"] = advisory
        return out


@dataclass(frozen=True, kw_only=True)
class Strategies:
    """The chosen strategy of every step (carried by ``Deps``)."""

    router: Router
    rewriter: Rewriter
    answerer: Answerer
    claim_checker: ClaimChecker
    tool_planner: ToolPlanner


def select(llm: BaseChatModel | None, *, embedder: Embedder | None = None,
           tool_planner: ToolPlanner | None = None,
           calibration: RouterCalibration | None = None) -> Strategies:
    """Return the strategies for a process: rules offline, the combinations above with an LLM.

    Args:
        llm: The chat model, or None for the offline mode.
        embedder: Query encoder for the rules router's nearest intent example.
        tool_planner: The tool planner (default: :class:`RulesToolPlanner`).
        calibration: The model's measured router thresholds (default: the profile's).

    """
    if tool_planner is not None:
        planner = tool_planner
    elif llm is not None:
        planner = FallbackToolPlanner(LLMToolPlanner(llm), RulesToolPlanner())
    else:
        planner = RulesToolPlanner()
    rules_router = RulesRouter(planner, embedder)
    if llm is None:
        return Strategies(router=rules_router, rewriter=RulesRewriter(), answerer=RulesAnswerer(),
                          claim_checker=RulesClaimChecker(), tool_planner=planner)
    return Strategies(
        router=GuardedRouter(LLMRouter(llm, planner, calibration=calibration), rules_router),
        rewriter=FallbackRewriter(LLMRewriter(llm), RulesRewriter()),
        answerer=FallbackAnswerer(GatedAnswerer(LLMAnswerer(llm)), RulesAnswerer()),  # [answer] code gate
        claim_checker=CodeThenLLMChecker(RulesClaimChecker(), LLMClaimChecker(llm)),
        tool_planner=planner)


def check_answer(question: str, answer: str, evidence: list[Evidence], *,
                 llm: BaseChatModel | None = None, write_succeeded: bool = False,
                 require_citations: bool = False) -> Verification:
    """Verify ``answer`` against ``evidence`` (the pure entry point of ``csagent verify``).

    Code checks always run; with ``llm`` the model's per-claim verdicts are merged in
    (:class:`CodeThenLLMChecker`).

    Args:
        question: The customer's question.
        answer: The answer to check (with 【来源:id】 tags, or none: then all evidence is used).
        evidence: Items with at least ``id`` and ``text`` (``superseded`` honoured when present).
        llm: Optional chat model for the claim-level check.
        write_succeeded: Whether a write tool succeeded this turn (allows 「已为您办理」).
        require_citations: Fail every factual sentence without a 【来源】 tag (the agent's own
            answers); off for answers generated elsewhere, which are checked against all evidence.

    """
    request = CheckRequest(question=question, answer=answer, evidence=evidence,
                           write_succeeded=write_succeeded, require_citations=require_citations,
                           use_llm=llm is not None)
    if llm is None:
        return RulesClaimChecker().check(request)
    return CodeThenLLMChecker(RulesClaimChecker(), LLMClaimChecker(llm)).check(request)
