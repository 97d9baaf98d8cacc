"""Terminal replies that need no evidence (refusal, clarification, greeting) and the finaliser."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from contracts.context import Context
from contracts.routing import FailReason, Status
from contracts.state import Citation, State
from contracts.verification import fixed_reply_verification
from nodes._common import profile_of as _profile
from strategies.deps import Deps
from strategies.rules.answer import NO_ANSWER
from strategies.rules.claims import parse_citations
from strategies.rules.facts import merge_facts, tool_facts
from strategies.rules.router import BARE_REPLY, NOTHING_PENDING_REPLY

__all__ = ["NO_ANSWER", "ask_clarification", "finalize_answer", "refuse_request", "reply_chitchat"]


def _reply(text: str, status: Status, fail_reason: FailReason | None = None) -> State:
    return {"answer": text, "status": status, "fail_reason": fail_reason, "citations": [],
            "messages": [AIMessage(text)], "verification": fixed_reply_verification("fixed_reply")}


def capabilities_text(deps: Deps) -> str:
    """Return what the agent can do, from the tool registry (the capability boundary)."""
    labels = [spec.description.split("：")[0].split(":")[0] for spec in deps.shop.specs()]
    return "、".join(labels) or "解答知识库中的问题"


def refuse_request(state: State, runtime: Runtime[Context], deps: Deps) -> State:
    """Refuse politely: a blacklisted domain's fixed text, or an honest "can't do that here"."""
    profile = _profile(runtime)
    if state.get("fail_reason") == "no_capability":
        text = profile["no_capability_reply"].format(label=state.get("action_label") or "该操作",
                                                     capabilities=capabilities_text(deps))
        return _reply(text, "refused", "no_capability")
    domain = next((d for d in profile["blacklist"] if d["domain"] == state.get("domain")), None)
    return _reply(domain["refusal"] if domain else profile["out_of_scope_reply"], "refused", "out_of_scope")


def ask_clarification(state: State, runtime: Runtime[Context]) -> State:
    """Ask the customer to clarify (an action without its order id, or an unclear message)."""
    label = state.get("action_label")
    if label:
        text = f"请提供需要{label}的订单号（例如 SO 开头的编号），我会先和您确认再办理。"
    else:
        text = _profile(runtime)["clarify_reply"]
    return _reply(text, "answered", "low_confidence")


def reply_chitchat(state: State, runtime: Runtime[Context]) -> State:
    """Answer a greeting with the profile's fixed reply (no facts, nothing to verify).

    A bare 「确认」/「好的」 with nothing pending gets the "nothing to confirm" reply instead.
    """
    if state.get("intent") == BARE_REPLY:
        return _reply(NOTHING_PENDING_REPLY, "answered")
    return _reply(_profile(runtime)["chitchat"]["reply"], "answered")


def finalize_answer(state: State) -> State:
    """Publish the verified draft: answer, citations, status; remember verified tool facts."""
    draft = state.get("draft") or NO_ANSWER
    by_id = {e["id"]: e for e in state.get("evidence") or []}
    cited = [c for c in parse_citations(draft) if c in by_id]
    citations: list[Citation] = [
        {"id": c, "title": by_id[c].get("title", ""), "source": by_id[c].get("source", ""),
         "version": by_id[c].get("version", "")} for c in cited]
    fail_reason = state.get("fail_reason")
    status: Status = "refused" if fail_reason == "no_evidence" else "answered"
    return {"answer": draft, "citations": citations, "status": status, "fail_reason": fail_reason,
            "messages": [AIMessage(draft)],
            "known_facts": merge_facts(state.get("known_facts") or [], tool_facts(state.get("tool_calls") or []))}
