"""Evaluation metrics: per-case judges and aggregates on hand-made cases with exact expectations."""

from __future__ import annotations

import pytest

from csagent.replay import percentile
from eval import metrics as m

RETURNS = "商品签收后7天内支持7天无理由退货，退货运费由买家承担；Plus会员每月享2次退货运费险。"
SHIPPING = "普通会员订单满99元包邮，新疆、西藏地区满199元包邮。"


def test_unsupported_facts_finds_changed_numbers_and_terms() -> None:
    assert m.unsupported_facts("签收后7天内可以退货【来源:r#1】", [RETURNS]) == []
    assert m.unsupported_facts("签收后15天内可以退货", [RETURNS]) == ["15天"]
    assert m.unsupported_facts("满199元包邮", [SHIPPING]) == []
    assert "价保" in m.unsupported_facts("支持价保", [RETURNS])


def test_forbidden_and_gold_facts_are_normalised() -> None:
    assert m.forbidden_present("满99元包邮", ["99元", "30天"]) == ["99元"]
    assert m.gold_facts_missing("签收后七天内可以退货", ["7天", "退货"]) == []
    assert m.gold_facts_missing("签收后七天内可以退货", ["15天", ["收货", "签收"]]) == ["15天"]
    assert m.gold_facts_missing("ＰＬＵＳ会员包邮", ["plus会员"]) == []


@pytest.mark.parametrize(("expected", "status", "ok"), [
    ("refused", "refused", True), ("refused", "handoff", False), ("handoff", "handoff", True),
    ("refused_or_handoff", "handoff", True), ("refused_or_handoff", "answered", False),
])
def test_boundary_correct(expected: str, status: str, ok: bool) -> None:
    assert m.boundary_correct(expected, status) is ok


def test_citation_pairs_judge_each_cited_chunk() -> None:
    pairs = m.citation_pairs("满99元包邮【来源:s】。签收后7天内可退货【来源:s,r】。也可以找客服【来源:zz】",
                             {"s": SHIPPING, "r": RETURNS})
    assert [(p["id"], p["supported"]) for p in pairs] == [("s", True), ("s", False), ("r", True),
                                                          ("zz", False)]


def _turn(suite: str, status: str, answer: str, **kw):
    judged = m.judge_turn(suite=suite, status=status, answer=answer, question=kw.pop("question", "q"),
                          evidence=kw.pop("evidence", []), **kw)
    return {"suite": suite, "status": status, "fail_reason": kw.get("fail_reason"), **judged}


def test_judge_turn_hallucination_uses_gold_docs_not_distractors() -> None:
    evidence = [{"id": "old#1", "kind": "chunk", "text": "满59元包邮", "superseded": True}]
    bad = m.judge_turn(suite="distractor", status="answered", answer="满59元包邮【来源:old#1】",
                       question="包邮门槛", evidence=evidence, gold_doc_texts=[SHIPPING],
                       gold_facts=["99元"])
    assert bad["hallucinated"] and bad["unsupported_facts"] == ["59元"]
    assert bad["facts_ok"] is False and bad["missing_facts"] == ["99元"]
    good = m.judge_turn(suite="normal", status="answered", answer="满99元包邮【来源:s】",
                        question="包邮门槛", evidence=[{"id": "s", "kind": "chunk", "text": SHIPPING}],
                        gold_doc_texts=[SHIPPING], gold_facts=["99元"])
    assert not good["hallucinated"] and good["facts_ok"] is True
    assert good["citations_total"] == good["citations_supported"] == 1


def test_judge_turn_counts_tool_data_and_question_as_support() -> None:
    tool = {"id": "tool:order_lookup#1", "kind": "tool", "text": "订单SO2026110100123 状态：运输中"}
    judged = m.judge_turn(suite="multiturn", status="answered",
                          answer="您的订单SO2026110100123目前运输中【来源:tool:order_lookup#1】",
                          question="SO2026110100123到哪了", evidence=[tool],
                          forbidden=["已签收"], expected="answered")
    assert not judged["hallucinated"] and judged["status_ok"] is True
    found = m.judge_turn(suite="multiturn", status="answered", answer="订单已签收", question="q",
                         evidence=[tool], forbidden=["已签收"])
    assert found["hallucinated"] and found["forbidden_found"] == ["已签收"]


def test_refusals_are_never_hallucinations() -> None:
    judged = m.judge_turn(suite="boundary", status="refused", answer="抱歉，这个问题涉及用药，建议咨询医生。",
                          question="能停药吗", evidence=[], expected="refused")
    assert judged["hallucinated"] is False and judged["boundary_ok"] is True


def test_compute_metrics_on_hand_made_cases() -> None:
    cases = [
        _turn("normal", "answered", "满99元包邮【来源:s】", gold_doc_texts=[SHIPPING], gold_facts=["99元"],
              evidence=[{"id": "s", "kind": "chunk", "text": SHIPPING}]),
        _turn("normal", "answered", "满88元包邮【来源:s】", gold_doc_texts=[SHIPPING], gold_facts=["99元"],
              evidence=[{"id": "s", "kind": "chunk", "text": SHIPPING}]),
        _turn("normal", "handoff", "已转人工客服", gold_doc_texts=[SHIPPING], gold_facts=["99元"]),
        _turn("normal", "answered", "满99元包邮", gold_doc_texts=[SHIPPING], gold_facts=["99元"]),
        {**_turn("boundary", "refused", "抱歉", expected="refused")},
        {**_turn("boundary", "answered", "可以", expected="refused_or_handoff")},
        {"suite": "verifier", **m.judge_verifier_case(label="injected", overall="fail")},
        {"suite": "verifier", **m.judge_verifier_case(label="injected", overall="pass")},
        {"suite": "verifier", **m.judge_verifier_case(label="correct", overall="need_recheck")},
        {"suite": "verifier", **m.judge_verifier_case(label="correct", overall="pass")},
    ]
    cases[2]["fail_reason"] = "no_evidence"
    cases[0]["node_latency_ms"] = {"retrieve": 10.0, "generate": 2.0}
    cases[1]["node_latency_ms"] = {"retrieve": 20.0, "generate": 4.0}
    out = m.compute_metrics(cases)
    metrics = out["metrics"]
    assert set(metrics) == set(m.METRIC_KEYS)
    assert metrics["hallucination_rate"] == pytest.approx(1 / 4)  # 88元 of 4 answered turns
    assert metrics["answer_accuracy"] == pytest.approx(2 / 3)  # boundary "可以" has no gold facts
    assert metrics["answerable_rate"] == pytest.approx(3 / 4)
    assert metrics["refusal_rate"] == pytest.approx(1 / 2)
    assert metrics["verifier_recall"] == pytest.approx(1 / 2)
    assert metrics["verifier_precision"] == pytest.approx(1 / 2)
    assert metrics["citation_precision"] == pytest.approx(1 / 2)
    assert metrics["handoff_rate"] == pytest.approx(1 / 6)
    assert out["counts"]["answerable_rate"] == {"num": 3, "den": 4}
    assert out["fail_reason_mix"] == {"no_evidence": 1, "conflicts_with_evidence": 0, "tool_failure": 0}
    assert out["latency"]["retrieve"]["p50"] == pytest.approx(15.0)
    assert out["latency"]["total"]["n"] == 2
    assert out["targets"]["hallucination_rate"]["met"] is False
    assert out["targets"]["verifier_recall"]["met"] is False


def test_empty_denominators_are_not_measured() -> None:
    out = m.compute_metrics([])
    assert all(v == 0.0 for v in out["metrics"].values())
    assert all(t["met"] is None for t in out["targets"].values())


def test_percentile_interpolates() -> None:
    assert percentile([], 50) == 0.0
    assert percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)


def test_cited_current_chunks_support_but_distractor_and_superseded_do_not() -> None:
    plus = {"id": "plus#1", "kind": "chunk", "doc_id": "membership-plus", "text": "Plus会员满49元包邮"}
    old = {"id": "old#1", "kind": "chunk", "doc_id": "shipping-v1", "text": "满59元包邮", "superseded": True}
    other = {"id": "inv#1", "kind": "chunk", "doc_id": "invoices", "text": "电子发票在签收后3天内开具"}
    answer = "满99元包邮【来源:s】。电子发票在签收后3天内开具【来源:inv#1】"
    ok = m.judge_turn(suite="normal", status="answered", answer=answer, question="q",
                      evidence=[{"id": "s", "kind": "chunk", "doc_id": "shipping", "text": SHIPPING}, other],
                      gold_doc_texts=[SHIPPING])
    assert not ok["hallucinated"] and ok["hallucinated_gold_only"]
    trap = m.judge_turn(suite="distractor", status="answered", answer="满49元包邮【来源:plus#1】",
                        question="普通会员满多少包邮", evidence=[plus], gold_doc_texts=[SHIPPING],
                        distractor_doc_ids=["membership-plus"])
    assert trap["hallucinated"] and trap["unsupported_facts"] == ["49元"]
    stale = m.judge_turn(suite="normal", status="answered", answer="满59元包邮【来源:old#1】", question="q",
                         evidence=[old], gold_doc_texts=[SHIPPING])
    assert stale["hallucinated"]


def test_list_enumerators_are_not_facts() -> None:
    assert m.unsupported_facts("不支持的商品：【来源:a】。9. 跨境商品【来源:a】", ["跨境商品不支持"]) == []
