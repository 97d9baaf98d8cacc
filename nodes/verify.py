"""Verifier node: the claim checker strategy checks the draft against this turn's evidence.

Offline the code checks (``strategies.rules.verify``); with an LLM the code checks then the
model's per-claim verdicts (``strategies.combined.CodeThenLLMChecker``), when the run's
``llm_verify`` allows it. The pure entry point is ``strategies.combined.check_answer``.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from contracts.context import Context
from contracts.state import State
from nodes._common import context_of
from strategies.deps import Deps
from strategies.protocols import CheckRequest
from strategies.rules.question import vocabulary_for


def verify_answer(state: State, runtime: Runtime[Context], deps: Deps) -> State:
    """Check the draft; mark the turn for handoff when a failure has no reflection round left."""
    ctx = context_of(runtime)
    calls = state.get("tool_calls") or []
    request = CheckRequest(
        question=state.get("question", ""), answer=state.get("draft", ""),
        evidence=list(state.get("evidence") or []),
        write_succeeded=any(c.get("write") and c["result"].get("valid") for c in calls),
        require_citations=True, use_llm=ctx.llm_verify and state.get("route") != "chitchat",
        llm_after_code_fail=False,  # [llm] a draft the code rejected goes to reflection as it is
        analysis=state.get("analysis"), vocab=vocabulary_for(deps.retriever))  # [answer]
    verification = deps.strategies.claim_checker.check(request)
    update: State = {"verification": verification}
    failed = [c.get("error") for c in verification["checks"] if c.get("error")]  # [llm] 10.7
    if failed:
        update["llm_error"] = f"verify: {failed[-1]}"
    if verification["overall"] == "fail" and (state.get("reflections") or 0) >= ctx.max_reflections:
        update["status"], update["fail_reason"] = "handoff", "reflection_exhausted"
    return update
