"""The LLM router: the model decides the route; the rules overrule only contradictions and doubt.

Issue 7 (in LLM mode the LLM strategy decides) and issue 10 (never worse than offline) together:

- The model is asked for every turn that reaches it whose route it could change (the hard guards
  run before it, in :class:`strategies.combined.GuardedRouter`: their verdict would overrule any
  route; and a turn where every route the model could propose would be overruled below, or is
  the rules' own route, is not sent: :meth:`LLMRouter.can_change`).
- Its route stands unless it contradicts the profile or the model is unsure; then this router
  returns None and the rules router decides (:func:`overrule_reason`):
  a ``tool``/``confirm`` route for a question that names no profile action (a ``tool``/``confirm``
  route for one that does takes the rules' plan for that action: the model agrees that tools
  are needed, the registry and the rules say which call), a refusal of a question whose words or
  stated domain are on the profile's whitelist, or a route below its threshold.
- "Unsure" is measured, never self-reported: the probability is the endpoint's token
  probability of the route value (:func:`strategies.llm.structured.value_probability`; the
  llama.cpp server returns logprobs when ``top_logprobs`` is asked). Without logprobs the
  decision's ``confidence`` is 0.0 and the model's own number is used only as a veto (below
  the threshold → the rules decide), never reported as a probability.
- A failed call raises :class:`StepFailed`: the rules decide and the reason is kept.
- A **calibration** of the model (:class:`RouterCalibration`, written by
  ``python -m eval.router_calibration --out FILE``, loaded from ``CSAGENT_LLM_CALIBRATION``)
  replaces the profile's per-route thresholds with the ones measured for that model; a route it
  has no reliable threshold for (or never saw proposed) is never taken from the model. When the
  only routes the model may still take are the one the rules give anyway, the model cannot change
  the turn's route and is not asked (:meth:`LLMRouter.can_change`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from contracts.routing import RouteDecision
from strategies.llm.prompts import BOUNDARY_SYSTEM, BOUNDARY_USER
from strategies.llm.schemas import BoundaryDecision
from strategies.llm.structured import structured_call, value_probability
from strategies.protocols import Profile, StepFailed, ToolPlanner, Turn
from strategies.rules.facts import render_facts
from strategies.rules.router import RulesRouter, keyword_domain

NEVER = 1.0  # a threshold above this: the route is never taken from the model
ROUTES = ("answer", "tool", "confirm", "clarify", "refuse", "handoff", "chitchat")


class CalibrationError(ValueError):
    """A router calibration file that cannot be used (missing, not JSON, bad thresholds)."""


@dataclass(frozen=True)
class RouterCalibration:
    """Per-route thresholds measured for one model; a route without one is never taken from it."""

    thresholds: Mapping[str, float] = field(default_factory=dict)
    model: str = ""

    @classmethod
    def load(cls, path: Path | str) -> RouterCalibration:
        """Read ``{"model", "thresholds": {route: p}}`` (``eval.router_calibration --out``).

        Raises:
            CalibrationError: the file is missing, not JSON, or a threshold is not a number ≥ 0.

        """
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CalibrationError(f"cannot read router calibration {path}: {exc}") from None
        raw = data.get("thresholds") if isinstance(data, dict) else None
        if not isinstance(raw, dict):
            raise CalibrationError(f"{path}: no \"thresholds\" object")
        thresholds: dict[str, float] = {}
        for route, value in raw.items():
            if route not in ROUTES or isinstance(value, bool) or not isinstance(value, int | float) \
                    or value < 0:
                raise CalibrationError(f"{path}: bad threshold {route!r}: {value!r}")
            thresholds[route] = float(value)
        return cls(thresholds=thresholds, model=str(data.get("model") or ""))

    def threshold(self, route: str) -> float:
        """Return the route's calibrated threshold (above 1: never taken)."""
        return self.thresholds.get(route, NEVER + 0.01)

    def takeable(self) -> frozenset[str]:
        """Return the routes the model's proposal can ever be taken for."""
        return frozenset(r for r in ROUTES if self.threshold(r) <= NEVER)


def whitelisted(question: str, domain: str, profile: Profile) -> bool:
    """Return True when the question's words or the stated domain are on the profile's whitelist."""
    names = {str(d["domain"]).lower() for d in profile.get("whitelist", [])}
    return domain.strip().lower() in names or keyword_domain(question, profile["whitelist"]) is not None


def is_action_route(decision: RouteDecision | None) -> bool:
    """Return True when a rules decision serves a profile action (a plan, a clarification or no tool)."""
    if decision is None:
        return False
    return decision["route"] in ("tool", "confirm", "clarify") or decision.get("fail_reason") == "no_capability"


def overrule_reason(decision: BoundaryDecision, probability: float | None, turn: Turn,
                    ruled: RouteDecision | None = None,
                    calibration: RouterCalibration | None = None) -> str | None:
    """Return why the model's route is not taken (the rules decide then), or None to take it.

    ``ruled``: the rules' deterministic decision for the turn (asked only for a tool or
    confirm route: whether the question names a profile action). ``calibration``: the model's
    measured thresholds, in place of the profile's.
    """
    profile, question = turn.profile, turn.question["text"]
    threshold = (calibration.threshold(decision.route) if calibration is not None
                 else float(profile.get("thresholds", {}).get(decision.route, 0.5)))
    if decision.route in ("tool", "confirm") and not is_action_route(ruled):
        return f"LLM route {decision.route} but the question names no profile action"
    if decision.route == "refuse" and whitelisted(question, decision.domain, profile):
        return "LLM refusal of a whitelisted domain"
    if probability is not None and probability < threshold:
        return f"LLM route {decision.route} at p={probability:.2f} < {threshold}"
    if probability is None and decision.confidence < threshold:
        return f"LLM unsure of {decision.route} (no logprobs)"
    return None


class LLMRouter:
    """Route a turn with the chat model; raises :class:`StepFailed` when the call fails.

    Args:
        llm: The chat model.
        planner: The tool planner (for the rules' action routes).
        rules: The rules router that tells whether the question names a profile action and
            plans its call (default: one built on ``planner``).
        calibration: The model's measured per-route thresholds (default: the profile's).

    """

    def __init__(self, llm: BaseChatModel, planner: ToolPlanner, rules: RulesRouter | None = None,
                 calibration: RouterCalibration | None = None) -> None:
        self.llm = llm
        self.planner = planner
        self.rules = rules or RulesRouter(planner)
        self.calibration = calibration
        self.overruled: list[str] = []  # why recent model routes were not taken (bounded)

    def can_change(self, ruled: RouteDecision, turn: Turn | None = None) -> bool:
        """Return False when no route the model's proposal could be taken for differs from ``ruled``.

        The routes that could be taken: the calibrated ones (every route without a calibration),
        less those :func:`overrule_reason` would overrule whatever the model said: a refusal when
        the question's own words are on the whitelist, and a ``tool``/``confirm`` route when the
        rules' decision serves no profile action. Asking then would spend a call on a proposal
        that cannot be taken; the rules' route is the turn's route either way.
        """
        possible = set(self.calibration.takeable() if self.calibration is not None else ROUTES)
        possible.discard(ruled["route"])
        if turn is not None:
            if keyword_domain(turn.question["text"], turn.profile["whitelist"]) is not None:
                possible.discard("refuse")
            if not is_action_route(ruled):
                possible -= {"tool", "confirm"}
        return bool(possible)

    def route(self, turn: Turn) -> RouteDecision | None:
        """Return the model's route (a tool route with the rules' plan), or None (rules decide)."""
        profile = turn.profile
        system = BOUNDARY_SYSTEM.format(
            whitelist="、".join(d["domain"] for d in profile["whitelist"]) or "知识库覆盖的主题",
            blacklist="、".join(d["domain"] for d in profile["blacklist"]),
            tools="、".join(f"{s.name}({s.description})" for s in turn.tools) or "无")
        user = BOUNDARY_USER.format(facts=render_facts(turn.facts), question=turn.question["text"])
        outcome = structured_call(self.llm, BoundaryDecision, [SystemMessage(system), HumanMessage(user)])
        if outcome.value is None:
            raise StepFailed(f"boundary: {outcome.error}")
        decision = outcome.value
        probability = value_probability(outcome.raw, "route")
        ruled = self.rules.decide(turn) if decision.route in ("tool", "confirm") else None
        reason = overrule_reason(decision, probability, turn, ruled, self.calibration)
        if reason is not None:
            self.overruled = [*self.overruled[-49:], reason]
            return None
        source = "logprobs" if probability is not None else "none (no logprobs)"
        if ruled is not None:  # the model asked for tools; the named action's plan serves it
            confidence = round(probability, 4) if probability is not None else 0.0
            return {**ruled, "confidence": confidence,
                    "boundary_reason": f"LLM route {decision.route} [confidence: {source}]; "
                                       f"{ruled.get('boundary_reason', '')}"}
        out: RouteDecision = {"route": decision.route, "domain": decision.domain,
                              "intent": decision.intent,
                              "confidence": round(probability, 4) if probability is not None else 0.0,
                              "boundary_reason": f"{decision.reason} [confidence: {source}]"}
        if decision.route == "refuse":
            out["status"], out["fail_reason"] = "refused", "out_of_scope"
        elif decision.route == "handoff":
            out["status"] = "handoff"
        return out
