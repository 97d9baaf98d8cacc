"""High-risk confirmation: interrupt() asks the customer to confirm the exact write action.

Code before ``interrupt()`` only reads state (safe to repeat on resume); the write happens
after it and only on an explicit yes.
"""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from contracts.context import Context
from contracts.interrupts import ConfirmPayload
from contracts.state import State
from contracts.verification import fixed_reply_verification
from nodes._common import context_of
from nodes.tools import run_tool
from strategies.deps import Deps
from strategies.rules import confirm as confirm_rules
from strategies.rules.evidence import tool_to_evidence


def confirmation_payload(action: dict[str, Any]) -> ConfirmPayload:
    """Return the confirm interrupt payload (CONTRACTS) for a pending action."""
    return {"type": "confirm", "action": action,
            "prompt": confirm_rules.confirmation_prompt(action)}


def confirm_high_risk(state: State, runtime: Runtime[Context], deps: Deps) -> State:
    """Ask for confirmation; on an explicit yes run the write tool, otherwise change nothing."""
    action: dict[str, Any] = dict(state.get("pending_action") or {})
    answer = interrupt(confirmation_payload(action))
    verdict = confirm_rules.decide(answer, action, now=time.time())  # [rel] issue 9.3
    if verdict != "confirm":
        expired = verdict == "expired"
        text = (confirm_rules.expired_reply if expired else confirm_rules.declined_reply)(action)
        return {"draft": text, "pending_action": None, "status": "answered",
                "verification": fixed_reply_verification(
                    "expired_no_write" if expired else "declined_no_write")}
    user_id = context_of(runtime).user_id
    calls = list(state.get("tool_calls") or [])
    record = run_tool(deps, calls, action["tool"], action["args"], user_id)
    n = sum(1 for c in calls if c["name"] == record["name"]) + 1
    return {"tool_calls": [*calls, record], "pending_action": None, "status": "answered",
            "evidence": [tool_to_evidence(record["name"], n, record["result"], record["args"],
                                          spec=next((t for t in deps.shop.specs() if t.name == record["name"]), None))]}
