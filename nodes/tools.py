"""Business tool calls: the user id from the run context, results as evidence, loop breaker."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graph.context import Context
from graph.deps import Deps
from graph.state import State
from nodes.evidence import tool_to_evidence
from shop.guard import is_repeated_call, loop_breaker_result


def run_tool(deps: Deps, history: list[dict[str, Any]], name: str, args: dict[str, Any],
             user_id: str) -> dict[str, Any]:
    """Run one tool call (or cut it off) and return the call record for ``tool_calls``."""
    writes = {spec.name for spec in deps.shop.specs() if spec.write}
    if is_repeated_call(history, name, args):
        result = loop_breaker_result(name)
    else:
        result = deps.shop.call(name, args, user_id=user_id)
    return {"name": name, "args": dict(args), "result": dict(result), "write": name in writes}


def call_tools(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Run the planned read tools for the context's user; every result joins the evidence."""
    user_id = (runtime.context or Context()).user_id
    calls = list(state.get("tool_calls") or [])
    evidence = []
    for plan in state.get("tool_plan") or []:
        record = run_tool(deps, calls, plan["name"], plan["args"], user_id)
        calls.append(record)
        n = sum(1 for c in calls if c["name"] == record["name"])
        evidence.append(tool_to_evidence(record["name"], n, record["result"], record["args"]))
    return {"tool_calls": calls, "evidence": evidence}
