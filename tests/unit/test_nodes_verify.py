"""The verifier's pure entry point ``check_answer``: one case per injected error type."""

from __future__ import annotations

import json

import pytest

from strategies.combined import check_answer
from tests.fakes import ScriptedChatModel

EVIDENCE = [
    {"id": "r#1", "text": "签收后7天内可申请无理由退货，退货运费由买家承担。定制商品不支持7天无理由退货。"},
    {"id": "d#1", "text": "| 地区 | 时效 |\n|---|---|\n| 江浙沪 | 1-2天 |\n| 新疆、西藏 | 5-7天 |"},
    {"id": "p#1", "text": "支付宝退款1-3个工作日到账；银行卡退款3-7个工作日到账。Plus会员每月可领5张免运费券。"},
    {"id": "v#1", "text": "本规则自2026年1月1日起施行。", "superseded": False},
    {"id": "old#1", "text": "签收后15天内可申请价保。", "superseded": True},
    {"id": "tool:order_lookup#1", "text": "订单号：SO2026112500103，订单状态：运输中，金额：1000元"},
]

CORRECT = [
    "签收后7天内可申请无理由退货【来源:r#1】。退货运费由买家承担【来源:r#1】。",
    "七天内可以无理由退货【来源:r#1】。",
    "新疆、西藏地区一般5-7天送达【来源:d#1】。",
    "支付宝退款1至3个工作日到账【来源:p#1】。",
    "本规则自2026年1月1日起施行【来源:v#1】。",
    "您的订单SO2026112500103当前状态为运输中，金额1000元【来源:tool:order_lookup#1】。",
    "当前知识库中没有找到相关信息。如需进一步帮助，我可以为您转接人工客服。",
]

INJECTED = {
    "number": "签收后10天内可申请无理由退货【来源:r#1】。",
    "date": "本规则自2026年3月1日起施行【来源:v#1】。",
    "amount": "您的订单SO2026112500103金额1200元【来源:tool:order_lookup#1】。",
    "region_binding": "江浙沪地区5-7天送达【来源:d#1】。",
    "payment_binding": "银行卡退款1-3个工作日到账【来源:p#1】。",
    "condition": "定制商品支持7天无理由退货【来源:r#1】。",
    "party": "七天无理由退货的运费由卖家承担【来源:r#1】。",
    "invented_policy": "另外，Plus会员可享受双倍积分【来源:r#1】。",
    "claimed_action": "已为您提交退货申请【来源:r#1】。",
    "order_state": "您的订单当前状态为已签收【来源:tool:order_lookup#1】。",
    "unknown_citation": "退货运费由买家承担【来源:nope#9】。",
    "superseded": "签收后15天内可申请价保【来源:old#1】。",
}


@pytest.mark.parametrize("answer", CORRECT)
def test_correct_answers_pass(answer):
    result = check_answer("q", answer, EVIDENCE)
    assert result["overall"] == "pass", result["claims"]


@pytest.mark.parametrize("kind", sorted(INJECTED))
def test_injected_errors_fail(kind):
    result = check_answer("q", INJECTED[kind], EVIDENCE)
    assert result["overall"] == "fail", (kind, result["claims"])
    bad = [c for c in result["claims"] if c["status"] == "unsupported"]
    assert bad and all(c["reason"] for c in bad)


def test_claimed_action_allowed_after_a_successful_write():
    ev = [{"id": "tool:after_sales_apply#1", "text": "已为订单 SO1 提交仅退款申请，工单号 AS1，状态：待审核"}]
    answer = "已为订单 SO1 提交仅退款申请，工单号 AS1，状态：待审核【来源:tool:after_sales_apply#1】。"
    assert check_answer("q", answer, ev, write_succeeded=False)["overall"] == "fail"
    assert check_answer("q", answer, ev, write_succeeded=True)["overall"] == "pass"


def test_uncited_sentence_checked_against_all_evidence():
    assert check_answer("q", "支付宝退款1-3个工作日到账。", EVIDENCE)["overall"] == "pass"
    assert check_answer("q", "支付宝退款5个工作日到账。", EVIDENCE)["overall"] == "fail"


def test_question_words_are_context_not_claims():
    ev = [{"id": "a#1", "text": "年卡价格为149元，有效期365天。"}]
    result = check_answer("Plus会员年卡多少钱？", "Plus会员年卡价格为149元【来源:a#1】。", ev)
    assert result["overall"] == "pass", result["claims"]


def test_claims_carry_evidence_ids_and_shape():
    result = check_answer("q", CORRECT[0], EVIDENCE)
    assert set(result) == {"overall", "claims", "checks"}
    assert all(set(c) >= {"claim", "status", "evidence_ids", "reason"} for c in result["claims"])
    assert result["claims"][0]["evidence_ids"] == ["r#1"]


# The model's own wording (code-verified, not evidence text) beside a verbatim sentence: the LLM
# verdict counts on the first, is advisory on the second (tests/unit/test_llm_verifier_veto.py).
MIXED = "七天内可以无理由退货【来源:r#1】。退货运费由买家承担【来源:r#1】。"


def test_llm_verdicts_merge_and_unknown_means_recheck():
    verdict = {"overall": "need_recheck", "claims": [
        {"claim": "七天内可以无理由退货", "status": "unknown", "evidence_ids": ["r#1", "ghost"], "reason": "?"}]}
    llm = ScriptedChatModel([json.dumps(verdict, ensure_ascii=False)])
    result = check_answer("q", MIXED, EVIDENCE, llm=llm)
    assert result["overall"] == "need_recheck"
    llm_claims = [c for c in result["claims"] if c.get("source") == "llm"]
    assert llm_claims[0]["evidence_ids"] == ["r#1"]  # ids not in the evidence are dropped
    assert "七天内可以无理由退货" in llm.prompts[0][-1].content


def test_llm_unsupported_fails_and_llm_errors_are_recorded():
    verdict = {"overall": "fail", "claims": [{"claim": "x", "status": "unsupported", "evidence_ids": []}]}
    assert check_answer("q", MIXED, EVIDENCE,
                        llm=ScriptedChatModel([json.dumps(verdict)]))["overall"] == "fail"
    broken = check_answer("q", MIXED, EVIDENCE, llm=ScriptedChatModel(["oops", "oops"]))
    assert broken["overall"] == "pass"  # the code checks stand; the LLM failure is recorded
    assert any(c["name"] == "llm_claims" and c["error"] for c in broken["checks"])


def test_code_check_failure_wins_over_llm_pass():
    verdict = {"overall": "pass", "claims": [{"claim": "x", "status": "supported", "evidence_ids": ["r#1"]}]}
    result = check_answer("q", INJECTED["number"], EVIDENCE, llm=ScriptedChatModel([json.dumps(verdict)]))
    assert result["overall"] == "fail"
