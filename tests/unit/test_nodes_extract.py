"""Offline extractive answer: sentence scoring and selection helpers, the coverage gate, routing of own-order questions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.runtime import Runtime

from graph.context import Context
from graph.deps import Deps
from nodes.boundary import route_boundary
from shop.tools import ShopToolbox
from strategies.rules.answer import (
    answer_terms,
    passes_gate,
    query_terms,
    retrieval_vouches,
    select_sentences,
    sentence_units,
)
from strategies.rules.extract import (
    Candidate,
    asked_types,
    build_candidates,
    choose,
    conflicting_slots,
    content_terms,
    coverage,
    idf_weights,
    question_bigrams,
    robust_terms,
    row_key_match,
    score_candidates,
    slot_kinds,
    slot_terms,
    stated_types,
)
from strategies.rules.risk import asks_own_orders
from tests.fakes import fixture_index


def chunk(cid: str, text: str, *, doc: str | None = None, headings: tuple[str, ...] = (),
          superseded: bool = False) -> dict[str, Any]:
    return {"id": cid, "kind": "chunk", "doc_id": doc or cid.split("#")[0], "title": "", "text": text,
            "heading_path": list(headings), "superseded": superseded}


@pytest.mark.parametrize(("question", "expected"), [
    ("退款多久到账", {"duration"}), ("Plus季卡多少钱", {"amount", "number"}),
    ("一件商品可以换几次", {"count", "number"}), ("北京次日达截单几点", {"clock", "number"}),
    ("白条几号还款", {"date", "number"}), ("积分能提现吗", {"yesno"}), ("手续费退不退", {"yesno", "amount"}),
    ("退货流程", set()),
])
def test_asked_types(question, expected):
    assert asked_types(question) == expected


def test_stated_types_reads_normalised_text():
    assert {"duration", "number"} <= stated_types("审核时效为十二小时")
    assert "amount" in stated_types("不满收取20元运费")
    assert "clock" in stated_types("截单时间为23:00")
    assert "date" not in stated_types("客服电话400-820-6688")
    assert stated_types("请在订单详情中查看") == set()


def test_content_terms_drop_fillers_and_contained_terms():
    assert content_terms(["信用", "信用卡", "分期", "请问", "吗", "手续", "手续费"]) == ["信用卡", "分期", "手续费"]
    assert content_terms(["Plus", "季卡"]) == ["plus", "季卡"]


def test_slot_terms_and_answer_terms():
    assert slot_terms("我是Plus会员，寄新疆用花呗") == ["新疆", "花呗", "plus会员"]
    terms = answer_terms("我是Plus会员，寄新疆运费多少", ["我是Plus会员，寄新疆运费多少", "运费 包邮"])
    assert terms["新疆"] == terms["plus会员"] == 1.5
    assert terms["运费"] == 1.0 and terms["包邮"] == 0.5
    assert "plus" not in terms  # a slot replaces its own parts


def test_idf_weights_make_rare_terms_heavier():
    texts = ["退货运费由买家承担", "退货需在7天内申请", "内衣一经拆封不支持退货"]
    weights = idf_weights({"退货": 1.0, "内衣": 1.0, "火箭": 1.0}, texts)
    assert weights["内衣"] > weights["退货"] > 0
    assert weights["火箭"] > weights["内衣"]  # absent everywhere: counts in no candidate's favour


def test_row_key_match():
    assert row_key_match("新疆、西藏、青海", "寄青海的运费") == 1.0
    assert 0 < row_key_match("专属客服热线", "普通会员打哪个客服电话") < 1
    assert row_key_match("江浙沪", "寄青海的运费") == 0.0
    assert question_bigrams("请问运费险") == {"运费", "费险"}


TABLE = ("| 地区 | 时效 |\n|---|---|\n| 江浙沪 | 1-2天 |\n| 新疆、西藏 | 5-8天 |\n"
         "| 港澳台 | 7-15天 |")


def selected(question: str, evidence: list[dict[str, Any]], min_coverage: float = 0.5) -> list[tuple[str, str]]:
    return select_sentences(question, [question], evidence, min_coverage, set())


def test_table_row_matching_the_named_region_wins():
    evidence = [chunk("delivery#1", "各地区配送时效如下。\n\n" + TABLE, headings=("配送时效",))]
    chosen = selected("寄到新疆几天能到", evidence)
    assert chosen[0] == ("地区：新疆、西藏，时效：5-8天", "delivery#1")
    assert all("江浙沪" not in text and "港澳台" not in text for text, _ in chosen)


def test_rare_question_term_beats_retrieval_rank():
    evidence = [chunk("returns#1", "已激活的手机不适用7天无理由退货。试穿不影响二次销售的衣服可以7天无理由退货。"),
                chunk("returns#2", "贴身衣物，包括内衣、内裤、袜子，一经拆封不支持7天无理由退货。")]
    chosen = selected("内衣拆了还能七天无理由退吗", evidence)
    assert chosen[0] == ("贴身衣物，包括内衣、内裤、袜子，一经拆封不支持7天无理由退货", "returns#2")


def test_faq_answer_under_a_matching_faq_heading_is_preferred():
    evidence = [chunk("ins#1", "运费险保费在0.8元至3.5元之间。赠送运费险的商品无需支付保费。", headings=("运费险", "保费")),
                chunk("ins#2", "自行寄回的，赔付金额在退货仓签收后24小时内进入优选汇余额。",
                      headings=("运费险", "常见问题", "8.2 运费险赔的钱到哪里了？"))]
    chosen = selected("运费险赔的钱打到哪里", evidence)
    assert chosen[0][1] == "ins#2"


def test_complement_adds_the_sentence_with_the_asked_number_from_the_same_document():
    evidence = [chunk("presale#1", "预售商品在页面注明预计发货日期。承诺发货时间最长不超过付清尾款后的30天。"
                                   "预售定金支付后不退。")]
    chosen = selected("预售最晚多久发货", evidence)
    texts = [text for text, _ in chosen]
    assert "承诺发货时间最长不超过付清尾款后的30天" in texts
    assert "预售定金支付后不退" not in texts


def test_superseded_versions_and_dropped_sentences_are_never_selected():
    evidence = [chunk("pp-v1#1", "价保期为7天。", doc="pp-v1", superseded=True),
                chunk("pp#1", "价保期为15天。价保按付款时间计算。", doc="pp")]
    assert [eid for _, eid in selected("价保期有几天", evidence)] == ["pp#1"]
    chosen = select_sentences("价保期有几天", [], evidence, 0.5, {"价保期为15天"})
    assert all(text != "价保期为15天" for text, _ in chosen)


def test_choose_keeps_another_documents_near_equal_out_unless_it_is_almost_as_good():
    def cand(text: str, doc: str, score: float) -> Candidate:
        return Candidate(text=text, evidence_id=f"{doc}#1", doc_id=doc, rank=0, score=score, plain_cov=1.0)
    best, same, other_close, other_far = (cand("a", "d1", 1.0), cand("b", "d1", 0.85),
                                          cand("c", "d2", 0.95), cand("d", "d2", 0.88))
    assert [c.text for c in choose([other_far, same, best, other_close])] == ["a", "c", "b"]
    assert choose([]) == []


def test_choose_adds_the_second_fact_of_the_best_units_document_when_the_gate_accepted_all():
    # a fee and its cap, a step and its deadline: the second fact of one rule scores lower and
    # shares fewer of the question's words, yet belongs in the answer; another document's does not
    def cand(text: str, doc: str, score: float, cov: float) -> Candidate:
        return Candidate(text=text, evidence_id=f"{doc}#1", doc_id=doc, rank=0, score=score, plain_cov=cov)
    best, second, weak, other = (cand("fee", "d1", 1.0, 0.8), cand("cap", "d1", 0.65, 0.4),
                                 cand("aside", "d1", 0.5, 0.8), cand("elsewhere", "d2", 0.65, 0.8))
    assert [c.text for c in choose([weak, other, second, best], gated=True)] == ["fee", "cap"]
    # without the answerability gate's word for every candidate, only a near-equal joins the best
    assert [c.text for c in choose([weak, other, second, best])] == ["fee"]


def test_score_candidates_penalises_other_rows_of_a_table_that_names_the_asked_row():
    evidence = [chunk("fees#1", TABLE)]
    cands = build_candidates(evidence, sentence_units, set(), lambda u: u.strip("。"))
    score_candidates("港澳台几天到", answer_terms("港澳台几天到", []), cands)
    best = max(cands, key=lambda c: c.score)
    assert best.row_key == "港澳台"
    assert all(c.score < best.score - 0.2 for c in cands if c is not best)


@pytest.mark.parametrize("question", ["办借书证要花多久", "办借书证需要多久"])
def test_score_candidates_prefers_the_time_something_takes_for_how_long_it_takes(question):
    # 「要花多久」 asks what the act takes: 「一般需要10分钟」, not a deadline or a hold time
    evidence = [chunk("card#1", "借书证须在申请后30天内领取。借书证逾期未领的保留7天。办理借书证一般需要10分钟。")]
    cands = build_candidates(evidence, sentence_units, set(), lambda u: u.strip("。"))
    score_candidates(question, answer_terms(question, []), cands)
    assert max(cands, key=lambda c: c.score).text == "办理借书证一般需要10分钟"


@pytest.mark.parametrize(("term_cov", "bigram_cov", "passes"), [
    (0.5, 0.0, True), (0.33, 0.45, True), (0.33, 0.3, False), (0.2, 0.9, False), (0.0, 1.0, False),
])
def test_passes_gate(term_cov, bigram_cov, passes):
    assert passes_gate(term_cov, bigram_cov, 0.5, 0.4) is passes


@pytest.mark.parametrize(("term_cov", "vouched", "passes"), [
    (0.25, True, True), (0.25, False, False), (0.2, True, False), (0.0, True, False), (0.5, False, True),
])
def test_passes_gate_semantic_path_needs_vouching_and_a_lower_lexical_bar(term_cov, vouched, passes):
    assert passes_gate(term_cov, 0.0, 0.5, 0.4, vouched=vouched, semantic_share=0.5) is passes


def scored(cid: str, text: str, *, bm25: float, dense: float, doc: str | None = None,
           superseded: bool = False) -> dict[str, Any]:
    item = chunk(cid, text, doc=doc, superseded=superseded)
    item["scores"] = {"bm25": bm25, "dense": dense, "fused": 0.9, "score": 0.9}
    return item


def test_retrieval_vouches_needs_agreement_and_a_high_dense_score():
    agree = [scored("a#1", "x", bm25=20.0, dense=0.92), scored("b#1", "y", bm25=10.0, dense=0.85)]
    assert retrieval_vouches(agree, 0.9)
    assert not retrieval_vouches(agree, 0.95)  # top chunk below the bar
    disagree = [scored("a#1", "x", bm25=20.0, dense=0.91), scored("b#1", "y", bm25=10.0, dense=0.93)]
    assert not retrieval_vouches(disagree, 0.9)  # BM25 and dense put different documents first
    same_doc = [scored("a#1", "x", bm25=20.0, dense=0.91), scored("a#2", "y", bm25=10.0, dense=0.93)]
    assert retrieval_vouches(same_doc, 0.9)  # agreement is per document
    old = [scored("a#1", "x", bm25=30.0, dense=0.99, superseded=True), *disagree]
    assert not retrieval_vouches(old, 0.9)  # a superseded chunk never vouches
    assert not retrieval_vouches([chunk("a#1", "x")], 0.9)  # no dense score (BM25-only retrieval)
    assert not retrieval_vouches([], 0.9)


def test_robust_terms_split_or_down_weight_jieba_guesses():
    weights = robust_terms(["衣服", "周开线", "2周"], 1.0)
    assert weights == {"衣服": 1.0, "开线": 1.0, "2周": 1.0}  # the dictionary word inside the guess
    weights = robust_terms(["仓库", "完货"], 1.0)
    assert weights == {"仓库": 1.0, "完货": 0.5}  # no word inside: kept at half weight
    assert robust_terms(["256g", "plus"], 0.5) == {"256g": 0.5, "plus": 0.5}  # numbers, Latin words kept
    assert "周开线" not in query_terms("衣服穿了两周开线了", [])


def test_semantic_gate_answers_a_paraphrase_only_when_retrieval_vouches():
    text = "仓库收到退回的商品后，会在48小时内完成质检。"
    question = "寄回去以后仓库多久验完货"  # lexically weak: 「回去」「以后」 are not in the chunk
    other = scored("exchange#1", "换货商品质检后发出。", bm25=5.0, dense=0.8)
    vouched = [scored("returns#1", text, bm25=25.0, dense=0.92), other]
    assert select_sentences(question, [question], vouched, 0.5, set(), min_dense=None) == []
    chosen = select_sentences(question, [question], vouched, 0.5, set(), min_dense=0.9)
    assert chosen and chosen[0][1] == "returns#1"
    weak = [scored("returns#1", text, bm25=25.0, dense=0.88), other]
    assert select_sentences(question, [question], weak, 0.5, set(), min_dense=0.9) == []


def test_semantic_gate_does_not_open_for_an_out_of_kb_question():
    evidence = [scored("returns#1", "7天无理由退货期限自签收次日零点起计算。", bm25=30.0, dense=0.95)]
    assert select_sentences("帮我写一首关于秋天的诗", ["帮我写一首关于秋天的诗"], evidence, 0.5, set()) == []


def test_gate_still_refuses_an_unrelated_question():
    evidence = [chunk("returns#1", "7天无理由退货期限自签收次日零点起计算。")]
    assert selected("明天上海天气怎么样", evidence) == []


@pytest.mark.parametrize(("question", "own"), [
    ("我最近有哪些订单还没发货", True), ("我上个月买的空调订单号多少", True),
    ("我有个订单还没付钱，是哪个", True), ("我的订单能取消吗", False), ("我的订单多久能到", False),
    ("下单后还能修改订单吗", False), ("我们的订单规则是什么", False),
    ("我那台电视的订单处于哪种状态", True), ("我的订单用哪种方式付款好", False),
])
def test_asks_own_orders(question, own):
    assert asks_own_orders(question) is own


def test_own_order_question_routes_to_the_order_tool(tmp_path: Path):
    deps = Deps(retriever=fixture_index(), shop=ShopToolbox(tmp_path / "shop.sqlite"))
    update = route_boundary({"question": "我有哪些订单还没发货", "facts": []},
                            Runtime(context=Context()), deps)
    assert update["route"] == "tool"
    assert update["tool_plan"] == [{"name": "order_lookup", "args": {}}]
    policy = route_boundary({"question": "下单后还能修改订单吗", "facts": []}, Runtime(context=Context()), deps)
    assert policy["route"] == "answer"
    state = route_boundary({"question": "我那台电视的订单处于哪种状态", "facts": []}, Runtime(context=Context()), deps)
    assert state["route"] == "tool"


def test_a_payment_way_in_a_policy_question_is_no_record_lookup(tmp_path: Path):
    """How money paid one way comes back asks a rule; which way the customer paid asks a record."""
    deps = Deps(retriever=fixture_index(), shop=ShopToolbox(tmp_path / "shop.sqlite"))
    policy = route_boundary({"question": "积分抵扣付的钱退货以后退回哪里", "facts": []},
                            Runtime(context=Context()), deps)
    assert policy["route"] == "answer"
    record = route_boundary({"question": "SO2026010100001那单我当初怎么付的", "facts": []},
                            Runtime(context=Context()), deps)
    assert record["route"] == "tool"


def test_a_sentence_about_the_old_rule_is_completed_by_the_current_one():
    evidence = [chunk("pp#1", "7天是旧版政策（2026年1月1日前付款的订单适用）。现行政策普通会员15天、Plus会员30天。"
                              "价保按付款时间计算。")]
    chosen = [text for text, _ in selected("价保不是只有7天吗", evidence)]
    assert chosen[:2] == ["7天是旧版政策（2026年1月1日前付款的订单适用）", "现行政策普通会员15天、Plus会员30天"]


def test_coverage_gives_long_terms_partial_credit():
    share, found = coverage({"积分": 1.0, "最多能": 1.0}, "每单最多抵扣实付金额的30%积分")
    assert found == {"积分"} and share == pytest.approx((1.0 + 0.5 * 0.5) / 2)
    assert coverage({"运费": 1.0}, "无关")[0] == 0.0


def test_conflicting_slots():
    plus = slot_kinds("我是Plus会员")
    assert plus == {"tier": {"plus会员"}}
    assert conflicting_slots(plus, "普通会员实付满99元包邮")
    assert not conflicting_slots(plus, "Plus会员实付满49元包邮，普通会员满99元")
    assert not conflicting_slots(plus, "实付满99元包邮")
    assert conflicting_slots(slot_kinds("寄新疆"), "江浙沪1-2天")


def test_a_carried_tier_steers_the_choice_between_tier_sentences():
    evidence = [chunk("fees#1", "普通会员实付满99元包邮，不满收8元。"),
                chunk("fees#2", "Plus会员实付满49元包邮，不满收6元。")]
    question = "我满多少包邮"
    chosen = select_sentences(question, [question, "我满多少包邮 Plus会员"], evidence, 0.5, set())
    assert chosen[0] == ("Plus会员实付满49元包邮，不满收6元", "fees#2")
    assert all("普通会员" not in text for text, _ in chosen)


def test_a_city_is_covered_by_its_province():
    from strategies.rules.extract import coverage, term_in

    assert term_in("哈尔滨", "| 东北 | 辽宁、吉林、黑龙江 | 3-4天 |")
    assert not term_in("哈尔滨", "| 华中 | 湖北、湖南、河南 | 2-3天 |")
    share, found = coverage({"哈尔滨": 1.0, "几天": 1.0}, "东北 辽宁、吉林、黑龙江 3-4天")
    assert found == {"哈尔滨"} and share == 0.5
