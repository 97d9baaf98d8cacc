"""Business tool calls: the user id from the run context, results as evidence, loop breaker.

A thin adapter over the planned calls (``tool_plan``, from the router's tool planner). The
plan's hints are read by :mod:`strategies.rules.tools`: ``when_status`` (skip a call this
turn's record already makes pointless), ``resolve``/``then`` (follow up on the one listed
record the question names), ``ref`` (a partial reference: only the customer's own matching
record, else the customer is asked). The record the answer is about is kept on the call as
``focus`` so it can be carried into the next turn. At most ``MAX_CALLS`` calls run per turn.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from contracts.context import Context
from contracts.evidence import Evidence
from contracts.state import State
from contracts.tools import CODE_REJECTED, FORM_LISTING, ToolCallPlan, ToolCallRecord, ToolSpec
from strategies.deps import Deps
from strategies.rules.evidence import tool_to_evidence
from strategies.rules.tools import (
    ambiguous_ref_result,
    follow_up,
    known_status,
    listed_records,
    listing_focus,
    skip_call,
)
from tools.backend import failure
from tools.guard import is_repeated_call, loop_breaker_result

MSG_NEEDS_CONFIRMATION = "该操作会修改订单，需要您确认后才能办理"
MAX_CALLS = 6  # a turn's plan plus its follow-ups; the loop breaker is the second line


def run_tool(deps: Deps, history: list[ToolCallRecord], name: str, args: dict[str, Any],
             user_id: str) -> ToolCallRecord:
    """Run one tool call (or cut it off as a repeat) and return its record for ``tool_calls``."""
    write = any(spec.write for spec in deps.shop.specs() if spec.name == name)
    if is_repeated_call(history, name, args):
        result = loop_breaker_result(name)
    else:
        result = deps.shop.call(name, args, user_id=user_id)
    return {"name": name, "args": dict(args), "result": result, "write": write}


def _run_planned(plan: ToolCallPlan, spec: ToolSpec | None, calls: list[ToolCallRecord],
                 deps: Deps, user_id: str, question: str,
                 tools: list[ToolSpec]) -> tuple[ToolCallRecord, ToolCallPlan | None]:
    """Run one planned call; return its record and the follow-up call a listing resolved.

    A write never runs here, whoever planned it: writes run only after the confirmation node.
    """
    if spec is not None and spec.write:
        result = failure(plan["name"], CODE_REJECTED, MSG_NEEDS_CONFIRMATION)
        return {"name": plan["name"], "args": dict(plan["args"]), "result": result, "write": True}, None
    record = run_tool(deps, calls, plan["name"], plan["args"], user_id)
    id_key = spec.id_arg if spec else None
    record_id = plan["args"].get(id_key) if id_key else None
    if id_key and not record_id and spec and FORM_LISTING in spec.answers.forms:
        records = listed_records(record["result"], id_key)
        record["focus"] = focus = listing_focus(question, plan, records, id_key)
        if plan.get("ref") and len(focus) != 1 and record["result"]["valid"]:
            record["result"] = ambiguous_ref_result(plan, focus, record["result"], spec.answers.noun)
        return record, follow_up(plan, focus, records, tools, id_key)
    if record_id and record["result"]["valid"]:
        record["focus"] = [str(record_id)]
    return record, None


def call_tools(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Run the planned read tools for the context's user; every result joins the evidence."""
    user_id = (runtime.context or Context()).user_id
    question, tools = state.get("question") or "", list(deps.shop.specs())
    specs = {s.name: s for s in tools}
    calls, evidence = list(state.get("tool_calls") or []), list[Evidence]()
    queue: list[ToolCallPlan] = [ToolCallPlan(**p) for p in state.get("tool_plan") or []]
    for _ in range(MAX_CALLS):
        if not queue:
            break
        plan = queue.pop(0)
        spec = specs.get(plan["name"])
        id_key = spec.id_arg if spec else None
        if skip_call(plan, calls, id_key):
            continue
        record, follow = _run_planned(plan, spec, calls, deps, user_id, question, tools)
        queue += [follow] if follow else []
        omit = _stated_already(plan, calls, id_key)
        calls.append(record)
        item = tool_to_evidence(record["name"], sum(1 for c in calls if c["name"] == record["name"]),
                                record["result"], record["args"], question=question,
                                focus=record.get("focus"), omit=omit, spec=spec)
        # A follow-up on the record a listing resolved answers the question: it goes first.
        evidence.insert(len(evidence) - 1 if plan.get("resolved") and evidence else len(evidence), item)
    return {"tool_calls": calls, "evidence": _brief_once(evidence, specs)}


def _stated_already(plan: ToolCallPlan, calls: list[ToolCallRecord], id_key: str | None) -> tuple[str, ...]:
    """Return ``("status",)`` when an earlier call this turn already states the record's state."""
    record_id = plan["args"].get(id_key) if id_key else None
    if not record_id:
        return ()
    earlier = plan.get("resolved") or known_status(calls, str(id_key), str(record_id)) is not None
    return ("status",) if earlier else ()


def _record_id(item: Evidence, specs: dict[str, ToolSpec]) -> str | None:
    """Return the record an evidence item's call was about (its id argument), if any."""
    spec = specs.get(str(item.get("source")))
    args: dict[str, Any] = dict(item.get("args") or {})
    value = args.get(spec.id_arg) if spec and spec.id_arg else None
    return str(value) if value else None


def _lists(item: Evidence, specs: dict[str, ToolSpec]) -> bool:
    spec = specs.get(str(item.get("source")))
    return spec is not None and FORM_LISTING in spec.answers.forms


def _brief_once(evidence: list[Evidence], specs: dict[str, ToolSpec]) -> list[Evidence]:
    """Cut a record's brief to its first (asked-fields) line when another tool's data on it follows.

    That data's own lines follow, so the answer does not list items and amounts in between.
    """
    def valid(item: Evidence) -> bool:
        result = item.get("result")
        return bool(result and result.get("valid"))

    followed = {_record_id(e, specs) for e in evidence if valid(e) and not _lists(e, specs)}
    return [Evidence(**{**e, "brief": e["brief"].split("\n", 1)[0]})
            if valid(e) and _lists(e, specs) and e.get("brief") and _record_id(e, specs) in followed - {None}
            else e for e in evidence]
