"""Boundary router: knowledge boundary (profile whitelist/blacklist) and capability boundary (tools).

Rules run first and are final for the blacklist, explicit handoff requests and actions; with an
LLM the remaining decision is a temperature-0 structured call whose confidence (logprobs when
the endpoint gives them) must clear the profile's per-route threshold; offline, keywords plus
embedding similarity to the profile's intent examples decide.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import numpy as np
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from graph.context import Context
from graph.deps import Deps
from graph.state import State
from nodes.facts import fact_value
from nodes.llm import structured_call
from nodes.profiles import load_profile
from nodes.prompts import BOUNDARY_SYSTEM, BOUNDARY_USER
from nodes.risk import (
    asked_fields,
    asks_own_orders,
    describe_action,
    detect_action,
    find_order_id,
    generic_change_request,
    is_how_to,
    needs_order_id,
    plan_order_tools,
    plan_tool_call,
)
from nodes.schemas import BoundaryDecision

logger = logging.getLogger(__name__)
_EXAMPLE_CACHE: dict[tuple[int, str], tuple[list[str], Any]] = {}
_HUMAN_ONLY_RE = re.compile(r"(?:我要|找|转|要)?(?:人工客服|人工|客服|真人)+(?:呢|啊|吧)?")
_ORDER_READ_TOOLS = ("order_lookup", "logistics_tracking")
_REFERS_BACK = ("那单", "这单", "这个单", "那个单", "这个订单", "那个订单", "那笔", "这笔", "它")
_POLICY_MARKERS = ("怎么", "如何", "多久", "几天", "规则", "政策", "流程", "能不能", "可以吗", "能吗", "一般")
_POLICY_HINTS = ("政策", "规则", "多久", "运费", "怎么", "能不能", "可以吗", "规定", "几天", "时效")


def keyword_domain(question: str, domains: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Return the domain with the most keyword hits in ``question`` (ties: first), or None."""
    best, hits = None, 0
    for domain in domains:
        n = sum(1 for kw in domain.get("keywords", []) if kw.lower() in question.lower())
        if n > hits:
            best, hits = domain, n
    return best


def _embedding_domain(question: str, profile: dict[str, Any], deps: Deps) -> tuple[str, float] | None:
    """Return (domain, margin) of the nearest intent example when an embedder is configured."""
    if deps.embedder is None:
        return None
    key = (id(deps.embedder), profile["name"])
    if key not in _EXAMPLE_CACHE:
        labels = [d["domain"] for d in profile["whitelist"] for _ in d.get("examples", [])]
        texts = [e for d in profile["whitelist"] for e in d.get("examples", [])]
        _EXAMPLE_CACHE[key] = (labels, np.asarray(deps.embedder.embed_queries(texts)) if texts else None)
    labels, matrix = _EXAMPLE_CACHE[key]
    if matrix is None or not labels:
        return None
    sims = matrix @ np.asarray(deps.embedder.embed_queries([question]))[0]
    order = np.argsort(-sims)
    margin = float(sims[order[0]] - sims[order[1]]) if len(order) > 1 else 1.0
    return labels[int(order[0])], margin


def _action_route(question: str, action: dict[str, Any], facts: list[str], tools: dict[str, Any]) -> dict[str, Any]:
    label = action.get("label", action["intent"])
    tool = action.get("tool")
    base = {"intent": action["intent"], "action_label": label, "confidence": 0.9}
    if not tool or tool not in tools:
        return {**base, "route": "refuse", "domain": "capability", "fail_reason": "no_capability",
                "status": "refused", "boundary_reason": f"no tool for {action['intent']}"}
    order_id = find_order_id(question) or fact_value(facts, "订单号")
    call = plan_tool_call(action, question, order_id)
    if needs_order_id(call) and tools[tool].write:
        return {**base, "route": "clarify", "domain": "orders", "boundary_reason": "order id missing"}
    plan = [call]
    if tool in _ORDER_READ_TOOLS:
        # Plan from what the question asks; a bare 「那SO…呢」 gets the order and its shipment.
        plan = [p for p in plan_order_tools(question, order_id, tool) if p["name"] in tools]
        call = plan[0]
    route = "confirm" if tools[tool].write else "tool"
    pending = {**call, "tool": call["name"], "description": describe_action(call, label)} if route == "confirm" else None
    if pending:
        pending.pop("name")
    return {**base, "route": route, "domain": "orders", "tool_plan": plan, "pending_action": pending,
            "status": "needs_confirmation" if route == "confirm" else "answered",
            "needs_kb": route == "tool" and any(h in question for h in _POLICY_HINTS),
            "boundary_reason": f"action {action['intent']} → tool {tool}"}


def _refers_to_order(question: str, facts: list[str]) -> bool:
    """Return True when the question asks an order field of an order named earlier or by pronoun."""
    if not asked_fields(question) or any(m in question for m in _POLICY_MARKERS):
        return False
    return bool(fact_value(facts, "订单号")) or any(w in question for w in _REFERS_BACK)


def route_by_rules(question: str, facts: list[str], profile: dict[str, Any], deps: Deps) -> dict[str, Any] | None:
    """Return the deterministic decision, or None when rules alone cannot decide."""
    lowered = question.lower()
    bare = re.sub(r"[\s\W_]+", "", question)
    if any(k in question for k in profile["handoff_keywords"]) or _HUMAN_ONLY_RE.fullmatch(bare):
        return {"route": "handoff", "domain": "handoff", "intent": "handoff", "confidence": 1.0,
                "status": "handoff", "boundary_reason": "customer asked for a human"}
    black = keyword_domain(question, profile["blacklist"])
    if black is not None:
        return {"route": "refuse", "domain": black["domain"], "intent": "blacklisted",
                "confidence": 0.95, "status": "refused", "fail_reason": "out_of_scope",
                "boundary_reason": f"blacklisted domain {black['domain']}"}
    previous = fact_value(facts, "上一个问题")
    action = detect_action(question, profile)
    if action is None and previous and find_order_id(question):  # 「那SO…呢？」 repeats the last ask
        action = detect_action(previous, profile)
    if action is None and profile.get("actions"):
        action = generic_change_request(question)
    tools = {spec.name: spec for spec in deps.shop.specs()}
    default = profile.get("order_id_default_intent")
    own_lookup = bool(default) and asks_own_orders(question) and \
        (action is None or action.get("intent") == default)
    if own_lookup:
        action = next(a for a in profile["actions"] if a["intent"] == default)
    if action is not None and (own_lookup or not is_how_to(question, profile.get("how_to_markers", []))):
        return _action_route(question, action, facts, tools)
    if default and _refers_to_order(question, facts):
        # 「那它到哪了」「快递单号多少」「老人手机那单走的什么快递」: order data, not policy text.
        if action is None or action.get("tool") not in _ORDER_READ_TOOLS:
            action = next(a for a in profile["actions"] if a["intent"] == default)
        return _action_route(question, action, facts, tools)
    if find_order_id(question) and default:
        # A question about a named order is answered from the order data, not from policy text.
        if action is None or action.get("tool") not in tools or tools[action["tool"]].write:
            action = next(a for a in profile["actions"] if a["intent"] == default)
        return _action_route(question, action, facts, tools)
    if len(question) <= 8 and any(k in lowered for k in profile["chitchat"]["keywords"]):
        return {"route": "chitchat", "domain": "chitchat", "intent": "greeting", "confidence": 0.9,
                "boundary_reason": "greeting"}
    return None


def route_offline(question: str, profile: dict[str, Any], deps: Deps) -> dict[str, Any]:
    """Return the offline decision for a question the rules did not settle."""
    white = keyword_domain(question, profile["whitelist"])
    if white is not None:
        return {"route": "answer", "domain": white["domain"], "intent": "knowledge",
                "confidence": 0.9, "boundary_reason": "whitelist keyword"}
    nearest = _embedding_domain(question, profile, deps)
    if nearest is not None:
        return {"route": "answer", "domain": nearest[0], "intent": "knowledge",
                "confidence": round(0.5 + min(nearest[1] * 5, 0.3), 3),
                "boundary_reason": "nearest intent example"}
    # Unknown subject: let retrieval coverage decide (no evidence → the fixed no-answer reply).
    return {"route": "answer", "domain": "unknown", "intent": "knowledge", "confidence": 0.5,
            "boundary_reason": "no keyword; retrieval coverage decides"}


def _route_with_llm(question: str, facts: list[str], profile: dict[str, Any], deps: Deps) -> dict[str, Any] | None:
    assert deps.llm is not None
    system = BOUNDARY_SYSTEM.format(
        whitelist="、".join(d["domain"] for d in profile["whitelist"]) or "知识库覆盖的主题",
        blacklist="、".join(d["domain"] for d in profile["blacklist"]),
        tools="、".join(f"{s.name}({s.description})" for s in deps.shop.specs()) or "无")
    outcome = structured_call(deps.llm, BoundaryDecision, [
        SystemMessage(system), HumanMessage(BOUNDARY_USER.format(facts="；".join(facts) or "无", question=question))])
    if outcome.value is None:
        return {"llm_error": f"boundary: {outcome.error}"}
    decision = outcome.value
    confidence = outcome.confidence if outcome.confidence is not None else decision.confidence
    route: str = decision.route
    if confidence < float(profile["thresholds"].get(route, 0.5)):
        route = "clarify"
    if route in ("tool", "confirm"):
        action = next((a for a in profile["actions"] if a["intent"] == decision.intent), None)
        if action is None:
            return None  # no such action in the profile: the offline rules decide
        tools = {spec.name: spec for spec in deps.shop.specs()}
        return _action_route(question, action, facts, tools)
    out: dict[str, Any] = {"route": route, "domain": decision.domain, "intent": decision.intent,
                           "confidence": round(float(confidence), 4), "boundary_reason": decision.reason}
    if route == "refuse":
        out.update(status="refused", fail_reason="out_of_scope")
    elif route == "handoff":
        out.update(status="handoff")
    return out


def route_boundary(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Decide the route of this turn: answer, tool, confirm, refuse, clarify, handoff or chitchat."""
    ctx = runtime.context or Context()
    profile = load_profile(ctx.domain_profile)
    question, facts = state["question"], state.get("facts") or []
    decision = route_by_rules(question, facts, profile, deps)
    if decision is None and deps.llm is not None:
        decision = _route_with_llm(question, facts, profile, deps)
        if decision is not None and "llm_error" in decision:
            decision = {**route_offline(question, profile, deps), "llm_error": decision["llm_error"]}
    if decision is None:
        decision = route_offline(question, profile, deps)
    logger.debug("boundary: %s", decision)
    return decision
