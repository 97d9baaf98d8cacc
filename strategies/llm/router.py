"""The LLM router: the model decides the route; the rules overrule only contradictions and doubt.

Issue 7 (in LLM mode the LLM strategy decides) and issue 10 (never worse than offline) together:

- The model is asked first, for every turn that reaches it (only the hard guards run before it,
  in :class:`strategies.combined.GuardedRouter`: their verdict would overrule any route).
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
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from contracts.routing import RouteDecision
from strategies.llm.prompts import BOUNDARY_SYSTEM, BOUNDARY_USER
from strategies.llm.schemas import BoundaryDecision
from strategies.llm.structured import structured_call, value_probability
from strategies.protocols import Profile, StepFailed, ToolPlanner, Turn
from strategies.rules.facts import render_facts
from strategies.rules.router import RulesRouter, keyword_domain


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
                    ruled: RouteDecision | None = None) -> str | None:
    """Return why the model's route is not taken (the rules decide then), or None to take it.

    ``ruled``: the rules' deterministic decision for the turn (asked only for a tool or
    confirm route: whether the question names a profile action).
    """
    profile, question = turn.profile, turn.question["text"]
    threshold = float(profile.get("thresholds", {}).get(decision.route, 0.5))
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

    """

    def __init__(self, llm: BaseChatModel, planner: ToolPlanner, rules: RulesRouter | None = None) -> None:
        self.llm = llm
        self.planner = planner
        self.rules = rules or RulesRouter(planner)
        self.overruled: list[str] = []  # why recent model routes were not taken (bounded)

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
        reason = overrule_reason(decision, probability, turn, ruled)
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
