"""Answerability: a unit answers only with a filler of the asked slot bound to the subject."""

from __future__ import annotations

from typing import Any

from strategies.rules.answerability import (
    Unit,
    answerability,
    evidence_units,
    slot_fillers,
)
from strategies.rules.binding import attribution, supporting_units
from strategies.rules.question import analyze_question, build_vocabulary

KB: list[dict[str, Any]] = [
    {"id": "refund#1", "doc_id": "refund", "title": "退款到账时间", "heading_path": ["到账时间"],
     "text": "| 支付方式 | 到账时间 |\n|---|---|\n| 支付宝 | 1-3个工作日 |\n| 信用卡 | 3-15个工作日 |"},
    {"id": "returns#1", "doc_id": "returns", "title": "七天无理由退货", "heading_path": ["申请期限"],
     "text": "商品签收后7天内可以申请无理由退货。退货运费由买家承担。"},
    {"id": "temple#1", "doc_id": "temple", "title": "灵隐寺", "heading_path": ["历史"],
     "text": "灵隐寺始建于东晋咸和元年，开山祖师为慧理。寺内供奉释迦牟尼佛。"},
]
VOCAB = build_vocabulary([["会员权益", "Plus会员"], ["会员权益", "普通会员"], ["退货", "跨境商品"],
                          ["退货", "国内商品"]], [str(e["text"]) for e in KB])


def gate(question: str, evidence: list[dict[str, Any]] = KB) -> Any:
    return answerability(analyze_question(question, vocab=VOCAB), evidence, vocab=VOCAB)


def test_units_are_sentences_and_rows_with_headers() -> None:
    units = evidence_units(KB)
    texts = [u.text for u in units]
    assert "支付方式：支付宝，到账时间：1-3个工作日" in texts
    assert "商品签收后7天内可以申请无理由退货。" in texts
    row = next(u for u in units if "支付宝" in u.text)
    assert row.row and row.context == ("退款到账时间", "到账时间") and row.id == "refund#1@0"


def test_fillers_per_slot() -> None:
    assert [f.text for f in slot_fillers("duration", "1-3个工作日到账")] == ["1-3工作日"]
    assert [f.text for f in slot_fillers("amount", "不满收取15元")] == ["15元"]
    assert slot_fillers("amount", "签收后7天内可以退") == []
    assert slot_fillers("date", "咸和元年始建") == [] or all(f.kind == "date" for f in slot_fillers("date", "x"))
    assert slot_fillers("person_org", "退货运费由买家承担")
    assert slot_fillers("yesno", "生鲜不支持退货")
    assert slot_fillers("none", "任何文字")[0].kind == "none"


def test_bound_filler_answers() -> None:
    result = gate("支付宝退款多久到账")
    assert result.answerable
    assert [v.unit.text for v in result.answering] == ["支付方式：支付宝，到账时间：1-3个工作日"]
    verdict = result.answering[0]
    assert [f.text for f in verdict.fillers] == ["1-3工作日"]
    assert verdict.qualifiers.matched == {"payment": ["支付宝"]}


def test_other_payment_row_does_not_answer() -> None:
    assert not gate("花呗退款多久到账").answerable


def test_related_text_without_the_asked_slot_does_not_answer() -> None:
    assert not gate("灵隐寺供奉的是谁", KB[:2]).answerable  # the temple's own unit is gone
    assert not gate("七天无理由退货运费多少钱").answerable  # who pays, but no amount
    assert gate("七天无理由退货运费谁出").answerable


def test_value_of_another_subject_does_not_answer() -> None:
    # the KB's own rare term (灵隐寺) is not carried by the unit with the duration
    assert not gate("灵隐寺几天内可以退货").answerable
    assert gate("商品几天内可以退货").answerable


def test_regime_conflict_under_another_heading() -> None:
    evidence = [{"id": "x#1", "doc_id": "x", "title": "退货", "heading_path": ["国内商品"],
                 "text": "签收后7天内可以申请无理由退货。"}]
    q = analyze_question("跨境商品几天内可以退货", vocab=VOCAB)
    assert not answerability(q, evidence, vocab=VOCAB).answerable
    unit = evidence_units(evidence)[0]
    assert attribution(q, unit, VOCAB.dimensions) is not None
    same = analyze_question("国内商品几天内可以退货", vocab=VOCAB)
    assert attribution(same, unit, VOCAB.dimensions) is None


def test_multi_part_partly_covered() -> None:
    result = gate("支付宝退款多久到账？另外发票怎么开")
    assert result.answerable and result.parts_covered == (True, False) and result.partly_covered


def test_empty_and_odd_inputs() -> None:
    assert not answerability(analyze_question(""), [], vocab=None).answerable
    assert evidence_units([{"id": "t", "kind": "tool", "text": "x"}]) == []
    unit = Unit(id="u", evidence_id="e", doc_id="d", text="")
    assert supporting_units("", [unit]) == []
