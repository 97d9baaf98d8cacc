"""More forms of an answer (issue 8): rates, days of the month, negated qualifiers, limits, words.

Pure functions over hand-made evidence from fields the demo shop does not cover (a library, a
gym, a bank card); none of these strings comes from an eval case.
"""

from __future__ import annotations

import pytest

from strategies.rules.answerability import (
    Unit,
    _anchored,
    _choice_options,
    _other_quantity,
    _quantities,
    _term_present,
    answerability,
    evidence_units,
    judge_unit,
    question_subject,
    slot_fillers,
)
from strategies.rules.question import _words, analyze_question, build_vocabulary, question_per


def _unit(text: str, *context: str) -> Unit:
    return Unit(id="e@0", evidence_id="e", doc_id="d", text=text, context=tuple(context), chunk_text=text)


def _answers(question: str, text: str, *context: str) -> bool:
    return judge_unit(analyze_question(question), _unit(text, *context)).answers


@pytest.mark.parametrize(("question", "per"), [
    ("健身卡一年多少钱", "年"), ("每个月能借几本", "月"), ("储蓄卡一天最多取多少", "天"),
    ("一年内坏了能修吗", ""), ("健身卡多少钱", ""), ("每天几点开门", ""),
    ("离开课只剩一天了，退课扣多少", ""), ("去外地训练一周，有没有周卡，多少钱", ""), ("还有一天到期，续费多少钱", ""),
])
def test_the_rate_a_question_asks_for(question, per):
    q = analyze_question(question)
    assert question_per(q["norm"], q["slot"]) == per
    assert q.get("per", "") == per


def test_a_value_for_another_span_does_not_answer_a_rate_question():
    assert _answers("健身卡一年多少钱", "健身卡年费为1200元。", "收费标准")
    assert _answers("健身卡一年多少钱", "健身卡1200元/年，可分期。", "收费标准")
    assert not _answers("健身卡一年多少钱", "健身卡单次体验价为50元。", "收费标准")


def test_a_day_of_the_month_question_needs_a_day_not_a_duration():
    assert _answers("借书卡几号续费", "借书卡每月15日续费。", "续费")
    assert not _answers("借书卡几号续费", "借书卡续费后3个工作日生效。", "续费")


def test_a_run_of_unknown_characters_stays_a_subject_term():
    # jieba (no HMM) leaves a coinage such as 「催审」 as single characters; joined (tag ``run``)
    # they are the thing asked about, not a pronoun (tag initial ``r``).
    assert ("催审", "run") in _words("提了催审你们多久回复")
    q = analyze_question("提了催审你们多久回复")
    assert "催审" in q["subject_terms"]
    assert "催审" not in q["anchors"]  # a coinage the KB may word differently never anchors


@pytest.mark.parametrize("word", ["最晚", "最多", "最少"])
def test_bound_words_are_never_subject_terms(word):
    assert word not in analyze_question(f"会员卡{word}多久激活")["subject_terms"]


def test_a_one_character_term_binds_only_as_a_word():
    # 「税」 stands in 「综合税」 and 「税率」, not inside 「保税仓」.
    q = analyze_question("进口商品要交多少税")
    text_without = "进口商品由保税仓发货，满88元包邮。"
    text_with = "进口商品需缴纳综合税，税率为9.1%。"
    gate = answerability(q, [{"id": "a", "text": text_without, "title": "进口商品"},
                             {"id": "b", "text": text_with, "title": "进口商品"}])
    assert gate.evidence_ids() == ["b"]


def test_a_negated_qualifier_is_excluded_not_asked():
    vocab = build_vocabulary([["会员说明", "金卡会员"], ["会员说明", "银卡会员"]])
    q = analyze_question("我不是金卡会员，借书押金多少", vocab=vocab)
    assert "金卡会员" in q.get("excluded", [])
    assert "金卡会员" not in q["qualifiers"].get("tier", [])
    assert "金卡会员" not in question_subject(q)
    scoped = _unit("金卡会员借书押金为0元。", "会员说明")
    general = _unit("借书押金为100元。", "会员说明")
    assert not judge_unit(q, scoped, vocab=vocab).answers
    assert judge_unit(q, general, vocab=vocab).answers


def test_a_negated_action_is_not_a_negated_qualifier():
    q = analyze_question("办卡时没开发票，之后还能补开吗")
    assert q.get("excluded", []) == []


def test_a_limit_question_needs_a_number():
    assert not _answers("储蓄卡取现最高多少", "储蓄卡取现全额免手续费。", "取现")
    assert _answers("储蓄卡取现最高多少", "储蓄卡取现单笔最高5000元。", "取现")


def test_a_compound_qualifier_is_not_counted_twice():
    vocab = build_vocabulary([["付款", "信用卡分期"], ["付款", "花呗分期"]])
    q = analyze_question("信用卡分期有手续费吗", vocab=vocab)
    subject = question_subject(q)
    assert not ("信用卡分期" in subject and "信用卡" in subject and "分期" in subject)


def test_heading_numbers_are_not_regime_values():
    vocab = build_vocabulary([["手册", "2.5 进口商品"], ["手册", "3.1 国产商品"], ["手册", "4.2 进口商品退货"]])
    values = {v for mods in vocab.dimensions.values() for v in mods}
    assert not any(v.replace(".", "").isdigit() for v in values)
    assert {"进口", "国产"} <= vocab.dimensions.get("商品", frozenset())


def test_a_rate_must_stand_next_to_the_value():
    # 「年费」 elsewhere in the unit does not make a per-purchase value a per-year one.
    assert not _answers("借书积分一年最多能换多少", "每借1本书积1分，年费：普通卡30元。", "积分")
    assert _answers("借书积分一年最多能换多少", "借书积分每年最多兑换500分。", "积分")


def test_a_question_naming_one_alternative_is_not_answered_by_another():
    assert not _answers("分24期每期手续费多少", "分12期每期手续费为0.6%。", "分期费率")
    assert _answers("分24期每期手续费多少", "分24期每期手续费为0.5%。", "分期费率")


@pytest.mark.parametrize("question", ["分期费率多少", "贷款利率是多少"])
def test_a_rate_question_asks_an_amount(question):
    assert analyze_question(question)["slot"] == "amount"


def test_a_yes_no_answer_must_carry_the_asked_predicate():
    q = analyze_question("图书馆的自习室要付押金吗")
    assert q["anchors"] == ["押金"]
    assert not judge_unit(q, _unit("图书馆的自习室可免费使用储物柜。", "自习室")).answers
    assert judge_unit(q, _unit("图书馆的自习室无需押金，凭卡进入。", "自习室")).answers


def test_a_unit_naming_another_regime_is_not_saved_by_a_title_listing_all():
    vocab = build_vocabulary([["卡片", "金卡会员"], ["卡片", "银卡会员"], ["卡片", "金卡会员、银卡会员"]])
    q = analyze_question("金卡会员借书押金多少", vocab=vocab)
    unit = _unit("银卡会员借书押金为50元。", "金卡会员与银卡会员权益")
    assert not judge_unit(q, unit, vocab=vocab).answers


def test_vague_everyday_words_do_not_decide_the_binding():
    from strategies.rules.answerability import UNKNOWN_WEIGHT, subject_weights

    vocab = build_vocabulary([["借阅规则"]], ["借阅规则 借书的东西请爱护，每人最多借5本书", "借阅规则 逾期每天收0.1元"])
    weights = subject_weights(["东西", "借书"], vocab)
    assert weights["东西"] == UNKNOWN_WEIGHT
    assert weights["借书"] > UNKNOWN_WEIGHT


def test_characters_that_only_meet_across_words_are_not_a_kb_word():
    vocab = build_vocabulary([["规则"]], ["规则 逾期不会扣除押金"])
    assert vocab.document_frequency("会扣") == 1
    assert not vocab.uses_word("会扣")
    assert vocab.uses_word("押金")


def test_a_question_with_only_vague_words_is_not_answered():
    vocab = build_vocabulary([["借阅规则"]], ["借阅规则 逾期会影响借阅信用。"])
    q = analyze_question("经常那样会有影响吗", vocab=vocab)
    gate = answerability(q, [{"id": "a", "text": "逾期会影响借阅信用，可以按时归还恢复。", "title": "借阅规则"}],
                         vocab=vocab)
    assert not gate.answerable
    assert {v.reason for v in gate.verdicts} == {"vague subject"}


def test_a_unit_labelled_with_a_sibling_of_the_asked_term_does_not_answer():
    # The heading names both services; the unit's label says which one it is about.
    q = analyze_question("快洗几点截止送洗")
    sibling = _unit("慢洗：每天18:00截止送洗，次日取件。", "快洗与慢洗")
    asked = _unit("快洗：每天20:00截止送洗，当天取件。", "快洗与慢洗")
    assert not judge_unit(q, sibling).answers
    assert judge_unit(q, asked).answers


def test_a_money_noun_asked_with_a_hedge_is_an_amount_question():
    from strategies.rules.question import asked_slot, normalize_question

    assert asked_slot(normalize_question("办卡押金一般是多少")) == "amount"
    assert asked_slot(normalize_question("年费大概要多少")) == "amount"
    assert not _answers("办卡押金一般是多少", "办卡押金需在3天内缴清。", "办卡")
    assert _answers("办卡押金一般是多少", "办卡押金一般为200元。", "办卡")


def test_a_free_word_inside_an_instrument_name_states_no_price():
    # 「免服务费券」 names a coupon; 「免服务费」 as a predicate states the price (nothing).
    assert not _answers("保养服务费多少钱", "保养时可使用免服务费券抵扣。", "保养")
    assert _answers("保养服务费多少钱", "会员保养免服务费。", "保养")


def test_a_value_stated_for_a_sibling_of_the_anchor_does_not_answer():
    # 「闭馆」 and 「开馆」 share their head: a time given for one is not the other's.
    assert not _answers("阅览室几点开馆", "每天21:00闭馆，读者可在次日开馆后取回物品。", "阅览室开放时间")
    assert _answers("阅览室几点开馆", "每天8:30开馆，21:00闭馆。", "阅览室开放时间")
    # a clause that names an anchor is about it, whatever else shares its head (订单 and 下单)
    assert _answers("私教课下单后多久不付款会作废", "私教课订单15分钟内未付款自动作废。", "私教课")


def test_a_unit_under_a_question_heading_answers_that_question_only():
    vocab = build_vocabulary([["借阅", "学生读者"], ["借阅", "成人读者"], ["借阅", "老年读者"]])
    heading = ("借阅规则", "常见问题", "5.3 学生读者押金多少？")
    unit = _unit("学生读者押金为50元。", *heading)
    general = analyze_question("读者押金多少", vocab=vocab)
    assert "学生" in judge_unit(general, unit, vocab=vocab).qualifiers.conflicts.get("excluded", [])
    assert not judge_unit(general, unit, vocab=vocab).answers
    student = analyze_question("学生读者押金多少", vocab=vocab)
    assert judge_unit(student, unit, vocab=vocab).answers
    # a heading that is not a question states the section's subject, not a narrower question
    plain = _unit("读者押金为100元，学生读者押金为50元。", "借阅规则", "押金")
    assert judge_unit(general, plain, vocab=vocab).answers


def test_a_coupons_face_value_answers_only_a_question_about_the_coupon():
    assert not _answers("私教课迟到扣多少钱", "私教课迟到的，课后赠送一张20元体验券。", "私教课")
    assert _answers("私教课迟到扣多少钱", "私教课迟到的，扣除课时费50元。", "私教课")
    assert _answers("体验券面额是多少钱", "课后赠送一张面额20元的体验券。", "体验券")


def test_a_unit_naming_the_opposite_of_a_question_word_does_not_answer():
    # 线上/线下, 入馆/出馆: the same word with the opposite morpheme of direction
    # 馆外/馆内 are everyday words of this KB; the rarer 自助借还机 decides the binding
    vocab = build_vocabulary([["借阅", "自助借还"]], ["馆外还书点", "馆内阅读区", "馆外借书", "馆内自习",
                                                   "馆外活动", "馆内讲座", "自助借还机"])
    q = analyze_question("馆外自助借还机一次最多借几本", vocab=vocab)
    inside = _unit("馆内自助借还机一次最多借10本。", "自助借还")
    outside = _unit("馆外自助借还机一次最多借5本。", "自助借还")
    assert judge_unit(q, inside, vocab=vocab).qualifiers.conflicts.get("excluded") == ["馆内"]
    assert not judge_unit(q, inside, vocab=vocab).answers
    assert judge_unit(q, outside, vocab=vocab).answers


def test_a_question_asking_for_money_is_not_answered_by_a_rate():
    assert not _answers("分期最多能分多少钱", "分期手续费为每期0.6%。", "分期")
    assert _answers("分期最多能分多少钱", "分期最高可分5000元。", "分期")
    assert _answers("分期手续费是多少", "分期手续费为每期0.6%。", "分期")  # no money word: a rate answers


@pytest.mark.parametrize(("question", "glued"), [
    ("私教课一周最多约几节", "周最多约"),  # 「1|周|最|多|约」: a number's unit, a bound, a verb
    ("储物柜每个月哪天扣费", "天扣费"),  # 「哪|天」 is the interrogative
])
def test_a_run_of_single_characters_never_crosses_a_bound_or_a_counted_unit(question, glued):
    words = [w for w, _ in _words(analyze_question(question)["norm"])]
    assert not any(glued in w or w in glued and len(w) > 2 for w in words)
    assert not any("最多" in t for t in analyze_question(question)["subject_terms"])


def test_a_mended_word_never_ends_with_a_particle():
    vocab = build_vocabulary([["储物柜"]], ["储物柜 问：储物柜要钱吗？答：会员免费使用。"])
    q = analyze_question("储物柜租用要钱吗", vocab=vocab)
    assert not any(t.endswith("吗") for t in q["subject_terms"])


def test_a_rate_may_stand_in_the_column_header_of_a_payment_span():
    # 「年付：1200元」 is what one pays a year; 「月付」 is not.
    row = "卡种：尊享卡，月付：129元/月，年付（12个月）：1200元"
    assert _answers("尊享卡年付一年多少钱", row, "收费标准")
    assert not _answers("尊享卡一年多少钱", "卡种：尊享卡，月付：129元/月", "收费标准")


def test_a_clause_opening_with_a_bound_speaks_of_the_clause_before_it():
    unit = "会员可为每位家属设置每月消费上限，最低可设置为100元；"
    assert _answers("给家属设消费上限，最少能设多少", unit, "收费标准")
    # a clause that sets a time or a condition is not what the value is about
    assert not _answers("家属卡审核要多久", "家属卡审核通过后，须在7天内到前台领取。", "办理")


def test_an_unknown_word_decides_only_in_the_clause_that_asks():
    vocab = build_vocabulary([["私教课"]], ["私教课 私教课可以改期，须提前24小时预约。"])
    evidence = [{"id": "a", "text": "私教课可以改期，须提前24小时预约。", "title": "私教课"}]
    scene = answerability(analyze_question("我家小狗生病了，私教课能改期吗", vocab=vocab), evidence, vocab=vocab)
    asked = answerability(analyze_question("私教课能带小狗吗", vocab=vocab), evidence, vocab=vocab)
    assert not any(v.reason.startswith("unknown term") for v in scene.verdicts)
    assert [v.reason for v in asked.verdicts] == ["unknown term 小狗"]


def test_a_quantity_in_a_unit_of_measure_is_a_count_filler():
    assert [f.text for f in slot_fillers("count", "泳池水深1.8米，储物柜限重5公斤，网速100Mbps")] == [
        "1.8米", "5公斤", "100mbps"]


def _row_answers(question: str, row: str) -> bool:
    unit = Unit(id="e@0", evidence_id="e", doc_id="d", text=row, context=("增值服务",), chunk_text=row, row=True)
    return judge_unit(analyze_question(question), unit).answers


def test_a_unit_stating_another_size_does_not_answer_about_the_asked_size():
    row = "项目：大号储物柜（60升），费用：10元/月"
    assert not _row_answers("有没有100升的储物柜，多少钱", row)
    assert _row_answers("60升的储物柜多少钱", row)
    assert _row_answers("储物柜多少钱", row)
    # a size beside a bound is a condition, not another product
    assert _row_answers("100升的储物柜多少钱", "项目：储物柜（50升及以上），费用：10元/月")


def test_a_bound_with_a_price_for_the_part_beyond_it_covers_every_quantity():
    row = "项目：场馆摆渡车，费用：10公里内20元，超出部分3元/公里"
    assert _row_answers("25公里的摆渡车多少钱", row)  # the part beyond 10公里 is priced
    assert _row_answers("8公里的摆渡车多少钱", row)
    # a bound alone says nothing of what lies beyond it
    assert not _row_answers("25公里的摆渡车多少钱", "项目：场馆摆渡车，费用：10公里内20元")


def test_a_network_generation_is_not_a_size():
    assert _quantities("5g会员卡，4g手机") == []
    assert [q[:2] for q in _quantities("30g流量，1tb云盘")] == [("data", 30000.0), ("data", 1000000.0)]
    assert [q[:2] for q in _quantities("下行100mbps，上行1gbps")] == [("rate", 100.0), ("rate", 1000.0)]
    assert not _row_answers("办20G的会员卡多少钱", "项目：会员卡（10G），费用：199元/月")


@pytest.mark.parametrize(("question", "slot"), [
    ("储值卡每次最少要充多少", "amount"), ("年卡按月交每月多少", "amount"), ("存够一年每月能返多少", "amount"),
    ("迟到一次扣多少分", "count"), ("办卡要交多少天的押金", "duration"),
])
def test_a_verb_of_paying_before_a_bare_how_much_asks_for_money(question, slot):
    assert analyze_question(question)["slot"] == slot


def test_a_count_of_people_is_answered_in_any_classifier_of_people():
    assert _answers("一张家庭卡最多能带几个人入场", "每张家庭卡每次最多可带3位同行家属入场。")
    assert not _answers("一张家庭卡最多能带几个人入场", "每张家庭卡每次最多可入场3次。")


def test_what_one_may_do_is_a_capacity_that_answers_a_most_question():
    row = "卡种：家庭卡，年费：1999元，可带同伴：2人"
    assert _row_answers("家庭卡最多能带几个同伴", row)
    assert not _row_answers("家庭卡最少要带几个同伴", row)
    assert not _row_answers("家庭卡最多能带几个同伴", "卡种：家庭卡，年费：1999元，同伴：2人")


def test_a_unit_for_another_sum_paid_does_not_answer_about_the_sum_the_question_states():
    row = "活动：储值返现，内容：存500元，每月返还20元"
    assert not _row_answers("储值返现活动要是存1000元，每月能返多少", row)
    assert _row_answers("储值返现活动存500元，每月能返多少", row)
    # a sum that is a threshold (「满500元」) is a condition any larger sum meets
    assert _row_answers("储值返现活动要是存1000元，每月能返多少", "活动：储值返现，内容：存满500元，每月返还20元")


def test_a_quantity_the_question_states_is_compared_as_an_interval():
    assert not _row_answers("不到80Wh的电池最多能带几块", "电池：80Wh–160Wh，可带数量：2块")
    assert _row_answers("不到80Wh的电池最多能带几块", "电池：不超过80Wh，可带数量：20块")
    assert _row_answers("120Wh的电池最多能带几块", "电池：80Wh–160Wh，可带数量：2块")


def test_a_span_counted_back_from_an_event_must_fall_in_the_units_band():
    far = "课程：私教课，取消时间：上课前7天以上，取消费：免费"
    near = "课程：私教课，取消时间：上课前2-7天，取消费：50%"
    assert _row_answers("私教课离上课还有10天，取消费多少", far)
    assert not _row_answers("私教课离上课还有10天，取消费多少", near)
    # a span of something else (when money comes back) is not the question's condition
    assert _answers("私教课提前两周取消要收多少", "私教课开课前取消收取课时费的10%，3个工作日内退回余款。")


def test_in_advance_and_counted_time_units_are_not_subject_terms():
    q = analyze_question("私教课提前两周取消要收多少")
    assert "提前" not in q["subject_terms"]
    assert "小时" not in analyze_question("开课前20个小时改期要交多少")["subject_terms"]
    assert "提前" in analyze_question("提前还款要手续费吗")["subject_terms"]  # no span: a thing asked about


def test_a_modal_glued_to_the_asked_verb_is_no_subject_term():
    assert "能带" not in analyze_question("一张卡最多能带几个人")["subject_terms"]
    assert "会员" in analyze_question("会员多少钱")["subject_terms"]  # a common word stays whole
    assert "要求" in analyze_question("有身高要求吗")["subject_terms"]


def test_a_unit_on_a_sibling_of_a_subject_noun_it_lacks_does_not_answer():
    vocab = build_vocabulary([["场地租用", "篮球场"], ["场地租用", "足球场"]],
                             ["篮球场 开放时间", "篮球场 预约", "篮球场 器材", "足球场 开放时间", "足球场 预约",
                              "周末包场 每小时租金另计"])
    q = analyze_question("周末包场篮球场每小时租金多少钱", vocab=vocab)
    sibling = _unit("周末包场足球场每小时租金500元。", "场地租用", "租金")
    assert not judge_unit(q, sibling, vocab=vocab).answers
    assert judge_unit(q, _unit("周末包场篮球场每小时租金200元。", "场地租用", "租金"), vocab=vocab).answers


def test_a_thousands_separator_is_part_of_the_number():
    assert [f.text for f in slot_fillers("count", "兑换需要60,000积分")] == ["60000积分"]


def test_a_latin_model_name_is_a_subject_term_and_binds_across_hyphens():
    q = analyze_question("X200-2型跑步机最大承重多少公斤")
    assert "x200" in q["subject_terms"]
    assert not _row_answers("X200-2型跑步机最大承重多少公斤", "型号：X100跑步机，最大承重：120公斤")
    assert _row_answers("X200-2型跑步机最大承重多少公斤", "型号：X200-2跑步机，最大承重：150公斤")
    assert _answers("馆内wifi几点关闭", "馆内Wi-Fi每晚22:00关闭。")


@pytest.mark.parametrize("question", ["年卡退卡要扣百分之几", "定金要交多少比例", "退款能退几成"])
def test_a_share_asked_for_is_an_amount_question(question):
    assert analyze_question(question)["slot"] == "amount"


def test_a_bound_naming_a_thing_does_not_bound_the_share_asked_of_it():
    assert _answers("最低消费额按百分之几算", "最低消费额按年费的10%计算。")
    assert not _answers("最高能退百分之几", "退卡按剩余天数的60%退还。")


def test_a_floor_stated_as_not_reaching_answers_a_least_question():
    assert _answers("私教课退课手续费最少收多少钱", "私教课退课手续费不足20元的，按20元收取。")


def test_seats_are_counted_in_their_own_classifier():
    assert _row_answers("大教室一共有几个座位", "教室：大教室，座位：120座")


@pytest.mark.parametrize(("question", "absent"), [
    ("去年办的储物柜，续租一个月多少钱", "去年"),
    ("上次借的书今天能续借几次", "上次"),
    ("今年5月底办的卡，冻结最长几天", "月底"),  # the part of a date after its numeral
])
def test_a_time_word_from_the_speakers_now_is_no_subject_term(question, absent):
    assert absent not in analyze_question(question)["subject_terms"]


def test_a_named_period_stays_a_subject_term():
    assert "暑假" in analyze_question("暑假游泳班一期几节课")["subject_terms"]


def test_a_quantity_modifying_a_noun_is_a_condition_even_for_a_bare_how_much():
    question = "500米的泳道，包场一小时要多少"
    assert not _answers(question, "泳道长度：50米，包场：300元/小时")
    assert _answers(question, "泳道长度：400–600米，包场：800元/小时")


def test_the_name_of_a_duration_is_no_subject_term():
    assert "期限" not in analyze_question("退会员卡的期限是多久")["subject_terms"]


def test_values_after_a_colon_belong_to_what_the_clause_before_it_introduces():
    text = "私教课的退课期限从开课之日起计算：月卡会员3天、年卡会员10天。"
    assert _answers("私教课退课期限是几天", text, "会员须知")
    assert not _answers("私教课退课期限是几天", "私教课需提前预约：开课前3天。", "预约规则")


@pytest.mark.parametrize("question", ["预约热线是多少", "前台电话号码是多少"])
def test_a_phone_number_question_is_answered_only_by_a_number_to_dial(question):
    assert _answers(question, "预约热线：021-5555-0100，前台电话号码：13800001111。", "联系我们")
    assert not _answers(question, "预约热线服务时间为每天8:00至20:00，每次通话收费0元，最多转接3次。", "联系我们")


@pytest.mark.parametrize(("anchor", "answering", "silent"), [
    ("折扣", "年卡会员续卡享9折。", "年卡会员续卡须在到期前办理。"),
    ("收钱", "私教课改约每次收取20元。", "私教课改约须提前一天。"),
    ("要钱", "私教课改约免费。", "私教课改约须提前一天，最多改约3次。"),
])
def test_an_anchor_naming_the_kind_of_value_is_carried_by_such_a_value(anchor, answering, silent):
    assert _anchored(_unit(answering, "私教课与会员卡"), [anchor])
    assert not _anchored(_unit(silent, "私教课与会员卡"), [anchor])


@pytest.mark.parametrize(("question", "answering", "silent"), [
    ("攀岩馆对会员年龄有要求吗", "攀岩馆会员须满10周岁。", "攀岩馆会员须签署安全协议。"),
    ("寄存柜能放多大重量的包", "寄存柜每格可放12公斤以内的物品。", "寄存柜每格可放3件以内的物品。"),
    ("续卡给不给折扣", "年卡会员续卡享9折。", "年卡会员续卡须在到期前办理。"),
])
def test_a_word_naming_the_dimension_asked_is_carried_by_a_value_in_it(question, answering, silent):
    # 「年龄」 is met by 「10周岁」, 「重量」 by 「12公斤」: the word names what kind of value is asked
    assert _answers(question, answering, "会员须知")
    assert not _answers(question, silent, "会员须知")


def test_a_dimension_word_of_the_scene_is_not_the_asked_value():
    # 「说不清重量」 sets the scene (the customer cannot tell the weight); the clause that asks wants a
    # sum, so a weight in the unit does not carry 「重量」 there, as it does where the word asks
    unit = _unit("背包寄存按每件6公斤计。", "寄存须知")
    scene = judge_unit(analyze_question("背包寄存时说不清重量，收费算几公斤"), unit)
    asked = judge_unit(analyze_question("背包寄存能放多大重量"), unit)
    assert "重量" not in scene.binding.found
    assert "重量" in asked.binding.found


@pytest.mark.parametrize(("term", "present"), [("早场票价", True), ("夜间票价", True), ("午场票价", False)])
def test_a_head_written_once_after_coordinated_modifiers_belongs_to_each(term, present):
    # 「早场及夜间票价」 is the 早场 price and the 夜间 price: the head is written once, after the last
    assert _term_present(term, "早场及夜间票价：每人30元") is present


@pytest.mark.parametrize(("question", "kind"), [("借书证在分馆续期有哪些条件", "须凭读者证到馆"),
                                                ("借书证在分馆借阅设了哪些限制", "单次限借5册")])
def test_a_question_asking_for_a_condition_or_a_limit_is_answered_only_by_one(question, kind):
    # the unit carries the rest of the subject; without a condition or a limit it does not say which
    assert _answers(question, f"借书证在分馆{kind}。", "借阅须知")
    assert not _answers(question, "借书证在分馆续期和借阅均到服务台办理。", "借阅须知")


# --------------------------------------------------------------------------- a question states nothing

def test_a_bare_faq_question_line_is_context_not_a_unit():
    chunk = {"id": "faq", "doc_id": "gym", "title": "会员手册", "heading_path": ["常见问题"],
             "text": "**私教课可以转给朋友吗？**\n\n私教课仅限本人上课，剩余课时按原价的八折退回。"}
    units = evidence_units([chunk])
    assert [u.text for u in units] == ["私教课仅限本人上课，剩余课时按原价的八折退回。"]
    assert units[0].context[-1] == "私教课可以转给朋友吗？"


def test_a_question_inside_a_paragraph_gives_no_unit():
    chunk = {"id": "p", "doc_id": "lib", "text": "借书证丢了怎么办？请持身份证到总服务台挂失补办。"}
    assert [u.text for u in evidence_units([chunk])] == ["请持身份证到总服务台挂失补办。"]


def test_a_question_re_quoted_is_never_its_own_answer():
    chunk = {"id": "faq", "doc_id": "gym", "title": "会员手册", "heading_path": ["常见问题"],
             "text": "**储物柜可以长期租用吗？**\n\n储物柜按月出租，须在前台登记。"}
    gate = answerability(analyze_question("储物柜可以长期租用吗"), [chunk])
    assert not any("吗" in v.unit.text for v in gate.answering)


def test_an_faq_question_is_no_yes_no_filler_for_its_answer():
    unit = _unit("游泳馆周一闭馆", "会员手册", "游泳馆周末可以开放吗？")
    assert not judge_unit(analyze_question("游泳馆周末可以开放吗"), unit).fillers


@pytest.mark.parametrize(("question", "text"), [
    ("停卡期间能往后延长会籍吗", "停卡期间会籍不延长，到期日不变。"),
    ("年卡到期日能往后推迟吗", "年卡到期日遇节假日不推迟。"),
])
def test_a_rule_negating_the_asked_predicate_after_an_adverb_answers(question, text):
    assert judge_unit(analyze_question(question), _unit(text, "会员手册")).answers


def test_a_sum_the_customer_states_picks_the_tier_row_whose_range_holds_it():
    rows = ["年消费金额：5000元以下，会员等级：普通，储物柜：不免费，按次付费",
            "年消费金额：5000元–2万元，会员等级：银卡，储物柜：免费",
            "年消费金额：2万元以上，会员等级：金卡，储物柜：免费"]
    q = analyze_question("年消费不到3000元，储物柜免费吗")
    verdicts = [judge_unit(q, Unit(id=f"e@{n}", evidence_id="e", doc_id="d", text=row, context=("会员手册", "会员等级"),
                                   row=True, chunk_text=row)) for n, row in enumerate(rows)]
    assert [v.answers for v in verdicts] == [True, False, False]
    assert all("excluded" in v.qualifiers.conflicts for v in verdicts[1:])


def test_a_price_is_no_range_that_contradicts_what_the_customer_spent():
    assert _answers("会员卡消费满500元可以打九折吗", "会员卡消费可打九折，体测每次收费50元。", "会员手册")


def test_a_threshold_in_prose_states_both_sides_of_a_sum_the_customer_names():
    # 「满199元…，不满…」 answers a customer who spends less: it is no other tier's rule.
    assert _answers("买150元的护具，邮费多少", "护具满199元包邮，不满收取12元邮费。", "会员手册", "商城")


def _scoped_unit(text: str, category: str) -> Unit:
    return Unit(id="e@0", evidence_id="e", doc_id="d", text=text, context=("换卡须知",), chunk_text=text,
                category=category)


def test_a_documents_category_scopes_its_units():
    q = analyze_question("储蓄卡换卡要几天")
    text = "换卡需5个工作日制作完成。"
    assert not judge_unit(q, _scoped_unit(text, "")).answers  # nothing says whose cards these are
    verdict = judge_unit(q, _scoped_unit(text, "储蓄卡业务"))
    assert verdict.answers and "储蓄卡" in verdict.binding.found


def test_the_category_reaches_units_through_the_evidence_item():
    item = {"id": "e", "text": "换卡需5个工作日制作完成。", "title": "换卡须知", "category": "储蓄卡业务"}
    assert {u.category for u in evidence_units([item])} == {"储蓄卡业务"}
    assert {u.category for u in evidence_units([{**item, "category": ""}])} == {""}


@pytest.mark.parametrize(("text", "answers"), [
    ("补缴全部欠费后，冻结的会员卡可申请解冻，解冻需2个工作日。", False),  # the span is 解冻's
    ("会员卡欠费满15天即冻结，停止入场。", True),
    ("逾时未缴的，第16天起冻结。", True),  # names no 欠费: goes on under its heading
])
def test_a_span_answers_only_in_the_clause_of_what_it_measures(text, answers):
    q = analyze_question("会员卡欠费多少天会被冻结")
    assert judge_unit(q, _unit(text, "会员卡欠费处理")).answers is answers


@pytest.mark.parametrize(("question", "word"), [
    ("储物柜坏了能不能换一个", "不能"), ("储物柜额外加锁吗", "额外"),
])
def test_words_of_the_asked_form_are_no_subject_terms(question, word):
    assert word not in analyze_question(question)["subject_terms"]


@pytest.mark.parametrize(("question", "text"), [
    ("游泳馆的储物柜要钱吗", "储物柜免费使用，离馆时请清空。"),  # 「免费」 answers whether it costs money
    ("游泳馆的储物柜收费吗", "储物柜每次2元。"),
])
def test_a_charge_question_binds_without_its_charge_word(question, text):
    assert _answers(question, text, "游泳馆与攀岩课须知")


def test_a_chunks_category_is_carried_onto_its_evidence():
    from knowledge.types import Chunk, Hit
    from strategies.rules.evidence import hit_to_evidence

    chunk = Chunk(chunk_id="c1", doc_id="d", title="换卡须知", text="换卡需5个工作日。", retrieval_text="换卡",
                  metadata={"status": "current", "category": "储蓄卡业务"})
    assert hit_to_evidence(Hit(chunk=chunk, score=1.0))["category"] == "储蓄卡业务"
    bare = Chunk(chunk_id="c2", doc_id="d", title="换卡须知", text="换卡需5个工作日。", retrieval_text="换卡")
    assert "category" not in hit_to_evidence(Hit(chunk=bare, score=1.0))


@pytest.mark.parametrize(("text", "answers"), [
    ("储物柜可凭手环自助开启，离馆前取出物品。", False),  # says nothing of money
    ("储物柜免费使用，凭手环开启。", True),
    ("储物柜每次2元，凭手环开启。", True),
])
def test_a_charge_word_the_kb_never_writes_still_asks_for_a_price(text, answers):
    texts = ["储物柜可凭手环自助开启，离馆前取出物品。", "储物柜免费使用，凭手环开启。", "储物柜每次2元，凭手环开启。"]
    vocab = build_vocabulary([["场馆须知", "储物柜"]], texts)
    assert not vocab.document_frequency("交钱")
    q = analyze_question("储物柜要交钱吗", [], vocab)
    assert judge_unit(q, _unit(text, "场馆须知", "储物柜"), vocab=vocab).answers is answers


@pytest.mark.parametrize(("question", "text", "answers"), [
    ("团课人数有限制吗", "团课人数每节最多20人。", True),  # a stated limit binds 「限制」
    ("团课人数有限制吗", "团课人数登记后即可开课。", False),  # no limit stated
    ("报名团课有哪些要求", "报名团课须年满13周岁。", True),  # a stated condition binds 「要求」
    ("报名团课有哪些要求", "报名团课后可在前台领取手环。", False),
])
def test_a_limit_or_condition_word_binds_where_one_is_stated(question, text, answers):
    assert _answers(question, text, "场馆须知") is answers


def test_a_charge_word_counts_only_where_a_price_or_free_is_stated():
    from strategies.rules.answerability import subject_binding

    free = subject_binding(["团课", "缺席", "收费"], _unit("团课提前一天取消不收取费用。"))
    assert "收费" in free.found and free.missing == ("缺席",)
    priced = subject_binding(["团课", "缺席", "收费"], _unit("团课缺席一次扣费30元。"))
    assert priced.share == pytest.approx(1.0) and priced.missing == ()
    unpriced = subject_binding(["团课", "缺席", "收费"], _unit("团课缺席三次将暂停预约。"))
    assert "收费" in unpriced.missing  # nothing about money: the word stays unmet


def test_a_charge_stated_as_a_rate_answers_a_question_about_charging():
    # 「按书价的1%收取」 states what is charged as a share of another sum: it answers 「收不收费」
    # and 「怎样收费」; a share in a clause that charges nothing does not.
    assert _answers("借阅超期收不收费", "借阅超期每天按书价的1%收取滞纳金。", "借阅规则")
    assert _answers("借阅超期怎样收费", "借阅超期每天按书价的1%收取滞纳金。", "借阅规则")
    assert not _answers("借阅超期收不收费", "借阅超期的图书须先归还再续借。", "借阅规则")
    assert not _answers("借阅超期怎样收费", "借阅超期的图书约1%未归还，须先归还再续借。", "借阅规则")


def test_a_priced_table_row_answers_whether_something_costs_money():
    # A row under a price heading states its sums in bare cells (「会员：0」 is free): it answers
    # 「还得交钱吗」; the same row under a heading that names no price or unit says nothing of money.
    row = "场馆：室内馆，会员：0，非会员：30"
    assert judge_unit(analyze_question("室内馆还得交钱吗"),
                      Unit(id="e@0", evidence_id="e", doc_id="d", text=row, context=("羽毛球馆", "收费标准"),
                           row=True, chunk_text=row)).answers
    assert not judge_unit(analyze_question("室内馆还得交钱吗"),
                          Unit(id="e@0", evidence_id="e", doc_id="d", text=row, context=("羽毛球馆", "开放时间"),
                               row=True, chunk_text=row)).answers


def test_a_charge_word_asked_about_is_no_unknown_name():
    # 「…还得交钱吗」 asks for a price, which the knowledge base writes in its own words
    # (「加收」「20元」); 「交钱直接升级…吗」 pays to get something, and a KB that never speaks
    # of paying for it has no answer.
    from strategies.rules.answerability import unknown_terms

    vocab = build_vocabulary([["会员手册", "收费标准"]], ["会员手册 收费标准 夜间场次加收20元，年卡会员免费。"])
    asked = analyze_question("夜间场次还得交钱吗", vocab=vocab)
    assert "交钱" not in unknown_terms(asked, vocab)
    means = analyze_question("年卡能交钱直接升级吗", vocab=vocab)
    assert "交钱" in unknown_terms(means, vocab)


def test_a_per_unit_word_is_said_by_the_unit_of_a_rate():
    # 「每页」 asks for a rate: 「0.5元/页」 or 「按页计费」 states one, 「不再按页计费」 does not.
    assert _term_present("每页", "黑白打印：0.5元/页")
    assert _term_present("每页", "超出部分按页计费")
    assert _term_present("每天", "储物柜：3元/日")
    assert not _term_present("每页", "包月后不再按页计费")
    assert not _term_present("每页", "黑白打印：0.5元")
    assert _answers("图书馆打印每页收多少钱", "服务：黑白打印（按页），收费：0.5元/页", "图书馆复印打印收费")
    assert not _answers("图书馆打印每页收多少钱", "服务：黑白打印，收费：包月30元", "图书馆复印打印收费")


def test_a_clause_opening_with_a_rate_prices_the_clause_before_it():
    # 「…另计，每页0.2元」: the rate clause names no subject of its own; it prices the one before.
    assert _answers("阅览室复印怎么收费", "复印另计，每页0.2元；", "阅览室服务", "费用说明")
    assert not _answers("阅览室扫描怎么收费", "复印另计，每页0.2元；", "阅览室服务", "费用说明")


def test_a_one_character_name_no_text_holds_is_unknown():
    # A library's rules never write 「猫」: a question about bringing one names what they do not cover.
    from strategies.rules.answerability import unknown_terms

    texts = ["入馆须知 读者可携带书包进入阅览室，食品和饮料须存放在储物柜。", "借阅规则 每人可借书10本。"]
    vocab = build_vocabulary([["入馆须知"], ["借阅规则"]], texts)
    assert unknown_terms(analyze_question("猫能带进阅览室吗", vocab=vocab), vocab) == ["猫"]
    assert unknown_terms(analyze_question("书包能带进阅览室吗", vocab=vocab), vocab) == []
    assert unknown_terms(analyze_question("人能进阅览室吗", vocab=vocab), vocab) == []  # everyday, not a name


def test_a_label_defined_by_where_it_is_names_a_group_of_places():
    # 「城区分馆：位于南京、苏州两个城市的分馆」 defines a group: a reader in 苏州 asks about 城区分馆.
    texts = ["分馆类型 分馆分为两类: 1. 城区分馆:位于南京、苏州两个城市的分馆。 "
             "2. 社区分馆:设在街道的分馆,包括无锡、常州等地。 3. 流动分馆:位于图书大巴上,不固定。",
             "开馆安排 城区分馆每天9:00开门,社区分馆每天10:00开门。"]
    vocab = build_vocabulary([["分馆类型"], ["开馆安排"]], texts)
    assert vocab.region_aliases["城区分馆"] == frozenset({"南京", "苏州"})
    assert vocab.region_aliases["社区分馆"] == frozenset({"无锡", "常州"})
    assert "流动分馆" not in vocab.region_aliases  # no place after the cue
    assert "城区分馆" in analyze_question("苏州的分馆几点开门", vocab=vocab)["qualifiers"]["region"]


def test_a_tier_named_with_its_head_is_the_tier_a_member_table_names():
    # 「白银会员」 is the row 「会员等级：白银」; 「银星会员」 is not the row of the longer tier 「白银星」.
    assert _term_present("白银会员", "会员等级：白银，借阅上限：20本")
    assert _term_present("银星会员", "会员等级：银星，借阅上限：25本")
    assert not _term_present("银星会员", "会员等级：白银星，借阅上限：25本")
    assert _term_present("学生用户", "用户类型：学生，押金：0元")
    assert not _term_present("白银会员", "会员等级：黄金，借阅上限：30本")
    assert _answers("白银会员最多借几本", "会员等级：白银，借阅上限：20本", "读者会员权益")
    assert not _answers("白银会员最多借几本", "会员等级：黄金，借阅上限：30本", "读者会员权益")


@pytest.mark.parametrize(("question", "slot"), [
    ("储物柜每月多少电费", "amount"), ("私教课另收多少课时费", "amount"),
    ("有多少次免费", "count"), ("多少天免费", "duration"),
])
def test_how_much_before_a_named_charge_asks_for_money(question, slot):
    assert analyze_question(question)["slot"] == slot


def test_a_group_of_customers_does_not_answer_a_which_organisation_question():
    vocab = build_vocabulary([["会员服务", "团课视频"], ["会员服务", "淋浴用品"], ["合作平台"]],
                             ["团课视频由年卡用户免费观看", "淋浴用品由年卡用户免费领取", "合作平台 列表"])
    by_org = analyze_question("淋浴用品是哪家提供的", vocab=vocab)
    assert not judge_unit(by_org, _unit("淋浴用品由年卡用户免费领取。", "会员服务"), vocab=vocab).answers
    assert judge_unit(by_org, _unit("淋浴用品由青松日化公司提供。", "会员服务"), vocab=vocab).answers
    on_platform = analyze_question("团课视频是哪个平台的", vocab=vocab)
    assert not judge_unit(on_platform, _unit("团课视频由年卡用户免费观看。", "会员服务"), vocab=vocab).answers
    assert judge_unit(on_platform, _unit("团课视频由青松体育平台提供。", "会员服务"), vocab=vocab).answers
    by_whom = analyze_question("淋浴用品谁领取", vocab=vocab)  # 「谁」 is answered by a person too
    assert judge_unit(by_whom, _unit("淋浴用品由年卡用户免费领取。", "会员服务"), vocab=vocab).answers



def test_a_choice_between_two_of_a_kind_is_answered_only_by_a_unit_naming_one():
    # 「A还是B」 with one head: a unit on the subject that names neither option does not choose
    question = "储物柜要租1号柜还是2号柜"
    assert analyze_question(question)["slot"] == "yesno"
    assert not _answers(question, "储物柜每月租金30元。")
    assert _answers(question, "储物柜可租用1号柜。")


@pytest.mark.parametrize(("question", "options"), [
    ("储物柜要租1号柜还是2号柜", ("1号柜", "2号柜")),
    ("年卡有效期从付款开始算还是激活开始算", ("付款", "激活")),  # the options are what differs
    ("选年卡还是季卡，哪个划算", ("年卡", "季卡")),
    ("柜门关了好几次还是打不开", ()),  # 「还是」 as 「still」
    ("住标准间还是大床房", ()),  # two heads: left to the other checks
    ("年卡是当月有效还是30天有效", ("当月", "30天")),  # 「是A还是B」: the first option starts after 是
])
def test_the_options_of_a_choice(question, options):
    assert _choice_options(analyze_question(question)["norm"]) == options


def test_a_unit_naming_one_option_chooses_whatever_the_other_option_says():
    # the words of the option the unit does not name are no subject it must carry; a text that
    # spaces its numbers (「30 天」) names the option 「30天」
    question = "年卡是当月有效还是30天有效"
    assert _answers(question, "年卡自首次入馆起 30 天内有效，过期作废。", "年卡")
    assert _answers(question, "年卡自办卡当月有效。", "年卡")
    assert not _answers(question, "年卡可在前台办理，每张200元。", "年卡")  # names neither option


def test_a_value_written_in_most_of_the_kb_is_its_subject_not_a_regime():
    # a gift-card help centre: 礼品卡 is what every rule is about, not one payment method among others
    texts = ["礼品卡充值后即时到账。", "礼品卡挂失请致电客服。", "礼品卡余额可查询。", "礼品卡不可转借他人。",
             "团课每节60分钟。", "退卡款项原路退回微信，1天内到账。"]
    vocab = build_vocabulary([["场馆服务", "礼品卡"]], texts)
    q = analyze_question("礼品卡退卡款项多久到账", [], vocab)
    assert q["qualifiers"].get("payment") == ["礼品卡"]
    text = "退卡款项原路退回微信，1天内到账。"
    unit = Unit(id="e@0", evidence_id="e", doc_id="d", category="礼品卡", text=text, context=("款项去向",),
                chunk_text=text)
    assert judge_unit(q, unit, vocab=vocab).answers  # 微信 is where the money goes, not another regime
    rare = build_vocabulary([["场馆服务", "礼品卡"]], [*texts, *(f"第{i}条场馆规则。" for i in range(8))])
    assert not judge_unit(analyze_question("礼品卡退卡款项多久到账", [], rare), unit, vocab=rare).answers


@pytest.mark.parametrize(("question", "text", "answers"), [
    ("次卡多久过期", "卡种：次卡，次数：10次，有效期：开卡后 90天", True),
    ("储值卡什么时候失效", "储值卡自开卡之日起36个月内有效，余额不退。", True),
    # a validity the sentence only names as a condition states no span
    ("体验课券领取以后几天失效", "退课时体验课券若未超出有效期，退回原账户。", False),
    # a yes-no question about what follows the lapse does not ask how long the card is valid
    ("储值卡到期以后余额可以提现吗", "卡种：储值卡，有效期：开卡后 365天，可提现：否", False),
])
def test_how_long_until_something_lapses_is_answered_by_its_validity(question, text, answers):
    assert _answers(question, text, "会员卡券") is answers


@pytest.mark.parametrize(("text", "answers"), [
    ("储物柜钥匙遗失，照价赔偿50元。", True),  # the leading clause names what the value after it is about
    ("更衣柜钥匙遗失，照价赔偿30元。", False),  # … and another locker's clause does not bind this one
])
def test_a_short_leading_clause_binds_the_value_after_it(text, answers):
    # (a leading clause that sets a time or a condition does not: see the bound test above)
    assert _answers("储物柜的钥匙没了赔多少钱", text, "场馆须知") is answers


@pytest.mark.parametrize(("text", "answers"), [
    # the case named before a short clause that itself leads on binds the value in it too
    ("要补办会员卡的，核对后6天制好，首回不收钱。", True),
    ("要补办手环的，核对后6天制好，首回不收钱。", False),  # another thing's case
    ("会员卡遗失后，核对后6天制好，首回不收钱。", False),  # a time set before it is no subject
])
def test_a_leading_case_binds_a_short_clause_that_leads_on_itself(text, answers):
    assert _answers("补办会员卡得几天", text, "场馆须知") is answers


@pytest.mark.parametrize(("text", "answers"), [
    # a price after a condition clause is the price of the case that clause names …
    ("私教课时耗尽后，改收单节220元。", True),
    ("团课课包耗尽后，改收单节220元。", False),  # … and of no other case
    ("私教课时耗尽后，须在7天内续费。", False),  # a time after the condition is not the case's own
])
def test_a_price_after_a_condition_is_the_price_of_the_case_it_names(text, answers):
    assert _answers("私教课时用完了再上一节多少钱", text, "会员手册") is answers


@pytest.mark.parametrize(("question", "text", "answers"), [
    # 「由X承担」: the one 由 names as doing the act is the party asked for, whatever its word
    ("遗失图书的赔款由谁来承担", "遗失图书的，赔款由借阅者承担。", True),
    ("馆际互借的邮资是谁付", "馆际互借的图书寄回时，邮资由读者自付。", True),
    ("馆际互借的邮资是谁付", "馆际互借的图书寄回时，邮资另按包裹克数计。", False),  # no party named
])
def test_the_agent_of_you_names_the_party_who_pays(question, text, answers):
    assert _answers(question, text, "借阅规则") is answers


@pytest.mark.parametrize(("category", "answers"), [("借书条件", True), ("还书须知", False)])
def test_a_documents_category_carries_the_anchor_as_its_title_does(category, answers):
    # the document's declared category scopes every unit of it, for the asked act as for the subject
    unit = Unit(id="e@0", evidence_id="e", doc_id="d", text="临时读者证不可使用。", context=("读者证件",),
                chunk_text="临时读者证不可使用。", category=category)
    assert judge_unit(analyze_question("拿临时读者证能借书吗"), unit).answers is answers


def test_a_numeral_after_a_latin_word_does_not_join_it():
    # 「VIP两年」 reads 「vip 2年」: the subject is 「vip」, not a token 「vip2」 no text contains
    assert analyze_question("VIP两年多少钱")["subject_terms"] == ["vip"]
    assert _answers("VIP两年多少钱", "VIP会员两年卡：2年368元", "会员收费")


@pytest.mark.parametrize(("question", "answers"), [
    ("环湖步道一圈有多长", True),  # 「多长」 alone asks a length as often as a time
    ("环湖步道走完一圈多长时间", False),  # 「多长时间」 asks a time: a length does not answer it
])
def test_how_long_without_time_is_answered_by_a_length(question, answers):
    assert _answers(question, "环湖步道一圈全长3.2公里，沿途设有6个休息点。", "园区设施") is answers


@pytest.mark.parametrize(("text", "answers"), [
    ("停车费不足1小时的按1小时计。", False),  # a floor: rounding up, not a cap
    ("停车费每天最高收取60元。", True),
])
def test_a_question_on_a_cap_is_answered_by_a_cap_not_by_a_floor(text, answers):
    assert _answers("停车费封不封顶", text, "停车须知") is answers


def test_a_question_on_a_floor_is_not_answered_by_a_cap():
    assert not _answers("私教课有最低消费吗", "私教课每次消费上限2000元。", "私教课")
    assert _answers("私教课有最低消费吗", "私教课每次最低消费200元。", "私教课")


@pytest.mark.parametrize(("text", "answers"), [
    ("办理年卡须满16周岁，且入会须满1年方可转让。", False),  # 「满1年」 is a bar to reach, not how long
    ("年卡自开卡之日起有效期1年。", True),
    ("年卡每满3个月可免费冻结一次。", True),  # 「每满3个月」 is a period, not a bar
])
def test_a_span_after_man_is_a_bar_not_how_long(text, answers):
    assert _answers("年卡能用多长时间", text, "会员卡") is answers


def test_a_span_after_man_answers_when_an_event_follows_or_the_bar_is_asked():
    assert _answers("年卡押金几天能退", "退卡满30天后退还年卡押金。", "会员卡")  # 「满30天后」: a time
    assert _answers("入会满多久才能转让年卡", "入会须满1年方可转让年卡。", "会员卡")


@pytest.mark.parametrize(("text", "answers"), [
    ("还书逾期超过30天的，每天收取1元。", False),  # 3 days late is not past 30 days
    ("还书逾期10天以内的，每天收取0.1元。", True),
    ("还书逾期30分钟至1天的，收取1元。", False),  # a range that 3 days is beyond
])
def test_a_span_past_an_event_meets_the_rows_bounds(text, answers):
    assert _answers("还书晚了3天，得交多少钱", text, "借阅规则") is answers


def test_a_yes_no_on_two_regimes_at_once_needs_both():
    from strategies.rules.question import build_vocabulary

    vocab = build_vocabulary([["场馆", "企业会员"], ["场馆", "个人会员"], ["设施", "电子储物柜"], ["设施", "普通储物柜"]],
                             ["电子储物柜可用会员卡开启。", "企业会员由单位统一办理。", "普通储物柜免费使用。"])
    q = analyze_question("企业能用电子储物柜吗", vocab=vocab)
    assert set(q["qualifiers"]["regime"]) == {"企业", "电子储物柜"}
    one = _unit("电子储物柜可用会员卡开启，每次限用一天。", "场馆须知")
    both = _unit("企业会员可使用电子储物柜，须由单位统一登记。", "场馆须知")
    assert not judge_unit(q, one, vocab=vocab).answers  # a rule on the lockers alone says nothing of firms
    assert judge_unit(q, both, vocab=vocab).answers


@pytest.mark.parametrize(("text", "found"), [
    ("每名会员的赔偿以3,000韩元为限。", ["3000韩元"]),
    ("押金为200新加坡元。", ["200新加坡元"]),
    ("手续费为每笔5 SDR。", ["5 sdr"]),
])
def test_sums_in_other_currencies_are_amounts(text, found):
    assert [f.text for f in slot_fillers("amount", text)] == found


def test_a_value_capped_with_weixian_answers_a_question_on_the_most():
    assert _answers("寄存的物品丢了最多能赔几元", "寄存物品遗失的，每件以500元为限赔偿。", "寄存服务")


def test_an_exception_ends_at_its_clause():
    # 「…可借30天，上海除外」 excepts 上海 only: the clause before the comma is the rule, not the exception
    assert _answers("江苏的读者借书能借多久", "江苏、浙江的读者借书可借30天，上海除外。", "借阅规则")
    assert not _answers("上海的读者借书能借多久", "江苏、浙江的读者借书可借30天，上海除外。", "借阅规则")


def test_a_place_ends_at_its_clause():
    assert [f.text for f in slot_fillers("place", "损坏的图书寄回总馆，不收邮费。")] == ["寄回总馆"]


@pytest.mark.parametrize(("question", "bound"), [
    ("借阅数量到上限以后逾期费会涨到多少", ""),  # the bound is an event that sets the scene
    ("逾期费最多涨到多少", "max"),
])
def test_a_bound_reached_as_an_event_is_not_the_asked_bound(question, bound):
    assert analyze_question(question)["bound"] == bound


def test_a_verb_with_dao_is_written_with_zhi():
    assert _term_present("降到", "停卡后网速降至128Kbps。")
    assert _answers("停卡之后下载速度降到多少", "停卡后下载速度降至128Kbps，复机后恢复。", "停卡规则")


@pytest.mark.parametrize(("text", "answers"), [
    ("业务：云存储，费用：8元/月，说明：首月免费", True),  # 「包月」 is a price per month
    ("业务：云存储，费用：80元/年，说明：首年免费", False),
])
def test_a_subscription_per_period_is_met_by_a_rate_per_that_period(text, answers):
    assert _answers("云存储包月要几元", text, "增值业务") is answers


@pytest.mark.parametrize("question", ["金卡会员借书打几折", "团课能打几折"])
def test_a_discount_in_zhe_asks_an_amount_not_a_count(question):
    assert analyze_question(question)["slot"] == "amount"


@pytest.mark.parametrize(("question", "parts"), [
    ("团课一节最少几个人开？最多呢", ["团课一节最少几个人开", "团课一节最多几个人开"]),
    ("储物柜最早几点能用？最晚呢？", ["储物柜最早几点能用", "储物柜最晚几点能用"]),
    ("私教课多少钱？最多呢", []),  # no bound before: nothing to swap
])
def test_a_follow_up_naming_the_other_bound_asks_again(question, parts):
    from strategies.rules.question import split_parts

    assert split_parts(question) == parts


def test_a_count_after_a_bound_word_keeps_its_classifier_and_its_bound():
    # 「最多30人」 is one filler: the classifier says what is counted, the bound word what kind of limit
    assert [f.text for f in slot_fillers("count", "每节团课最多30人。")] == ["最多30人"]
    assert _answers("团课一节最多几个人", "每节团课最多30人。", "团课须知")
    assert not _answers("团课一节最少几个人", "每节团课最多30人。", "团课须知")


def test_a_person_named_by_relation_to_the_customer_is_who_not_what():
    text = "代办人须携带会员本人身份证原件，方可代办私教课退课。"
    vocab = build_vocabulary([["私教课"]], [f"私教课 {text}"])
    evidence = [{"id": "a", "text": text, "title": "私教课"}]
    for question in ("我妈的私教课我去代办退课要带什么", "我老公的私教课能让我代办退课吗"):
        analysis = analyze_question(question, vocab=vocab)
        assert not {"妈", "老公"} & set(analysis["subject_terms"]), analysis["subject_terms"]
        assert any(v.answers for v in answerability(analysis, evidence, vocab=vocab).verdicts), question
    # a knowledge base that writes the word keeps it a subject term
    kin = build_vocabulary([["家属卡"]], ["家属卡 会员家属可办理家属卡，每张200元。"])
    assert "家属" in analyze_question("家属能办吗", vocab=kin)["subject_terms"]


@pytest.mark.parametrize("question", ["私教课迟到四个多小时还能上吗", "储物柜超时两个半小时扣多少",
                                      "还书晚了半个月要罚款吗"])
def test_a_rounded_or_halved_span_the_customer_states_is_no_subject(question):
    # 「四个多小时」「三个半小时」「半个月」: the unit counts the customer's span, as in 「3个小时」
    assert not {"小时", "月", "个月"} & set(analyze_question(question)["subject_terms"])


@pytest.mark.parametrize("text", ["储物柜按月出租，会员使用不另收费。", "会员带毛巾进场，不额外收费。"])
def test_a_statement_that_nothing_more_is_charged_answers_whether_it_costs(text):
    # 「不另收费」「不额外收费」 say no to 「…要收费吗」 as 「免费」「不收」 do
    assert _answers("会员用储物柜要收费吗" if "储物柜" in text else "带毛巾进场要收费吗", text, "收费标准")


def test_a_weekend_is_written_by_its_days():
    assert _term_present("周末", "周六、周日和法定节假日：游泳馆08:00开门")
    assert not _term_present("周末", "周一至周五：游泳馆06:30开门")
    assert _term_present("工作日", "周一至周五：游泳馆06:30开门")
    # under a heading joining the weekend to another period, a unit naming the days speaks to the weekend
    text = "周六、周日和法定节假日：游泳馆08:00开门，其他场馆不变。"
    assert _answers("游泳馆周末开门是几点", text, "场馆开放时间", "周末与节假日调整")


def test_a_rare_modal_verb_pair_is_a_modal_and_a_verb_anywhere():
    # 「能带」 is a rare dictionary word; before an object as before the interrogative it is 能 + 带
    assert "能带" not in analyze_question("年卡能带个朋友一起进馆吗")["subject_terms"]
    assert "能免" not in analyze_question("金卡读者借柜子能免租金吗")["subject_terms"]
    assert "租金" in analyze_question("金卡读者借柜子能免租金吗")["subject_terms"]


def test_a_verb_with_its_complement_is_no_subject_term_the_kb_never_writes():
    text = "储物柜钥匙须在离馆前归还，遗失钥匙赔偿30元。"
    vocab = build_vocabulary([["储物柜"]], [f"储物柜 {text}"])
    for question, glued in (("储物柜钥匙能带上楼吗", "带上"), ("钥匙用完要还吗", "用完"),
                            ("储物柜钥匙能拿去游泳馆吗", "拿去")):
        assert glued not in analyze_question(question, vocab=vocab)["subject_terms"], question
    # a knowledge base that writes the verb with its complement keeps it
    kept = build_vocabulary([["储物柜"]], ["储物柜 钥匙不得带走，离馆前须归还。"])
    assert "带走" in analyze_question("钥匙能带走吗", vocab=kept)["subject_terms"]


def test_a_time_window_states_a_limit():
    text = "团课开课前 24 小时内可在App免费退课，逾期不退。"
    assert _answers("团课退课有什么时间上的限制吗", text, "团课退课")
    assert not _answers("团课退课有什么时间上的限制吗", "团课可在App退课。", "团课退课")  # no limit stated


@pytest.mark.parametrize("question", ["借书证冻结了下一步干什么", "押金退了之后我还要做什么", "借书证丢了咋办"])
def test_words_asking_what_to_do_are_no_subject_terms(question):
    assert not {"干什么", "做什么", "咋办"} & set(analyze_question(question)["subject_terms"])


@pytest.mark.parametrize(("question", "slot"), [
    ("前台送的几张体验券都要登记吗", "yesno"),  # 几 in a clause asking yes or no: a few
    ("借书证几年不续会作废吗", "yesno"),
    ("你知道游泳馆几点开门吗", "date"),  # a verb of knowing embeds the question: still asked
    ("游泳馆几点开门？周末也开吗", "date"),  # the 吗 is in another clause
    ("体验券一次能用几张", "count"),
])
def test_a_ji_in_a_clause_asking_yes_or_no_is_indefinite(question, slot):
    assert analyze_question(question)["slot"] == slot


def test_a_bracket_of_sums_opening_a_condition_clause_is_a_tier():
    # 「押金在50元(含)以下的，…」 is the rule for that bracket: a customer stating 80 is in another
    question = analyze_question("借书证押金还剩80块，退证时押金当场退还吗")
    assert _other_quantity(question, _unit("押金在 50 元（含）以下的，当场退还现金。", "退证"))
    assert not _other_quantity(question, _unit("押金超过 50 元的，七天后转回付款账户。", "退证"))
    assert not _other_quantity(question, _unit("押金 50 元，退证时当场退还。", "退证"))  # a sum, no bracket


def test_a_sum_below_which_something_is_refused_is_no_answer_to_how_much():
    # 「储值低于 8 元不能入馆」 states a condition, not what the card holds at most
    question = "储值卡最多能存多少钱"
    assert not _answers(question, "储值卡余额低于 10 元时不能刷卡入馆。", "储值卡")
    assert _answers(question, "储值卡最多可存 2000 元。", "储值卡")
    assert _answers("储值卡余额低于多少不能入馆", "储值卡余额低于 10 元时不能刷卡入馆。", "储值卡")


def test_a_polarity_word_answers_only_in_a_sentence_naming_the_subject():
    # the unit never names the asked act: its 「不能」 is about another act under the same title
    texts = ["游泳馆须知 储物柜钥匙当日归还，不能带出馆外。", "游泳馆须知 会员卡仅供持卡者刷卡。", "团课 开课前2小时停止预约。",
             "私教课 每节课60分钟。", "停车 会员免费停车2小时。", "淋浴 热水供应到21点。"]
    vocab = build_vocabulary([["游泳馆须知"], ["团课"], ["私教课"], ["停车"], ["淋浴"]], texts)
    for asked in ("游泳馆明天会停水吗", "游泳馆会不会停水"):
        question = analyze_question(asked, vocab=vocab)
        assert not judge_unit(question, _unit("储物柜钥匙当日归还，不能带出馆外。", "游泳馆须知"), vocab=vocab).answers
    card = analyze_question("游泳馆的会员卡能借给同事吗", vocab=vocab)
    assert judge_unit(card, _unit("会员卡仅供持卡者刷卡。", "游泳馆须知"), vocab=vocab).answers  # names the card


def test_a_span_starting_at_the_asked_act_is_not_its_time():
    # 「多久送到」 asks the time until 送到; a span counted from 送到 runs to another act
    question = "预约的书多久能送到取书柜"
    assert not _answers(question, "图书送到取书柜并登记后3天内须取走。", "预约借书")
    assert _answers(question, "预约的图书一般2天内送到取书柜。", "预约借书")
    assert _answers(question, "图书入馆登记后2天内送到取书柜。", "预约借书")  # the span ends at the act


@pytest.mark.parametrize(("text", "place"), [
    ("读者寄回图书的邮费由读者自付。", False),  # 寄回 X 的…: X is what is sent back
    ("读者退回押金的手续找馆员办。", False),
    ("图书寄回总馆服务点的邮费由馆方承担。", True),  # X ends in a word of place
    ("押金退回借书人的原账户里。", True),  # the destination after 的 is still a place (账户)
    ("图书寄到分馆的服务点后通知读者。", True),  # 寄到 takes only a place
])
def test_a_thing_sent_back_is_no_place(text, place):
    assert bool(slot_fillers("place", text)) is place
