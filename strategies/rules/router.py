"""The rules router: knowledge boundary (profile whitelist/blacklist) and capability boundary (tools).

Order of the rules (:meth:`RulesRouter.decide`): an explicit request for a human → handoff; a
blacklisted domain → refuse; an action the profile names (or a generic 「帮我把X改成Y」) → its
tool (read: ``tool``; write: ``confirm``; none registered: refuse ``no_capability``) unless the
message asks how something works; a question about order data (the customer's own orders, an
order named earlier or by pronoun, or an order id) → the profile's order-lookup action; a short
greeting → chitchat. What these rules do not settle (:meth:`RulesRouter.route_open`) goes to
``answer``: whitelist keywords, else the nearest intent example by embedding, else retrieval
coverage decides.

Word lists: ``_HUMAN_ONLY_RE`` (a bare 「人工」), ``_REFERS_BACK`` (pronouns for an order named
earlier), ``_POLICY_MARKERS`` (how/why words that make an order question a policy question),
``_POLICY_HINTS`` (a tool question that also wants policy evidence).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from contracts.profile import ProfileAction, ProfileDomain
from contracts.routing import RouteDecision
from contracts.tools import PendingAction
from strategies.protocols import Embedder, Profile, ToolPlanner, ToolRequest, Turn
from strategies.rules.confirm import is_bare_reply
from strategies.rules.facts import fact_value
from strategies.rules.question import is_question
from strategies.rules.risk import (
    asks_own_orders,
    describe_action,
    detect_action,
    find_order_id,
    generic_change_request,
    grant_request,
    is_how_to,
)
from strategies.rules.tools import (
    action_tool,
    asked_fields,
    is_record_read,
    needs_order_id,
    question_refs,
)

logger = logging.getLogger(__name__)
_EXAMPLE_CACHE: dict[tuple[int, str], tuple[list[str], Any]] = {}
_HUMAN_ONLY_RE = re.compile(r"(?:我要|找|转|要)?(?:人工客服|人工|客服|真人)+(?:呢|啊|吧)?")
_REFERS_BACK = ("那单", "这单", "这个单", "那个单", "这个订单", "那个订单", "那笔", "这笔", "它")
_POLICY_MARKERS = ("怎么", "如何", "多久", "几天", "规则", "政策", "流程", "能不能", "可以吗", "能吗", "一般")
BARE_REPLY = "bare_reply"
NOTHING_PENDING_REPLY = "当前没有需要您确认的操作。请问有什么可以帮您？"
_POLICY_HINTS = ("政策", "规则", "多久", "运费", "怎么", "能不能", "可以吗", "规定", "几天", "时效")


def keyword_domain(question: str, domains: Sequence[ProfileDomain]) -> ProfileDomain | None:
    """Return the domain with the most keyword hits in ``question`` (ties: first), or None."""
    best, hits = None, 0
    for domain in domains:
        n = sum(1 for kw in domain.get("keywords", []) if kw.lower() in question.lower())
        if n > hits:
            best, hits = domain, n
    return best


def embedding_domain(question: str, profile: Profile, embedder: Embedder | None) -> tuple[str, float] | None:
    """Return (domain, margin) of the nearest intent example when an embedder is configured."""
    if embedder is None:
        return None
    key = (id(embedder), profile["name"])
    if key not in _EXAMPLE_CACHE:
        labels = [d["domain"] for d in profile["whitelist"] for _ in d.get("examples", [])]
        texts = [e for d in profile["whitelist"] for e in d.get("examples", [])]
        _EXAMPLE_CACHE[key] = (labels, np.asarray(embedder.embed_queries(texts)) if texts else None)
    labels, matrix = _EXAMPLE_CACHE[key]
    if matrix is None or not labels:
        return None
    sims = matrix @ np.asarray(embedder.embed_queries([question]))[0]
    order = np.argsort(-sims)
    margin = float(sims[order[0]] - sims[order[1]]) if len(order) > 1 else 1.0
    return labels[int(order[0])], margin


def action_route(turn: Turn, action: Mapping[str, Any], planner: ToolPlanner) -> RouteDecision:
    """Return the decision for a profile action: its tool plan, a confirmation, or a refusal."""
    question = turn.question["text"]
    label = str(action.get("label", action["intent"]))
    spec = action_tool(action, turn.tools)
    base: RouteDecision = {"route": "answer", "domain": "orders", "intent": action["intent"],
                           "confidence": 0.9, "boundary_reason": "", "action_label": label}
    order_id = find_order_id(question) or fact_value(turn.facts, "order_id")
    plan = planner.plan(ToolRequest(turn=turn, action=action, order_id=order_id)) if spec else []
    if spec is None or not plan:  # nothing registered can serve it
        return {**base, "route": "refuse", "domain": "capability", "fail_reason": "no_capability",
                "status": "refused", "boundary_reason": f"no tool for {action['intent']}"}
    if spec.write and needs_order_id(plan[0], turn.tools):
        return {**base, "route": "clarify", "boundary_reason": "order id missing"}
    reason = f"action {action['intent']} → tool {spec.name}"
    if not spec.write:
        return {**base, "route": "tool", "tool_plan": plan, "pending_action": None, "status": "answered",
                "needs_kb": any(h in question for h in _POLICY_HINTS), "boundary_reason": reason}
    call = plan[0]
    pending: PendingAction = {"tool": call["name"], "args": call["args"],
                              "description": describe_action(dict(call), label),
                              "requested_at": time.time()}  # [rel] issue 9.3: it expires
    return {**base, "route": "confirm", "tool_plan": plan, "pending_action": pending,
            "status": "needs_confirmation", "needs_kb": False, "boundary_reason": reason}


def _refers_to_order(question: str, turn: Turn) -> bool:
    """Return True when the question asks an order field of an order named earlier or by pronoun."""
    if not asked_fields(question) or any(m in question for m in _POLICY_MARKERS):
        return False
    return bool(fact_value(turn.facts, "order_id")) or any(w in question for w in _REFERS_BACK)


def guard_decision(turn: Turn) -> RouteDecision | None:
    """Return the decision of the hard guards: a request for a human, a blacklisted domain, a bare yes.

    A pending action is confirmed through the confirmation interrupt, never through a new
    turn, so a bare 「确认」 here has nothing to confirm (intent ``BARE_REPLY``).
    """
    question, profile = turn.question["text"], turn.profile
    bare = re.sub(r"[\s\W_]+", "", question)
    if any(k in question for k in profile["handoff_keywords"]) or _HUMAN_ONLY_RE.fullmatch(bare):
        return {"route": "handoff", "domain": "handoff", "intent": "handoff", "confidence": 1.0,
                "status": "handoff", "boundary_reason": "customer asked for a human"}
    black = keyword_domain(question, profile["blacklist"])
    if black is not None:
        return {"route": "refuse", "domain": black["domain"], "intent": "blacklisted",
                "confidence": 0.95, "status": "refused", "fail_reason": "out_of_scope",
                "boundary_reason": f"blacklisted domain {black['domain']}"}
    if is_bare_reply(question):  # 「确认」「好的」 with no action pending asks nothing
        return {"route": "chitchat", "domain": "chitchat", "intent": BARE_REPLY, "confidence": 1.0,
                "boundary_reason": "a bare yes with nothing pending"}
    return None


def _default_action(profile: Profile) -> ProfileAction:
    return next(a for a in profile["actions"] if a["intent"] == profile["order_id_default_intent"])


def _order_question_action(turn: Turn, action: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """Return the action for a question about order data (earlier order, pronoun, or an id)."""
    question, profile = turn.question["text"], turn.profile
    if not profile.get("order_id_default_intent"):
        return None
    if _refers_to_order(question, turn):
        # 「那它现在在哪」「运单号给我下」「买台灯那单用的哪个快递公司」: order data, not policy text.
        return action if action and is_record_read(action_tool(action, turn.tools)) else _default_action(profile)
    if question_refs(question, turn.tools):
        # A question about a named order is answered from the order data, not from policy text.
        spec = action_tool(action, turn.tools) if action else None
        return action if spec is not None and not spec.write else _default_action(profile)
    return None


class RulesRouter:
    """The deterministic router: the offline mode and the LLM router's fallback."""

    def __init__(self, planner: ToolPlanner, embedder: Embedder | None = None) -> None:
        self.planner = planner
        self.embedder = embedder

    def route(self, turn: Turn) -> RouteDecision:
        """Return the rules' decision, or the open-question decision when they settle nothing."""
        return self.decide(turn) or self.route_open(turn)

    def decide(self, turn: Turn) -> RouteDecision | None:
        """Return the deterministic decision, or None when rules alone cannot decide."""
        guarded = guard_decision(turn)
        if guarded is not None:
            return guarded
        question, profile = turn.question["text"], turn.profile
        previous = fact_value(turn.facts, "previous_question")
        action: Mapping[str, Any] | None = detect_action(question, profile)
        if action is None and previous and question_refs(question, turn.tools):  # 「那SO…呢？」 repeats the last ask
            action = detect_action(previous, profile)
        if action is None and profile.get("actions"):
            action = generic_change_request(question) or grant_request(question, is_question(turn.question["norm"]))
        default = profile.get("order_id_default_intent")
        own_lookup = bool(default) and asks_own_orders(question) and \
            (action is None or action.get("intent") == default)
        if own_lookup:
            action = _default_action(profile)
        if action is not None and (own_lookup or not is_how_to(question, profile.get("how_to_markers", []))):
            return action_route(turn, action, self.planner)
        order_action = _order_question_action(turn, action)
        if order_action is not None:
            return action_route(turn, order_action, self.planner)
        if len(question) <= 8 and any(k in question.lower() for k in profile["chitchat"]["keywords"]):
            return {"route": "chitchat", "domain": "chitchat", "intent": "greeting", "confidence": 0.9,
                    "boundary_reason": "greeting"}
        return None

    def route_open(self, turn: Turn) -> RouteDecision:
        """Return the decision for a question the rules did not settle (always ``answer``)."""
        question, profile = turn.question["text"], turn.profile
        white = keyword_domain(question, profile["whitelist"])
        if white is not None:
            return {"route": "answer", "domain": white["domain"], "intent": "knowledge",
                    "confidence": 0.9, "boundary_reason": "whitelist keyword"}
        nearest = embedding_domain(question, profile, self.embedder)
        if nearest is not None:
            return {"route": "answer", "domain": nearest[0], "intent": "knowledge",
                    "confidence": round(0.5 + min(nearest[1] * 5, 0.3), 3),
                    "boundary_reason": "nearest intent example"}
        # Unknown subject: let retrieval coverage decide (no evidence → the fixed no-answer reply).
        return {"route": "answer", "domain": "unknown", "intent": "knowledge", "confidence": 0.5,
                "boundary_reason": "no keyword; retrieval coverage decides"}
