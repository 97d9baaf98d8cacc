"""Human handoff node: interrupt() with what a human agent needs; the agent's reply is delivered."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langgraph.types import interrupt

from contracts.evidence import EvidenceSnippet
from contracts.interrupts import HandoffPayload
from contracts.state import State
from strategies.rules.facts import render_facts
from strategies.rules.verify import unsupported_claims

WAITING_REPLY = "人工客服会尽快回复您，请稍候。"


def handoff_payload(state: State) -> HandoffPayload:
    """Return the handoff interrupt payload (CONTRACTS): question, summary, reason, evidence."""
    reason = state.get("fail_reason") or (
        "customer_request" if state.get("route") == "handoff" else state.get("boundary_reason")) \
        or "customer_request"
    unsupported = unsupported_claims(state.get("verification") or {})
    summary = f"客户问题：{state.get('question', '')}；路由：{state.get('route', '')}；原因：{reason}"
    if state.get("facts"):
        summary += "；已知事实：" + render_facts(state.get("facts") or [])
    if unsupported:
        summary += "；未能核实的内容：" + "；".join(unsupported)
    evidence: list[EvidenceSnippet] = [{"id": e["id"], "title": e.get("title", ""), "text": str(e.get("text", ""))[:400]}
                for e in (state.get("evidence") or [])[:5]]
    return {"type": "handoff", "question": state.get("question", ""), "summary": summary,
            "reason": reason, "evidence": evidence}


def handoff_to_human(state: State) -> State:
    """Interrupt for a human agent; deliver their reply (str or ``{"reply": str}``)."""
    reply = interrupt(handoff_payload(state))
    text = str(reply.get("reply", "")) if isinstance(reply, dict) else str(reply or "")
    text = text.strip() or WAITING_REPLY
    return {"answer": text, "status": "answered", "answered_by": "human", "citations": [],
            "messages": [AIMessage(text)]}
