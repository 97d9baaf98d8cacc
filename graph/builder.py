"""Assemble the csagent graph: boundary → rewrite → retrieve → rerank → generate → verify → answer.

Side exits: refusal, clarification, greeting, business tools, high-risk confirmation and human
handoff. Every loop is bounded in state (``reflections`` against ``Context.max_reflections``).
"""

from __future__ import annotations

from functools import partial

from langgraph.graph import END, START, StateGraph

from graph.context import Context
from graph.deps import Deps
from graph.routing import (
    route_after_boundary,
    route_after_call_tools,
    route_after_confirm,
    route_after_verify,
)
from graph.state import InputState, OutputState, State
from nodes.boundary import route_boundary
from nodes.confirm import confirm_high_risk
from nodes.generate import generate_answer
from nodes.handoff import handoff_to_human
from nodes.reflect import reflect
from nodes.rerank import rerank_evidence
from nodes.respond import ask_clarification, finalize_answer, refuse_request, reply_chitchat
from nodes.retrieve import retrieve_hybrid
from nodes.rewrite import rewrite_query
from nodes.tools import call_tools
from nodes.turn import start_turn
from nodes.verify import verify_answer


def build_graph(deps: Deps) -> StateGraph[State, Context, InputState, OutputState]:
    """Return the uncompiled graph with ``deps`` bound into the nodes that need them."""
    builder = StateGraph(State, input_schema=InputState, output_schema=OutputState,
                         context_schema=Context)
    builder.add_node("start_turn", partial(start_turn, deps=deps))  # [answer] vocab for the analysis
    builder.add_node("route_boundary", partial(route_boundary, deps=deps))
    builder.add_node("refuse_request", partial(refuse_request, deps=deps))
    builder.add_node("ask_clarification", ask_clarification)
    builder.add_node("reply_chitchat", reply_chitchat)
    builder.add_node("call_tools", partial(call_tools, deps=deps))
    builder.add_node("confirm_high_risk", partial(confirm_high_risk, deps=deps))
    builder.add_node("rewrite_query", partial(rewrite_query, deps=deps))
    builder.add_node("retrieve_hybrid", partial(retrieve_hybrid, deps=deps))
    builder.add_node("rerank_evidence", rerank_evidence)
    builder.add_node("generate_answer", partial(generate_answer, deps=deps))
    builder.add_node("verify_answer", partial(verify_answer, deps=deps))
    builder.add_node("reflect", reflect)
    builder.add_node("handoff_to_human", handoff_to_human)
    builder.add_node("finalize_answer", finalize_answer)

    builder.add_edge(START, "start_turn")
    builder.add_edge("start_turn", "route_boundary")
    builder.add_conditional_edges("route_boundary", route_after_boundary)
    builder.add_conditional_edges("call_tools", route_after_call_tools)
    builder.add_conditional_edges("confirm_high_risk", route_after_confirm)
    builder.add_edge("rewrite_query", "retrieve_hybrid")
    builder.add_edge("retrieve_hybrid", "rerank_evidence")
    builder.add_edge("rerank_evidence", "generate_answer")
    builder.add_edge("generate_answer", "verify_answer")
    builder.add_conditional_edges("verify_answer", route_after_verify)
    builder.add_edge("reflect", "generate_answer")
    for terminal in ("refuse_request", "ask_clarification", "reply_chitchat", "handoff_to_human",
                     "finalize_answer"):
        builder.add_edge(terminal, END)
    return builder
