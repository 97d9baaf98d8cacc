"""Business tool calls: the user id from the run context, results as evidence, loop breaker.

A planned read call may carry two hints from the planner (``nodes.risk.plan_order_tools``):
``if_shipped`` (skip the logistics call when this turn's order lookup shows an unshipped order)
and ``resolve``/``then`` (after listing the customer's orders, follow up on the one order the
question names, e.g. 「降噪耳机那单」). The order the answer is about is recorded on the call as
``focus`` so it can be carried into the next turn (``nodes.facts.tool_facts``).
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graph.context import Context
from graph.deps import Deps
from graph.state import State
from nodes.evidence import tool_to_evidence
from nodes.risk import is_shipped_status, match_orders, status_filter
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


def _known_status(calls: list[dict[str, Any]], order_id: str) -> str | None:
    """Return the status this turn's lookup of ``order_id`` gave ("" if it failed), or None."""
    for call in calls:
        result = call.get("result") or {}
        data = result.get("data")
        if call["name"] != "order_lookup" or (call.get("args") or {}).get("order_id") != order_id:
            continue
        return str(data.get("status") or "") if result.get("valid") and isinstance(data, dict) else ""
    return None


def listing_focus(question: str, result: dict[str, Any]) -> list[str]:
    """Return the listed orders the question is about: named by product, else by status filter."""
    data = result.get("data") if result.get("valid") else None
    orders = data.get("orders") if isinstance(data, dict) else None
    if not isinstance(orders, list):
        return []
    named = match_orders(question, orders)
    if named:
        return named
    statuses = status_filter(question)
    return [str(o.get("order_id")) for o in orders if statuses and o.get("status") in statuses]


def call_tools(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Run the planned read tools for the context's user; every result joins the evidence."""
    user_id = (runtime.context or Context()).user_id
    question = state.get("question") or ""
    calls = list(state.get("tool_calls") or [])
    evidence: list[dict[str, Any]] = []
    queue = [dict(p) for p in state.get("tool_plan") or []]
    while queue:
        plan = queue.pop(0)
        order_id = (plan.get("args") or {}).get("order_id")
        if plan.get("if_shipped") and order_id:
            status = _known_status(calls, str(order_id))
            if status is not None and not is_shipped_status(status):
                continue  # the lookup failed or its status already says there is nothing to track
        record = run_tool(deps, calls, plan["name"], plan["args"], user_id)
        if plan["name"] == "order_lookup" and not order_id:
            focus = listing_focus(question, record["result"])
            record["focus"] = focus
            status = next((str(o.get("status")) for o in record["result"]["data"]["orders"]
                           if o.get("order_id") in focus), "") if focus else ""
            if plan.get("resolve") and len(focus) == 1 and plan.get("then") and is_shipped_status(status):
                queue.append({"name": plan["then"], "args": {"order_id": focus[0]}, "resolved": True})
        elif order_id and record["result"].get("valid"):
            record["focus"] = [str(order_id)]
        calls.append(record)
        n = sum(1 for c in calls if c["name"] == record["name"])
        # The order's status is stated once, by the order lookup, when both tools ran.
        omit = ("status",) if record["name"] == "logistics_tracking" and order_id \
            and (plan.get("resolved") or _known_status(calls[:-1], str(order_id))) else ()
        item = tool_to_evidence(record["name"], n, record["result"], record["args"],
                                question=question, focus=record.get("focus"), omit=omit)
        # A follow-up on the order a listing resolved answers the question: it goes first.
        evidence.insert(len(evidence) - 1 if plan.get("resolved") and evidence else len(evidence), item)
    return {"tool_calls": calls, "evidence": _brief_once(evidence)}


def _brief_once(evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cut an order's brief to its first (asked-fields) line when its shipment is also evidence.

    The shipment's own lines follow, so the answer does not list items and amounts in between.
    """
    shipped = {(e.get("args") or {}).get("order_id") for e in evidence
               if e.get("source") == "logistics_tracking" and (e.get("result") or {}).get("valid")}
    return [dict(e, brief=e["brief"].split("\n", 1)[0])
            if e.get("source") == "order_lookup" and (e.get("args") or {}).get("order_id") in shipped
            and (e.get("result") or {}).get("valid") and e.get("brief") else e for e in evidence]
