"""LLM strategies that are never worse than offline (issue 10.2–10.5), with the scripted fake model."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from contracts.question import empty_question
from shop.decls import REGISTRY
from strategies.llm.answer import LLMAnswerer, attach_citations, complete_with, key_facts
from strategies.llm.naive import naive_answer
from strategies.llm.router import LLMRouter
from strategies.llm.structured import value_probability
from strategies.protocols import AnswerRequest, Draft, Turn
from strategies.rules.answer import NO_ANSWER
from strategies.rules.profiles import load_profile
from strategies.rules.tools import RulesToolPlanner
from tests.fakes import ScriptedChatModel, ScriptExhausted

SPECS = tuple(REGISTRY.specs())
PROFILE = load_profile("shop")
EVIDENCE: list[Any] = [
    {"id": "returns#1", "kind": "chunk", "text": "七天无理由退货：商品签收后7天内可申请，退货运费由买家承担。",
     "superseded": False},
    {"id": "ship#2", "kind": "chunk", "text": "订单满99元包邮，偏远地区除外。", "superseded": False},
]


def turn(text: str, slot: str = "none") -> Turn:
    question = empty_question(text)
    question["slot"] = slot  # type: ignore[typeddict-item]
    return Turn(question=question, profile=PROFILE, tools=SPECS)


def route_message(route: str, *, domain: str = "after_sales", confidence: float = 0.95,
                  route_logprob: float | None = None) -> AIMessage:
    """A BoundaryDecision reply; with ``route_logprob`` it carries per-token logprobs."""
    head = '{"route": "'
    rest = f'", "domain": "{domain}", "intent": "knowledge", "confidence": {confidence}, "reason": "r"}}'
    content = head + route + rest
    meta: dict[str, Any] = {}
    if route_logprob is not None:
        tokens = [(head, -0.01), (route, route_logprob), (rest, -0.02)]
        meta = {"logprobs": {"content": [{"token": t, "logprob": lp} for t, lp in tokens]}}
    return AIMessage(content, response_metadata=meta)


def router(*script: Any) -> tuple[LLMRouter, ScriptedChatModel]:
    llm = ScriptedChatModel(list(script))
    return LLMRouter(llm, RulesToolPlanner()), llm


# --- router -----------------------------------------------------------------------------------


def test_route_probability_comes_from_the_route_token_logprob() -> None:
    message = route_message("answer", route_logprob=math.log(0.8))
    assert value_probability(message, "route") == pytest.approx(0.8)
    assert value_probability(route_message("answer"), "route") is None  # no logprobs


def test_confident_llm_route_is_taken_with_its_token_probability() -> None:
    r, _ = router(route_message("answer", route_logprob=math.log(0.9)))
    decision = r.route(turn("这个东西一般能用多长时间呢"))
    assert decision is not None and decision["route"] == "answer"
    assert decision["confidence"] == pytest.approx(0.9, abs=1e-3)
    assert "logprobs" in decision["boundary_reason"]


def test_self_reported_confidence_is_never_reported_as_a_probability() -> None:
    r, _ = router(route_message("answer", confidence=0.99))
    decision = r.route(turn("这个东西一般能用多长时间呢"))
    assert decision is not None and decision["confidence"] == 0.0
    assert "no logprobs" in decision["boundary_reason"]


def test_refusal_of_a_whitelisted_domain_is_overruled() -> None:
    r, _ = router(route_message("refuse", domain="medical", route_logprob=math.log(0.97)))
    assert r.route(turn("七天无理由退货的运费谁承担？")) is None  # 退货: whitelisted words
    r, _ = router(route_message("refuse", domain="after_sales", route_logprob=math.log(0.97)))
    assert r.route(turn("这个东西一般能用多长时间呢")) is None  # stated domain is whitelisted
    assert "whitelisted" in r.overruled[-1]


def test_out_of_scope_refusal_stands() -> None:
    r, _ = router(route_message("refuse", domain="other_platform", route_logprob=math.log(0.95)))
    decision = r.route(turn("隔壁那家店的东西值得买吗"))
    assert decision is not None and decision["route"] == "refuse"
    assert decision.get("status") == "refused"


@pytest.mark.parametrize("route", ["tool", "confirm"])
def test_tool_or_confirm_route_without_a_named_action_is_overruled(route: str) -> None:
    r, _ = router(route_message(route, route_logprob=math.log(0.99)))
    assert r.route(turn("这个东西一般能用多长时间呢")) is None
    assert "names no profile action" in r.overruled[-1]


def test_unsure_route_goes_to_the_rules() -> None:
    r, _ = router(route_message("chitchat", route_logprob=math.log(0.2)))
    assert r.route(turn("这个东西一般能用多长时间呢")) is None
    r, _ = router(route_message("answer", confidence=0.1))  # no logprobs: the veto only
    assert r.route(turn("这个东西一般能用多长时间呢")) is None


def test_the_model_decides_first_and_a_named_action_keeps_the_rules_plan() -> None:
    question = "订单 SO2026112000102 的耳机我不想要了，帮我申请退货退款"
    r, llm = router(route_message("confirm", domain="orders", route_logprob=math.log(0.9)))
    decision = r.route(turn(question))
    assert len(llm.prompts) == 1  # asked although the rules alone could decide
    assert decision is not None and decision["route"] in ("confirm", "clarify")
    assert decision["confidence"] == pytest.approx(0.9, abs=1e-3)
    assert decision["boundary_reason"].startswith("LLM route confirm")


# --- answerer ---------------------------------------------------------------------------------


def test_missing_tag_is_attached_only_where_one_unit_supports_the_sentence() -> None:
    text, n = attach_citations("退货运费由买家承担。满99元包邮。退货运费由商城承担。", EVIDENCE)
    assert n == 2
    assert text == "退货运费由买家承担【来源:returns#1】。满99元包邮【来源:ship#2】。退货运费由商城承担。"
    untouched = "退货运费由买家承担【来源:ship#2】。"  # a wrong tag is the verifier's to reject
    assert attach_citations(untouched, EVIDENCE) == (untouched, 0)


class Extractive:
    """The extractive answerer's stand-in: a fixed draft (the model's answer may not say less)."""

    def __init__(self, text: str = "extractive【来源:returns#1】。") -> None:
        self.calls = 0
        self.text = text

    def answer(self, request: AnswerRequest) -> Draft:
        self.calls += 1
        return Draft(text=self.text)


def request(text: str = "退货运费谁出", *, slot: str = "none",
            feedback: list[str] | None = None, final_round: bool = False) -> AnswerRequest:
    return AnswerRequest(turn=turn(text, slot), queries=[text], evidence=list(EVIDENCE),
                         feedback=feedback or [], final_round=final_round)


def answer_json(text: str) -> str:
    return json.dumps({"answer": text, "cannot_answer": False}, ensure_ascii=False)


def test_llm_draft_gets_its_missing_tags_by_code() -> None:
    llm = ScriptedChatModel([answer_json("退货运费由买家承担。")])
    draft = LLMAnswerer(llm, Extractive("退货运费由买家承担【来源:returns#1】。"), samples=0).answer(request())
    assert draft.text == "退货运费由买家承担【来源:returns#1】。"


@pytest.mark.parametrize("empty", ["无【来源:returns#1】", "无。", "有【来源:returns#1】。"])
def test_a_draft_that_states_nothing_gives_the_extractive_answer(empty: str) -> None:
    extractive = Extractive()
    draft = LLMAnswerer(ScriptedChatModel([answer_json(empty)]), extractive, samples=0).answer(request())
    assert draft.text.startswith("extractive") and extractive.calls == 1


def test_a_reflection_draft_that_repeats_a_rejected_claim_gives_the_extractive_answer() -> None:
    extractive = Extractive()
    llm = ScriptedChatModel([answer_json("满99元包邮【来源:ship#2】。")])  # no samples asked after it
    draft = LLMAnswerer(llm, extractive, samples=2).answer(
        request("买多少包邮", slot="amount", feedback=["满99元包邮【来源:ship#2】"]))
    assert draft.text.startswith("extractive") and extractive.calls == 1 and len(llm.prompts) == 1


def test_the_final_reflection_round_uses_the_extractive_answer_not_the_model() -> None:
    extractive, llm = Extractive(), ScriptedChatModel([])
    draft = LLMAnswerer(llm, extractive, samples=0).answer(
        request(feedback=["运费由商城承担"], final_round=True))
    assert draft.text.startswith("extractive") and extractive.calls == 1
    assert llm.prompts == []


def test_an_earlier_reflection_round_asks_the_model_with_the_feedback() -> None:
    extractive = Extractive("退货运费由买家承担【来源:returns#1】。")
    llm = ScriptedChatModel([answer_json("由买家承担退货的运费【来源:returns#1】。")])
    draft = LLMAnswerer(llm, extractive, samples=0).answer(request(feedback=["运费由商城承担"]))
    assert draft.text == "由买家承担退货的运费【来源:returns#1】。"  # the model's words, covering the floor
    assert "运费由商城承担" in llm.prompts[0][-1].content


def test_high_value_samples_that_disagree_give_the_extractive_answer() -> None:
    llm = ScriptedChatModel([answer_json("满99元包邮【来源:ship#2】。"),
                             answer_json("满99元包邮【来源:ship#2】。"),
                             answer_json("满199元包邮【来源:ship#2】。")])
    extractive = Extractive()
    draft = LLMAnswerer(llm, extractive, samples=2).answer(request("满多少钱包邮", slot="amount"))
    assert extractive.calls == 1 and draft.text.startswith("extractive")
    assert len(llm.prompts) == 3


def test_high_value_samples_that_agree_keep_the_llm_answer() -> None:
    same = answer_json("满99元包邮【来源:ship#2】。")
    llm = ScriptedChatModel([same, same, same])
    draft = LLMAnswerer(llm, Extractive("满99元包邮【来源:ship#2】。"), samples=2).answer(
        request("满多少钱包邮", slot="amount"))
    assert draft.text == "满99元包邮【来源:ship#2】。"


def test_the_extractive_sentences_a_partial_draft_leaves_out_are_appended() -> None:
    floor = "订单状态：待发货【来源:tool:o#1】。商品：蓝牙耳机×1，实付88元【来源:tool:o#1】。"
    llm = ScriptedChatModel([answer_json("您的订单待发货【来源:tool:o#1】。")])
    draft = LLMAnswerer(llm, Extractive(floor), samples=0).answer(request())
    assert draft.text.startswith("您的订单待发货【来源:tool:o#1】。")
    assert "实付88元" in draft.text  # the value the model left out


def test_complete_with_keeps_a_draft_that_states_every_fact() -> None:
    assert complete_with("只要满 99 元就包邮【来源:a】。", "满99元包邮【来源:a】。") == (
        "只要满 99 元就包邮【来源:a】。", 0)
    text, added = complete_with("满99元包邮【来源:a】。", "满99元包邮【来源:a】。偏远地区除外【来源:a】。")
    assert added == 1 and text.endswith("偏远地区除外【来源:a】。")


def test_a_model_that_cannot_answer_gets_the_extractive_answer_where_there_is_one() -> None:
    cannot = json.dumps({"answer": "", "cannot_answer": True})
    extractive = Extractive()
    draft = LLMAnswerer(ScriptedChatModel([cannot]), extractive, samples=0).answer(request())
    assert draft.text.startswith("extractive") and extractive.calls == 1
    nothing = Extractive(NO_ANSWER)
    draft = LLMAnswerer(ScriptedChatModel([cannot]), nothing, samples=0).answer(request())
    assert draft.text == NO_ANSWER


def test_ordinary_questions_are_not_sampled() -> None:
    llm = ScriptedChatModel([answer_json("退货运费由买家承担【来源:returns#1】。")])
    LLMAnswerer(llm, Extractive(), samples=2).answer(request())
    assert len(llm.prompts) == 1  # a second call would have raised ScriptExhausted


def test_key_facts_ignore_wording() -> None:
    assert key_facts("满99元包邮【来源:a】") == key_facts("只要满 99 元就包邮")
    assert key_facts("满99元包邮") != key_facts("满199元包邮")


def test_naive_rag_sends_a_plain_prompt_and_returns_the_text() -> None:
    llm = ScriptedChatModel([AIMessage("运费商家出")])
    assert naive_answer(llm, "运费谁出", EVIDENCE) == "运费商家出"
    prompt = "\n".join(str(m.content) for m in llm.prompts[0])
    assert "退货运费由买家承担" in prompt and "来源" not in prompt
    with pytest.raises(ScriptExhausted):
        naive_answer(llm, "再问", EVIDENCE)


def test_the_llm_verifier_sees_only_the_evidence_the_answer_cites() -> None:
    from strategies.llm.verify import LLMClaimChecker
    from strategies.protocols import CheckRequest

    verdict = json.dumps({"claims": [{"claim": "满99元包邮", "status": "supported",
                                      "evidence_ids": ["ship#2"]}], "overall": "pass"})
    llm = ScriptedChatModel([verdict])
    result = LLMClaimChecker(llm).check(CheckRequest(
        question="包邮吗", answer="满99元包邮【来源:ship#2】。", evidence=list(EVIDENCE)))
    prompt = "\n".join(str(m.content) for m in llm.prompts[0])
    assert "满99元包邮，偏远地区除外" in prompt and "退货运费由买家承担" not in prompt
    assert result["overall"] == "pass"


def test_an_overruled_model_route_is_named_in_the_rules_decision() -> None:
    """The trace shows what the model proposed, at what probability, and why it was not taken."""
    from strategies.combined import GuardedRouter
    from strategies.rules.router import RulesRouter

    r, _ = router(route_message("refuse", domain="medical", route_logprob=math.log(0.97)))
    decision = GuardedRouter(r, RulesRouter(RulesToolPlanner())).route(turn("七天无理由退货的运费谁承担？"))
    assert decision["route"] != "refuse"
    assert "LLM refusal of a whitelisted domain" in str(decision.get("boundary_reason"))
    r, _ = router(route_message("answer", route_logprob=math.log(0.2)))
    decision = GuardedRouter(r, RulesRouter(RulesToolPlanner())).route(turn("七天无理由退货的运费谁承担？"))
    assert "p=0.20" in str(decision.get("boundary_reason"))


# --- router calibration (issue 10.3) -------------------------------------------------------------


def calibrated(tmp_path: Any, thresholds: dict[str, float], *script: Any) -> tuple[Any, ScriptedChatModel]:
    from strategies.combined import GuardedRouter
    from strategies.llm.router import RouterCalibration
    from strategies.rules.router import RulesRouter

    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"model": "m", "thresholds": thresholds}), encoding="utf-8")
    llm = ScriptedChatModel(list(script))
    primary = LLMRouter(llm, RulesToolPlanner(), calibration=RouterCalibration.load(path))
    return GuardedRouter(primary, RulesRouter(RulesToolPlanner())), llm


def test_a_model_that_can_only_agree_with_the_rules_is_not_asked(tmp_path: Any) -> None:
    guarded, llm = calibrated(tmp_path, {"answer": 0.6, "confirm": 1.01})  # ScriptExhausted if asked
    decision = guarded.route(turn("七天无理由退货的运费谁承担？"))
    assert decision["route"] == "answer" and llm.prompts == []
    assert "LLM router not asked" in str(decision["boundary_reason"])


def test_a_model_whose_possible_routes_would_all_be_overruled_is_not_asked(tmp_path: Any) -> None:
    # refuse is calibrated, but never taken for a question whose words are on the whitelist;
    # tool is calibrated, but never taken for a question that names no profile action
    thresholds = {"answer": 0.24, "refuse": 0.62, "tool": 0.46}
    guarded, llm = calibrated(tmp_path, thresholds)  # ScriptExhausted if asked
    decision = guarded.route(turn("七天无理由退货的运费谁承担？"))
    assert decision["route"] == "answer" and llm.prompts == []
    assert "no route it could propose would change answer" in str(decision["boundary_reason"])


def test_a_model_that_could_change_the_route_is_still_asked(tmp_path: Any) -> None:
    thresholds = {"answer": 0.24, "refuse": 0.62, "tool": 0.46}
    # no whitelist word: a refusal could be taken
    guarded, llm = calibrated(tmp_path, thresholds,
                              route_message("refuse", domain="other_platform", route_logprob=math.log(0.9)))
    assert guarded.route(turn("隔壁那家店的东西值得买吗"))["route"] == "refuse"
    assert len(llm.prompts) == 1
    # the rules plan a tool: the model's answer route could be taken
    guarded, llm = calibrated(tmp_path, thresholds, route_message("answer", route_logprob=math.log(0.9)))
    assert guarded.route(turn("帮我查一下订单"))["route"] == "answer" and len(llm.prompts) == 1


def test_without_a_calibration_a_whitelisted_answer_turn_is_still_asked() -> None:
    from strategies.combined import GuardedRouter
    from strategies.rules.router import RulesRouter

    r, llm = router(route_message("clarify", route_logprob=math.log(0.99)))
    GuardedRouter(r, RulesRouter(RulesToolPlanner())).route(turn("七天无理由退货的运费谁承担？"))
    assert len(llm.prompts) == 1  # clarify, handoff and chitchat could still be taken


def test_a_calibrated_threshold_replaces_the_profiles(tmp_path: Any) -> None:
    # the profile would take a refusal at 0.5; calibrated, 0.97 is needed and 0.9 is overruled
    guarded, llm = calibrated(tmp_path, {"answer": 0.6, "refuse": 0.97},
                              route_message("refuse", domain="other_platform", route_logprob=math.log(0.9)))
    decision = guarded.route(turn("隔壁那家店的东西值得买吗"))
    assert len(llm.prompts) == 1 and "p=0.90 < 0.97" in str(decision["boundary_reason"])
    guarded, _ = calibrated(tmp_path, {"answer": 0.6, "refuse": 0.8},
                            route_message("refuse", domain="other_platform", route_logprob=math.log(0.9)))
    assert guarded.route(turn("隔壁那家店的东西值得买吗"))["route"] == "refuse"


def test_a_route_the_calibration_never_saw_is_never_taken(tmp_path: Any) -> None:
    guarded, llm = calibrated(tmp_path, {"answer": 0.6},
                              route_message("chitchat", route_logprob=math.log(0.99)))
    decision = guarded.route(turn("帮我查一下订单"))  # the rules plan a tool: the model may say answer
    assert len(llm.prompts) == 1 and decision["route"] == "tool"
    assert "LLM route chitchat at p=0.99 < 1.01" in str(decision["boundary_reason"])


@pytest.mark.parametrize("content", ["{", '{"model": "m"}', '{"thresholds": {"answer": "high"}}',
                                     '{"thresholds": {"fly": 0.5}}', '{"thresholds": {"answer": -1}}'])
def test_a_bad_calibration_file_is_a_clear_settings_error(tmp_path: Any, content: str) -> None:
    from csagent.config import Settings, SettingsError

    path = tmp_path / "cal.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SettingsError, match="CSAGENT_LLM_CALIBRATION"):
        Settings.from_env(llm_calibration=path)
    with pytest.raises(SettingsError, match="CSAGENT_LLM_CALIBRATION"):
        Settings.from_env(llm_calibration=tmp_path / "missing.json")


def test_the_shipped_calibration_of_the_small_model_loads() -> None:
    from csagent.localllm import calibration_for, spec_for
    from strategies.llm.router import RouterCalibration

    path = calibration_for(spec_for("0.5b"))
    assert path is not None
    assert RouterCalibration.load(path).takeable() == {"answer"}
