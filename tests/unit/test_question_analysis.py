"""Question analysis: the asked slot from the question's form, qualifiers, ids, parts."""

from __future__ import annotations

import pytest

from strategies.rules.question import (
    Vocabulary,
    analyze_question,
    asked_slot,
    build_vocabulary,
    normalize_question,
)


@pytest.mark.parametrize(("text", "slot"), [
    ("退款什么时候到账", "date"),
    ("哪天开始算", "date"),
    ("客服几点上班", "date"),
    ("寄回去要多久", "duration"),
    ("审核要几个工作日", "duration"),
    ("运费多少钱", "amount"),
    ("满多少包邮", "amount"),
    ("最多能用几张券", "count"),
    ("上回储物柜门修好，维修时我掏了多少", "amount"),  # a verb of paying before a bare 多少 asks for money
    ("运费谁出", "person_org"),
    ("用哪家快递", "person_org"),
    ("退货寄到哪里", "place"),
    ("能不能开发票", "yesno"),
    ("拆封了还可以退吗", "yesno"),
    ("能退不", "yesno"),
    ("怎么申请退款", "procedure"),
    ("为什么钱还没到", "reason"),
    ("How long does a refund take?", "duration"),
    ("Who pays the return shipping?", "person_org"),
    ("Can I return opened items?", "yesno"),
    ("你好", "none"),
    ("我的快递坏了", "none"),
    ("SO2026112500103", "none"),
    ("", "none"),
])
def test_slot_comes_from_the_form(text: str, slot: str) -> None:
    assert asked_slot(normalize_question(text)) == slot


@pytest.mark.parametrize(("text", "slot"), [
    ("支持哪几家银行分期", "person_org"),
    ("哪些快递能送冷链", "person_org"),
    ("合作的有哪几个平台", "person_org"),
    ("哪几个城市有自提点", "place"),
    ("哪个省份不发货", "place"),
    ("哪些国家可以直邮", "place"),
])
def test_a_plural_which_before_an_organisation_or_place_noun_asks_for_it(text: str, slot: str) -> None:
    # 「哪几家/哪些+机构名」 asks for organisations and 「哪几个/哪个+省份」 for places, like 「哪家」「哪里」
    assert asked_slot(normalize_question(text)) == slot


@pytest.mark.parametrize(("text", "terms"), [
    ("长途上能睡觉吗", ["长途", "睡觉"]),  # 「长途」 (an adverb to jieba) before 「上」
    ("更衣柜里丢了手机谁管", ["更衣柜", "手机"]),  # 「里」 does not join the verb after it
    ("我想借一本外文书多久能到", ["外文书"]),  # 「想|借」: a wish and its verb, not a term
    ("那我该找谁补办", ["补办"]),
    ("取件后发现少了东西找谁", ["取件", "发现", "东西"]),  # 「取|件|后」: the run ends before the postposition
    ("退箱后押金几天到", ["退箱", "押金"]),
])
def test_a_postposition_or_a_wish_is_no_part_of_a_subject_term(text: str, terms: list[str]) -> None:
    assert analyze_question(text)["subject_terms"] == terms


def test_bare_order_id_is_an_id_not_a_question() -> None:
    q = analyze_question("SO2026112500103")
    assert q["slot"] == "none" and q["order_ids"] == ["SO2026112500103"] and q["subject_terms"] == []


def test_region_tier_payment_qualifiers_and_subject() -> None:
    q = analyze_question("新疆用花呗付的退款多久到")
    assert q["qualifiers"]["region"] == ["新疆"]
    assert q["qualifiers"]["payment"] == ["花呗"]
    assert "退款" in q["subject_terms"] and "新疆" not in q["subject_terms"]
    city = analyze_question("发哈尔滨要几天")
    assert {"哈尔滨", "黑龙江"} <= set(city["qualifiers"]["region"])


def test_version_and_period_qualifiers() -> None:
    q = analyze_question("旧版政策春节期间几天发货")
    assert q["qualifiers"]["version"] == ["旧版"]
    assert any("春节" in p for p in q["qualifiers"]["period"])


def test_carried_facts_fill_missing_kinds_only() -> None:
    facts = [{"kind": "region", "value": "西藏", "source": "user"}, "会员等级：Plus会员（客户陈述）"]
    q = analyze_question("运费多少钱", facts)  # type: ignore[arg-type]
    assert q["qualifiers"]["region"] == ["西藏"] and q["qualifiers"]["tier"] == ["plus会员"]
    own = analyze_question("寄新疆运费多少钱", facts)  # type: ignore[arg-type]
    assert own["qualifiers"]["region"] == ["新疆"]


def test_multi_part_question_is_split() -> None:
    q = analyze_question("优惠券能叠加吗？另外积分怎么用")
    assert q["parts"] == ["优惠券能叠加吗", "另外积分怎么用"]
    assert q["slot"] == "yesno"
    assert analyze_question("退款多久到账")["parts"] == []


def test_vocabulary_dimensions_come_from_headings() -> None:
    vocab = build_vocabulary([["会员权益", "Plus会员"], ["会员权益", "普通会员"],
                              ["退货", "跨境商品"], ["退货", "生鲜商品"], ["退货", "数码商品"]])
    assert {"plus", "普通"} <= vocab.dimensions["会员"]
    assert {"跨境", "生鲜", "数码"} <= vocab.dimensions["商品"]
    q = analyze_question("跨境商品能退吗", vocab=vocab)
    assert "跨境商品" in q["qualifiers"]["regime"] or "跨境" in q["qualifiers"]["regime"]


def test_document_frequency_from_texts() -> None:
    vocab = build_vocabulary([], ["运费险赔付", "运费说明", "退款"])
    assert vocab.document_frequency("运费") == 2 and vocab.document_frequency("海淘") == 0
    assert Vocabulary().document_frequency("x") == 0


@pytest.mark.parametrize("text", ["", "   ", "？？？", "🙂", "a" * 2000, "退\x00款", "12345"])
def test_bad_input_never_raises(text: str) -> None:
    q = analyze_question(text)
    assert q["text"] == text and q["slot"] in ("none", "yesno", "count")


@pytest.mark.parametrize(("question", "terms"), [
    ("会员卡会不会自动续费", ["会员卡", "续费"]),  # the modal goes with its negated copy
    ("明天球场下不下雨还上课", ["球场", "下雨", "上课"]),  # a verb keeps its affirmative copy
    ("储物柜用不用押金", ["储物柜", "押金"]),
])
def test_an_a_not_a_form_leaves_no_negated_copy_among_the_terms(question, terms):
    subject = analyze_question(question)["subject_terms"]
    assert not any(t.startswith(("不", "没")) for t in subject)
    assert all(t in subject for t in terms)
