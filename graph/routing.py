"""Routers: ``route_after_<node>`` functions whose ``Literal`` return types are the graph's edges."""

from __future__ import annotations

from typing import Literal

from graph.state import State


def route_after_boundary(state: State) -> Literal[
        "refuse_request", "ask_clarification", "handoff_to_human", "call_tools",
        "confirm_high_risk", "reply_chitchat", "rewrite_query"]:
    """Follow the boundary router's decision."""
    route = state.get("route", "answer")
    if route == "refuse":
        return "refuse_request"
    if route == "clarify":
        return "ask_clarification"
    if route == "handoff":
        return "handoff_to_human"
    if route == "tool":
        return "call_tools"
    if route == "confirm":
        return "confirm_high_risk"
    if route == "chitchat":
        return "reply_chitchat"
    return "rewrite_query"


def route_after_call_tools(state: State) -> Literal["rewrite_query", "generate_answer"]:
    """Also retrieve policy evidence when the question asks about policy as well as data."""
    return "rewrite_query" if state.get("needs_kb") else "generate_answer"


def route_after_confirm(state: State) -> Literal["generate_answer", "finalize_answer"]:
    """Report a write that ran; a declined action goes straight to the (fixed) final answer."""
    ran = any(call.get("write") for call in state.get("tool_calls") or [])
    return "generate_answer" if ran else "finalize_answer"


def route_after_verify(state: State) -> Literal["finalize_answer", "reflect", "handoff_to_human"]:
    """Pass → finalize; fail → reflect while rounds remain (verify_answer marks exhaustion) → handoff."""
    overall = (state.get("verification") or {}).get("overall", "pass")
    if overall != "fail":
        return "finalize_answer"
    if state.get("fail_reason") == "reflection_exhausted":
        return "handoff_to_human"
    return "reflect"
