"""Cited generation node: the answerer strategy writes the draft from this turn's evidence.

Offline the draft is extractive (``strategies.rules.answer``); with an LLM it is the model's
grounded answer, with the extractive one as fallback (``strategies.combined``).
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from contracts.context import Context
from contracts.state import State
from nodes._common import turn_of
from strategies.deps import Deps
from strategies.protocols import AnswerRequest


def generate_answer(state: State, runtime: Runtime[Context], deps: Deps) -> State:
    """Write the draft answer (with 【来源:id】 tags) and its fail reason, if any."""
    request = AnswerRequest(turn=turn_of(state, runtime, deps), queries=list(state.get("queries") or []),
                            evidence=list(state.get("evidence") or []),
                            feedback=list(state.get("feedback") or []),
                            needs_kb=bool(state.get("needs_kb")),
                            final_round=bool(state.get("feedback")) and int(state.get("reflections") or 0)
                            >= runtime.context.max_reflections)
    draft = deps.strategies.answerer.answer(request)
    update: State = {"draft": draft.text, "fail_reason": draft.fail_reason, "gate": draft.gate}
    if draft.llm_error:
        update["llm_error"] = draft.llm_error
    return update
