"""High-risk confirmation: interrupt() asks the customer to confirm the exact write action.

Code before ``interrupt()`` only reads state (safe to repeat on resume); the write happens
after it and only on an explicit yes.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from graph.context import Context
from graph.deps import Deps
from graph.state import State
from nodes.evidence import tool_to_evidence
from nodes.risk import is_explicit_yes
from nodes.tools import run_tool


def confirmation_payload(action: dict[str, Any]) -> dict[str, Any]:
    """Return the confirm interrupt payload (CONTRACTS) for a pending action."""
    return {"type": "confirm", "action": action,
            "prompt": f"请确认：是否{action['description']}？回复「确认」立即办理，回复其他内容将不做任何更改。"}


def confirm_high_risk(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Ask for confirmation; on an explicit yes run the write tool, otherwise change nothing."""
    action = dict(state.get("pending_action") or {})
    answer = interrupt(confirmation_payload(action))
    if not is_explicit_yes(answer):
        text = f"好的，本次没有{action['description']}，您的订单未做任何更改。如需办理，可以随时告诉我。"
        return {"draft": text, "pending_action": None, "status": "answered",
                "verification": {"overall": "pass", "claims": [],
                                 "checks": [{"name": "declined_no_write", "ok": True}]}}
    user_id = (runtime.context or Context()).user_id
    calls = list(state.get("tool_calls") or [])
    record = run_tool(deps, calls, action["tool"], action["args"], user_id)
    n = sum(1 for c in calls if c["name"] == record["name"]) + 1
    return {"tool_calls": [*calls, record], "pending_action": None, "status": "answered",
            "evidence": [tool_to_evidence(record["name"], n, record["result"], record["args"])]}
