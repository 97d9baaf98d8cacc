"""The LLM verifier's veto: advisory on code-anchored evidence text, counted everywhere else.

The scripted fake chat model stands at the LLM boundary (a call the script does not expect
fails the test), the code checks are the real ones.
"""

from __future__ import annotations

from typing import Any

import pytest

from contracts.verification import ClaimResult
from strategies.combined import CodeThenLLMChecker, check_answer
from strategies.llm.verify import LLMClaimChecker
from strategies.protocols import CheckRequest
from strategies.rules.anchored import anchored_claims, is_anchored, split_llm_verdicts
from strategies.rules.answerability import evidence_units
from strategies.rules.verify import RulesClaimChecker
from tests.fakes import ScriptedChatModel

Q = "几天内可以退货，运费谁出"
EVIDENCE: list[dict[str, Any]] = [
    {"id": "returns#1", "title": "退货政策", "text": "七天无理由退货：商品签收后7天内可申请。退货运费由买家承担。"}]
VERBATIM_1 = "商品签收后7天内可申请【来源:returns#1】。"
VERBATIM_2 = "退货运费由买家承担【来源:returns#1】。"
PARAPHRASE = "退货的运费由买家来承担【来源:returns#1】。"  # code-verified, not evidence text


def verdict(*claims: tuple[str, str]) -> dict[str, Any]:
    """The LLM verifier's JSON: (claim, status) pairs."""
    rows = [{"claim": c, "status": s, "evidence_ids": ["returns#1"], "reason": "r"} for c, s in claims]
    overall = "fail" if any(s == "unsupported" for _, s in claims) else "pass"
    return {"claims": rows, "overall": overall}


def run(answer: str, script: list[Any], evidence: list[dict[str, Any]] | None = None
        ) -> tuple[dict[str, Any], ScriptedChatModel]:
    llm = ScriptedChatModel(script)
    checker = CodeThenLLMChecker(RulesClaimChecker(), LLMClaimChecker(llm))
    request = CheckRequest(question=Q, answer=answer, evidence=evidence or EVIDENCE,
                           require_citations=True)
    return dict(checker.check(request)), llm


def test_extractive_answer_is_not_sent_to_the_llm() -> None:
    result, llm = run(VERBATIM_1 + VERBATIM_2, [])  # any LLM call would exhaust the script
    assert result["overall"] == "pass"
    assert llm.prompts == []
    assert {"name": "llm_claims_not_needed", "ok": True} in result["checks"]
    assert all(c.get("source", "code") == "code" for c in result["claims"])


def test_llm_unsupported_on_anchored_sentence_is_advisory() -> None:
    script = [verdict(("商品签收后7天内可申请", "unsupported"), ("退货的运费由买家来承担", "supported"))]
    result, llm = run(VERBATIM_1 + PARAPHRASE, script)
    assert len(llm.prompts) == 1
    assert result["overall"] == "pass", result
    assert [c["claim"] for c in result["advisory"]] == ["商品签收后7天内可申请"]
    assert result["advisory"][0]["status"] == "unsupported"  # recorded as the model said it
    assert not [c for c in result["claims"] if c["status"] != "supported"]


def test_llm_unsupported_on_own_wording_still_vetoes() -> None:
    script = [verdict(("商品签收后7天内可申请", "supported"), ("退货的运费由买家来承担", "unsupported"))]
    result, _ = run(VERBATIM_1 + PARAPHRASE, script)
    assert result["overall"] == "fail"
    vetoes = [c for c in result["claims"] if c.get("source") == "llm" and c["status"] == "unsupported"]
    assert [c["claim"] for c in vetoes] == ["退货的运费由买家来承担"]
    assert "advisory" not in result


def test_llm_unknown_on_own_wording_needs_recheck() -> None:
    result, _ = run(VERBATIM_1 + PARAPHRASE, [verdict(("退货的运费由买家来承担", "unknown"))])
    assert result["overall"] == "need_recheck"


def test_unlocated_llm_claim_counts() -> None:
    """A verdict the code cannot place in one sentence is taken at its word (conservative)."""
    result, _ = run(VERBATIM_1 + PARAPHRASE, [verdict(("顾客想换一个别的颜色", "unsupported"))])
    assert result["overall"] == "fail"
    assert "advisory" not in result


def test_code_rejection_is_never_softened() -> None:
    """A sentence the code rejects stays unsupported whatever the LLM says."""
    fabricated = "退货运费由商城承担，并补贴15元【来源:returns#1】。"
    result, _ = run(VERBATIM_1 + fabricated, [verdict(("退货运费由商城承担，并补贴15元", "supported"))])
    assert result["overall"] == "fail"
    assert any(c.get("source", "code") == "code" and c["status"] == "unsupported" for c in result["claims"])


def test_superseded_unit_does_not_anchor() -> None:
    old = [{**EVIDENCE[0], "superseded": True}]
    checked = RulesClaimChecker().check(CheckRequest(question=Q, answer=VERBATIM_1, evidence=old))
    units = {u.id: u for u in evidence_units(old)}
    assert not any(is_anchored(c, units, Q) for c in checked["claims"])


def test_synthesis_across_units_is_not_anchored() -> None:
    joined = "七天无理由退货，商品签收后7天内可申请，运费由买家承担【来源:returns#1】。"
    checked = RulesClaimChecker().check(CheckRequest(question=Q, answer=joined, evidence=EVIDENCE,
                                                     require_citations=True))
    assert checked["overall"] == "pass"
    assert anchored_claims(checked["claims"], EVIDENCE, Q) == []


@pytest.mark.parametrize("status", ["unsupported", "unknown"])
def test_split_keeps_supported_verdicts_counted(status: str) -> None:
    code: list[ClaimResult] = [{"claim": "商品签收后7天内可申请。", "status": "supported",
                                "evidence_ids": ["returns#1"], "reason": ""}]
    llm: list[ClaimResult] = [
        {"claim": "商品签收后7天内可申请", "status": "supported", "evidence_ids": [], "reason": "",
         "source": "llm"},
        {"claim": "商品签收后7天内可申请", "status": status, "evidence_ids": [], "reason": "",
         "source": "llm"}]
    counted, advisory = split_llm_verdicts(llm, code, ["商品签收后7天内可申请。"])
    assert [c["status"] for c in counted] == ["supported"]
    assert [c["status"] for c in advisory] == [status]


def test_check_answer_entry_point_follows_the_rule() -> None:
    llm = ScriptedChatModel([])
    result = check_answer(Q, VERBATIM_1 + VERBATIM_2, EVIDENCE, llm=llm, require_citations=True)
    assert result["overall"] == "pass" and llm.prompts == []


@pytest.mark.parametrize("claim", ["x", "？", ""])
def test_claim_without_content_is_located_nowhere_and_counts(claim: str) -> None:
    result, _ = run(VERBATIM_1 + PARAPHRASE, [verdict((claim, "unsupported"))])
    assert result["overall"] == "fail"


def test_graph_requests_skip_the_llm_for_a_draft_the_code_rejected() -> None:
    fabricated = "退货运费由商城承担，并补贴15元【来源:returns#1】。"
    llm = ScriptedChatModel([])  # a call would exhaust the script
    checker = CodeThenLLMChecker(RulesClaimChecker(), LLMClaimChecker(llm))
    result = checker.check(CheckRequest(question=Q, answer=PARAPHRASE + fabricated, evidence=EVIDENCE,
                                        require_citations=True, llm_after_code_fail=False))
    assert result["overall"] == "fail" and llm.prompts == []
    asked, llm = run(PARAPHRASE + fabricated, [verdict(("退货的运费由买家来承担", "supported"))])
    assert asked["overall"] == "fail" and len(llm.prompts) == 1  # the default still asks
