"""Router precedence in LLM mode (issues 7 and 10): the model decides; the rules overrule only
a contradiction of the profile, an unsure route or a failed call. Scripted chat model."""

from __future__ import annotations

import math
from typing import Any

from langchain_core.messages import AIMessage

from contracts.question import empty_question
from shop.decls import REGISTRY
from strategies.combined import GuardedRouter
from strategies.llm.router import LLMRouter
from strategies.protocols import Turn
from strategies.rules.profiles import load_profile
from strategies.rules.router import RulesRouter
from strategies.rules.tools import RulesToolPlanner
from tests.fakes import ScriptedChatModel

SPECS = tuple(REGISTRY.specs())
PROFILE = load_profile("shop")
ACTION_QUESTION = "订单 SO2026112000102 的耳机我不想要了，帮我申请退货退款"
OPEN_QUESTION = "这个东西一般能用多长时间呢"


def reply(route: str, *, domain: str = "after_sales", p: float | None = 0.95,
          confidence: float = 0.95) -> AIMessage:
    head = '{"route": "'
    rest = f'", "domain": "{domain}", "intent": "knowledge", "confidence": {confidence}, "reason": "r"}}'
    meta: dict[str, Any] = {}
    if p is not None:
        tokens = [(head, -0.01), (route, math.log(p)), (rest, -0.02)]
        meta = {"logprobs": {"content": [{"token": t, "logprob": lp} for t, lp in tokens]}}
    return AIMessage(head + route + rest, response_metadata=meta)


def guarded(*script: Any) -> tuple[GuardedRouter, ScriptedChatModel]:
    llm = ScriptedChatModel(list(script))
    planner = RulesToolPlanner()
    return GuardedRouter(LLMRouter(llm, planner), RulesRouter(planner)), llm


def turn(text: str) -> Turn:
    return Turn(question=empty_question(text), profile=PROFILE, tools=SPECS)


def rules_route(text: str) -> dict[str, Any]:
    return dict(RulesRouter(RulesToolPlanner()).route(turn(text)))


def same_route(decision: dict[str, Any], text: str) -> bool:
    """The rules' decision (its reason may carry why the model's route was not taken)."""
    ruled = rules_route(text)
    keys = ("route", "domain", "intent", "confidence")
    return all(decision.get(k) == ruled.get(k) for k in keys) \
        and str(decision["boundary_reason"]).startswith(ruled["boundary_reason"])


def test_the_models_route_stands_even_where_the_rules_would_decide_otherwise():
    assert rules_route(ACTION_QUESTION)["route"] in ("confirm", "clarify")
    router, llm = guarded(reply("answer"))
    decision = router.route(turn(ACTION_QUESTION))
    assert len(llm.prompts) == 1
    assert decision["route"] == "answer" and "llm_error" not in decision
    assert "LLM" not in str(router.primary.overruled)  # nothing overruled


def test_a_refusal_of_a_whitelisted_subject_is_overruled_by_the_rules():
    question = "七天无理由退货的运费谁承担？"
    router, llm = guarded(reply("refuse", domain="medical"))
    decision = router.route(turn(question))
    assert len(llm.prompts) == 1
    assert same_route(decision, question) and decision["route"] == "answer"


def test_a_tool_route_for_a_question_naming_no_action_is_overruled():
    router, _ = guarded(reply("tool", domain="orders"))
    decision = router.route(turn(OPEN_QUESTION))
    assert same_route(decision, OPEN_QUESTION) and decision["route"] == "answer"


def test_an_unsure_route_goes_to_the_rules():
    router, _ = guarded(reply("chitchat", p=0.2))
    assert same_route(router.route(turn(OPEN_QUESTION)), OPEN_QUESTION)
    router, _ = guarded(reply("chitchat", p=None, confidence=0.1))  # no logprobs: veto only
    assert same_route(router.route(turn(OPEN_QUESTION)), OPEN_QUESTION)


def test_a_failed_call_goes_to_the_rules_with_the_reason():
    router, _ = guarded(AIMessage("not json at all"), AIMessage("still not json"), AIMessage("no"))
    decision = router.route(turn(OPEN_QUESTION))
    assert decision["route"] == rules_route(OPEN_QUESTION)["route"]
    assert decision.get("llm_error", "").startswith("boundary")


def test_the_hard_guards_need_no_call():
    router, llm = guarded()  # an empty script: a call would fail the turn over to the rules
    decision = router.route(turn("转人工"))
    assert decision["route"] == "handoff" and "llm_error" not in decision
    assert llm.prompts == []
