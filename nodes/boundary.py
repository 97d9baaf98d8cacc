"""Boundary router node: the knowledge and capability boundary decide the turn's route.

The decision is the router strategy's (``deps.strategies.router``, chosen by the runtime):
rules offline; with an LLM, the hard guards, then the model, then the rules as fallback.
"""

from __future__ import annotations

import logging

from langgraph.runtime import Runtime

from contracts.context import Context
from contracts.routing import RouteDecision
from contracts.state import State
from nodes._common import turn_of
from strategies.deps import Deps

logger = logging.getLogger(__name__)


def route_boundary(state: State, runtime: Runtime[Context], deps: Deps) -> RouteDecision:
    """Decide the route of this turn: answer, tool, confirm, refuse, clarify, handoff or chitchat."""
    turn = turn_of(state, runtime, deps)
    decision = deps.strategies.router.route(turn)
    if decision is None:  # a router that may abstain: the open question goes to retrieval
        decision = {"route": "answer", "domain": "unknown", "intent": "knowledge",
                    "confidence": 0.5, "boundary_reason": "no router decided"}
    logger.debug("boundary: %s", decision)
    return decision
