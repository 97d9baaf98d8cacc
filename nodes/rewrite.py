"""Query rewrite node: 1–3 retrieval queries; the original question is always query 1."""

from __future__ import annotations

from langgraph.runtime import Runtime

from contracts.context import Context
from contracts.state import State
from nodes._common import turn_of
from strategies.deps import Deps


def rewrite_query(state: State, runtime: Runtime[Context], deps: Deps) -> State:
    """Rewrite the question into retrieval queries (the rewriter strategy's)."""
    result = deps.strategies.rewriter.rewrite(turn_of(state, runtime, deps))
    update: State = {"queries": result.queries}
    if result.llm_error:
        update["llm_error"] = result.llm_error
    return update
