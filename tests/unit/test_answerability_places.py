"""Places in questions and policies (issue 8): abroad, groups of places, a knowledge base's own zone names.

Pure functions over hand-made evidence of a parcel-forwarding service; none of these strings
comes from an eval case.
"""

from __future__ import annotations

import pytest

from knowledge.gazetteer import containers_of, country_of, held_by_group, is_abroad, scope_word
from strategies.rules.answerability import Unit, judge_unit
from strategies.rules.question import analyze_question, build_vocabulary

_KB = [
    "转运服务介绍 东亚线（日本、韩国）和欧洲线按重量计费，大陆地区（新疆、西藏除外）免收国内段运费。",
    "仓库 深圳仓（东莞）负责华南包裹的揽收。",
]


def _vocab():
    return build_vocabulary([["转运服务介绍", "计费"]], _KB)


@pytest.mark.parametrize(("place", "country"), [("首尔", "韩国"), ("大阪", "日本"), ("日本", "日本"), ("杭州", None)])
def test_a_place_abroad_has_its_country(place, country):
    assert country_of(place) == country


def test_what_holds_a_place_outside_the_mainland():
    assert {"韩国", "国际", "境外"} <= set(containers_of("首尔"))
    assert {"港澳台", "境外"} <= set(containers_of("澳门"))
    assert containers_of("杭州") == () and not is_abroad("杭州") and is_abroad("台北")


def test_a_group_written_one_character_per_country_holds_its_countries():
    assert held_by_group("首尔", "日韩线路按重量计费") and held_by_group("大阪", "日韩线路按重量计费")
    assert not held_by_group("曼谷", "日韩线路按重量计费")
    assert not held_by_group("大阪", "每日以内到达")  # 「日」 inside a word is no group


def test_a_knowledge_base_names_its_own_groups_of_places():
    aliases = _vocab().region_aliases
    assert aliases == {"东亚线": frozenset({"日本", "韩国"})}  # not the exception, not the site 深圳仓（东莞）


def test_a_question_about_a_city_abroad_is_bound_by_its_group_and_not_by_the_mainland_rule():
    vocab = _vocab()
    q = analyze_question("寄到首尔的包裹每公斤多少钱", vocab=vocab)
    assert {"首尔", "韩国", "东亚线"} <= set(q["qualifiers"]["region"])
    group = Unit(id="e@0", evidence_id="e", doc_id="d", text="线路：东亚线，每公斤：45元", row=True,
                 context=("转运服务介绍", "包裹计费"))
    mainland = Unit(id="e@1", evidence_id="e", doc_id="d", text="线路：国内段，每公斤：8元，范围：国内",
                    row=True, context=("转运服务介绍", "包裹计费"))
    assert judge_unit(q, group, vocab=vocab).answers
    verdict = judge_unit(q, mainland, vocab=vocab)
    assert not verdict.answers and "国内" in verdict.qualifiers.conflicts.get("region", [])


def test_hong_kong_is_held_by_the_group_naming_it():
    q = analyze_question("寄香港的包裹几天到")
    unit = Unit(id="e@0", evidence_id="e", doc_id="d", text="港澳台包裹5个工作日送达。", context=("时效",))
    assert judge_unit(q, unit).answers


def test_a_row_naming_other_countries_does_not_answer_about_a_place_a_heading_lists_beside_them():
    q = analyze_question("寄台湾的包裹每公斤多少钱")
    heading = ("转运服务介绍", "国际及港澳台包裹线路")
    other = Unit(id="e@0", evidence_id="e", doc_id="d", text="目的地：日本、韩国，每公斤：45元", row=True, context=heading)
    own = Unit(id="e@1", evidence_id="e", doc_id="d", text="目的地：香港、澳门、台湾，每公斤：30元", row=True, context=heading)
    assert not judge_unit(q, other).answers
    assert judge_unit(q, own).answers
    group = Unit(id="e@2", evidence_id="e", doc_id="d", text="日韩线路每公斤收45元。", context=("运费",))
    assert not judge_unit(q, group).answers


def test_a_colon_list_of_places_names_a_group_too():
    vocab = build_vocabulary([["收费标准", "地区分档"]], [
        "收费标准 地区分档 - 东部片区：北京、上海。\n- 西部片区：成都、武汉、西安。\n- 其他片区：除上述城市外的地区。",
        "发货 寄件地址：上海。",
    ])
    assert vocab.region_aliases == {"东部片区": frozenset({"北京", "上海"}),
                                    "西部片区": frozenset({"成都", "武汉", "西安"})}  # no exception, no one place
    q = analyze_question("从西安寄一件要多少钱", vocab=vocab)
    assert "西部片区" in q["qualifiers"]["region"]
    row = Unit(id="e@0", evidence_id="e", doc_id="d", text="地区：西部片区，寄件：12元", row=True,
               context=("收费标准", "寄件价格"))
    assert judge_unit(q, row, vocab=vocab).answers


def test_a_bold_label_and_a_list_closed_by_deng_name_a_group_of_places():
    # Markdown emphasis around the label, and 「…等」 or a bracket after the members, still define the group.
    vocab = build_vocabulary([["馆藏分级"], ["开放时间"]], [
        "馆藏分级 - **甲级分馆**：南京、苏州。\n- **乙级分馆**：无锡、常州、扬州等地级市（已列为甲级的除外）；"
        "\n- **丙级分馆**：其他设有分馆的城市。",
        "开放时间 分馆级别：乙级分馆，开门时间：10:00",
    ])
    assert vocab.region_aliases == {"甲级分馆": frozenset({"南京", "苏州"}),
                                    "乙级分馆": frozenset({"无锡", "常州", "扬州"})}  # 丙级 lists no place
    q = analyze_question("常州的分馆几点开门", vocab=vocab)
    assert "乙级分馆" in q["qualifiers"]["region"]
    row = Unit(id="e@0", evidence_id="e", doc_id="d", text="分馆级别：乙级分馆，开门时间：10:00", row=True,
               context=("开放时间",))
    assert judge_unit(q, row, vocab=vocab).answers


@pytest.mark.parametrize(("token", "scope"), [
    ("国际", "国际"), ("国际包裹", "国际"), ("国内", "国内"), ("国内段", "国内"), ("大陆", "大陆"),
    ("国内外", None), ("国际化", None), ("华南", None),
])
def test_a_scope_word_names_the_mainland_or_abroad(token, scope):
    assert scope_word(token) == scope


def test_a_rule_for_the_other_scope_does_not_answer_a_question_scoped_to_one():
    vocab = _vocab()
    abroad = analyze_question("国际包裹丢件以后最晚几天内要提出索赔", vocab=vocab)
    assert abroad["qualifiers"]["region"] == ["国际"]
    home = Unit(id="e@0", evidence_id="e", doc_id="d", text="丢件须在签收期满后15天内提出索赔",
                context=("国内包裹理赔规定",))
    away = Unit(id="e@1", evidence_id="e", doc_id="d", text="丢件须在签收期满后60天内提出索赔",
                context=("国际及港澳台包裹理赔规定",))
    seoul = Unit(id="e@2", evidence_id="e", doc_id="d", text="寄往日本的丢件须在60天内提出索赔",
                 context=("包裹理赔规定",))
    verdict = judge_unit(abroad, home, vocab=vocab)
    assert not verdict.answers and "国内" in verdict.qualifiers.conflicts.get("region", [])
    assert judge_unit(abroad, away, vocab=vocab).answers
    assert judge_unit(abroad, seoul, vocab=vocab).answers  # a country abroad lies in 「国际」
    home_q = analyze_question("国内包裹丢件以后最晚几天内要提出索赔", vocab=vocab)
    verdict = judge_unit(home_q, away, vocab=vocab)
    assert not verdict.answers and verdict.qualifiers.conflicts.get("region")
    assert judge_unit(home_q, home, vocab=vocab).answers


def test_the_coverage_gate_reads_a_city_as_the_group_the_knowledge_base_prices():
    # The price table names only 「西部片区」: the question's city is covered by its group, so the
    # coverage gate lets the row the answerability gate accepted through; a city in no group is
    # left as the customer wrote it
    from strategies.rules.answer import Gate, compose_with_gate, question_terms

    vocab = build_vocabulary([["收费标准", "地区分档"], ["收费标准", "寄件价格"]], [
        "收费标准 地区分档 - 东部片区：北京、上海。\n- 西部片区：兰州、银川、西安。",
        "收费标准 寄件价格 | 片区 | 首重价格 |",
    ])
    question = "西安发快递首重收几块"
    analysis = analyze_question(question, vocab=vocab)
    analysis["terms"] = question_terms(question)  # as start_turn stores it
    table = "| 片区 | 首重价格 |\n|---|---|\n| 东部片区 | 9元 |\n| 西部片区 | 13元 |"
    evidence = [{"id": "price#1", "kind": "chunk", "doc_id": "price", "title": "收费标准",
                 "heading_path": ["寄件价格"], "text": table, "scores": {}}]
    text, reason, _ = compose_with_gate(question, [question], evidence, analysis=analysis, vocab=vocab,
                                        gate=Gate(min_dense=None))
    assert reason is None and "13元" in text and "9元" not in text
    assert analysis["written"]["西安"] == "西安|西部片区"
    assert "杭州" not in analyze_question("杭州发快递首重收几块", vocab=vocab).get("written", {})
