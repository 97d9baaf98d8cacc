"""Terminal replies that need no evidence (refusal, clarification, greeting) and the finaliser."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from graph.context import Context
from graph.deps import Deps
from graph.state import State
from nodes.claims import parse_citations
from nodes.facts import merge_facts, tool_facts
from nodes.profiles import load_profile

NO_ANSWER = "当前知识库中没有找到相关信息。如需进一步帮助，我可以为您转接人工客服。"


def _profile(runtime: Runtime[Context]) -> dict[str, Any]:
    return load_profile((runtime.context or Context()).domain_profile)


def _reply(text: str, status: str, fail_reason: str | None = None) -> dict[str, Any]:
    return {"answer": text, "status": status, "fail_reason": fail_reason, "citations": [],
            "messages": [AIMessage(text)],
            "verification": {"overall": "pass", "claims": [], "checks": [{"name": "fixed_reply", "ok": True}]}}


def capabilities_text(deps: Deps) -> str:
    """Return what the agent can do, from the tool registry (the capability boundary)."""
    labels = [spec.description.split("：")[0].split(":")[0] for spec in deps.shop.specs()]
    return "、".join(labels) or "解答知识库中的问题"


def refuse_request(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Refuse politely: a blacklisted domain's fixed text, or an honest "can't do that here"."""
    profile = _profile(runtime)
    if state.get("fail_reason") == "no_capability":
        text = profile["no_capability_reply"].format(label=state.get("action_label") or "该操作",
                                                     capabilities=capabilities_text(deps))
        return _reply(text, "refused", "no_capability")
    domain = next((d for d in profile["blacklist"] if d["domain"] == state.get("domain")), None)
    return _reply(domain["refusal"] if domain else profile["out_of_scope_reply"], "refused", "out_of_scope")


def ask_clarification(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Ask the customer to clarify (an action without its order id, or an unclear message)."""
    label = state.get("action_label")
    if label:
        text = f"请提供需要{label}的订单号（例如 SO 开头的编号），我会先和您确认再办理。"
    else:
        text = _profile(runtime)["clarify_reply"]
    return _reply(text, "answered", "low_confidence")


def reply_chitchat(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Answer a greeting with the profile's fixed reply (no facts, nothing to verify)."""
    return _reply(_profile(runtime)["chitchat"]["reply"], "answered")


def finalize_answer(state: State) -> dict[str, Any]:
    """Publish the verified draft: answer, citations, status; remember verified tool facts."""
    draft = state.get("draft") or NO_ANSWER
    by_id = {e["id"]: e for e in state.get("evidence") or []}
    cited = [c for c in parse_citations(draft) if c in by_id]
    citations = [{"id": c, "title": by_id[c].get("title", ""), "source": by_id[c].get("source", ""),
                  "version": by_id[c].get("version", "")} for c in cited]
    fail_reason = state.get("fail_reason")
    status = "refused" if fail_reason == "no_evidence" else "answered"
    return {"answer": draft, "citations": citations, "status": status, "fail_reason": fail_reason,
            "messages": [AIMessage(draft)],
            "known_facts": merge_facts(state.get("known_facts") or [], tool_facts(state.get("tool_calls") or []))}
