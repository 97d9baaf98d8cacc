"""The shape of an answer (issue 8): anchors, bound direction, measure, unknown names, grants.

Pure functions over hand-made evidence; none of these strings comes from an eval case.
"""

from __future__ import annotations

import pytest

from strategies.rules.answerability import (
    Unit,
    answerability,
    shaped_fillers,
    slot_fillers,
    unknown_terms,
)
from strategies.rules.question import (
    analyze_question,
    build_vocabulary,
    question_anchors,
    question_bound,
    question_measure,
)
from strategies.rules.risk import grant_request


def _unit(text: str, *context: str, row: bool = False) -> Unit:
    return Unit(id="e@0", evidence_id="e", doc_id="d", text=text, context=tuple(context), row=row, chunk_text=text)


@pytest.mark.parametrize(("question", "bound"), [
    ("滤芯最长能用多久", "max"), ("最低消费多少", "min"), ("保修多久", ""), ("最多最少各是多少", ""),
])
def test_question_bound(question, bound):
    assert question_bound(question) == bound


@pytest.mark.parametrize(("question", "measure"), [
    ("会员最小要几岁", "岁"), ("一次能领几张", "张"), ("要多少钱", ""), ("有几个", ""),
])
def test_question_measure(question, measure):
    assert question_measure(question) == measure


def test_anchor_is_the_predicate_next_to_the_interrogative():
    q = analyze_question("报名成功以后多久发证书")
    assert "证书" in q["anchors"] or "发证书" in q["anchors"]
    assert q["slot"] == "duration"


def test_everyday_words_are_never_anchors():
    assert "东西" not in question_anchors("那个东西多久能到", "duration", {})


def test_a_value_without_the_anchor_does_not_answer():
    q = analyze_question("报名成功以后多久发证书")
    units = [_unit("报名成功以后资料在3个工作日内审核完毕"), _unit("报名成功以后证书在10个工作日内寄出")]
    verdicts = [v.answers for v in answerability(q, [{"id": "e", "text": "。".join(u.text for u in units),
                                                      "title": "报名须知"}]).verdicts]
    assert verdicts == [False, True]


def test_an_upper_bound_question_is_not_answered_by_a_lower_bound():
    unit = _unit("借阅人须年满12周岁，每人最多借5本")
    fillers = slot_fillers("count", unit.text)
    kept = shaped_fillers(fillers, unit, [], "max", "岁")
    assert kept == ()
    kept_min = shaped_fillers(fillers, unit, [], "min", "岁")
    assert [f.text for f in kept_min] == ["12周岁"]


def test_a_count_in_another_classifier_does_not_answer():
    unit = _unit("每位读者最多借5本，借期30天")
    fillers = slot_fillers("count", unit.text)
    assert [f.text for f in shaped_fillers(fillers, unit, [], "", "张")] == []
    assert [f.text for f in shaped_fillers(fillers, unit, [], "", "本")] == ["5本"]


def test_a_specific_name_the_knowledge_base_never_uses_blocks_the_answer():
    vocab = build_vocabulary([["借阅规则", "借期"]], ["借阅规则 借期 每位读者最多借5本，借期30天，可续借1次"])
    q = analyze_question("古籍善本借期多久", vocab=vocab)
    assert unknown_terms(q, vocab)
    gate = answerability(q, [{"id": "e", "text": "每位读者最多借5本，借期30天，可续借1次", "title": "借阅规则"}],
                         vocab=vocab)
    assert not gate.answerable
    plain = analyze_question("借期多久", vocab=vocab)
    assert not unknown_terms(plain, vocab)


def test_a_verb_object_compound_binds_to_its_object():
    vocab = build_vocabulary([["价格保护"]], ["价格保护 付款后30天内降价可申请退还差价"])
    q = analyze_question("降价了能补差价吗", vocab=vocab)
    gate = answerability(q, [{"id": "e", "text": "付款后30天内降价可申请退还差价", "title": "价格保护"}], vocab=vocab)
    assert gate.answerable


@pytest.mark.parametrize(("text", "granted"), [
    ("给我账户里加200积分", True), ("帮我发张10元的券", True), ("给我发一下退货地址", False),
    ("能给我补多少钱", False), ("你好", False),
])
def test_grant_requests_are_actions_not_questions(text, granted):
    from strategies.rules.question import is_question, normalize_question

    action = grant_request(text, is_question(normalize_question(text)))
    assert (action is not None) is granted
    if action is not None:
        assert action["tool"] is None and action["intent"] == "grant_other"


def test_the_binding_share_is_a_profile_setting():
    from contracts.profile import empty_profile
    from strategies.rules.answer import Gate
    from strategies.rules.profiles import validate_profile

    vocab = build_vocabulary([["门票"]], ["门票 儿童票 身高1.2米以下免票", "门票 成人票 周末票价80元"])
    q = analyze_question("学生周末门票多少钱", vocab=vocab)
    evidence = [{"id": "e", "text": "周末成人票价80元", "title": "门票"}]
    loose, strict = (answerability(q, evidence, vocab=vocab, min_share=s).answerable for s in (0.3, 0.95))
    assert loose and not strict
    profile = validate_profile({**empty_profile(), "min_subject_share": 0.9})
    assert Gate.from_profile(profile).min_subject_share == 0.9
    assert Gate.from_profile(empty_profile()).min_subject_share == 0.75
