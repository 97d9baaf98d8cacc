"""The question is tokenised once per turn: the extractive answerer reads the analysis's terms."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

import strategies.rules.answer as answer_mod
import strategies.rules.extract as extract_mod
from nodes.turn import start_turn
from strategies.rules.answer import question_terms, select_sentences

TABLE = ("| 地区 | 时效 |\n|---|---|\n| 江浙沪 | 1-2天 |\n| 新疆、西藏 | 5-8天 |\n"
         "| 港澳台 | 7-15天 |")
EVIDENCE = [
    {"id": "delivery#1", "kind": "chunk", "doc_id": "delivery", "title": "配送", "heading_path": ["配送时效"],
     "text": "各地区配送时效如下。\n\n" + TABLE, "superseded": False, "scores": {"score": 1.0}},
    {"id": "pp#1", "kind": "chunk", "doc_id": "pp", "title": "价保", "heading_path": ["价格保护"],
     "text": "价保期为15天。价保按付款时间计算。", "superseded": False, "scores": {"score": 0.5}},
]
QUESTIONS = ["寄到新疆几天能到", "我是Plus会员，价保期有几天？", "港澳台多久能到"]


def test_start_turn_stores_the_terms_with_the_analysis():
    update = start_turn({"messages": [HumanMessage(QUESTIONS[0])], "known_facts": []})
    assert update["analysis"]["terms"] == question_terms(QUESTIONS[0])
    assert update["analysis"]["terms"]["bigrams"] == sorted(update["analysis"]["terms"]["bigrams"])


@pytest.mark.parametrize("question", QUESTIONS)
def test_given_terms_the_question_is_not_tokenised_again(question, monkeypatch):
    expected = select_sentences(question, [question], EVIDENCE, 0.5, set())
    terms = question_terms(question)

    def no_tokenising(*_args, **_kwargs):
        raise AssertionError("the question was tokenised again")

    for module, name in ((answer_mod, "tokenize"), (extract_mod, "question_bigrams"),
                         (extract_mod, "asked_types")):
        monkeypatch.setattr(module, name, no_tokenising)
    assert select_sentences(question, [question], EVIDENCE, 0.5, set(), terms=terms) == expected


def test_the_terms_given_are_the_ones_used():
    question = QUESTIONS[0]
    terms = question_terms(question)
    assert select_sentences(question, [question], EVIDENCE, 0.5, set(), terms=terms)
    empty = {**terms, "gate_terms": {}, "answer_terms": {}, "bigrams": []}
    assert select_sentences(question, [question], EVIDENCE, 0.5, set(), terms=empty) == []


@pytest.mark.parametrize(("question", "content"), [
    ("储物柜能不能按周租", {"储物柜"}),
    ("泳池会不会提前闭馆", {"泳池", "提前", "闭馆"}),
    ("私教课可不可以转让", {"转让"}),
    ("毛巾是不是另外收费", {"毛巾", "另外", "收费"}),
])
def test_an_a_not_a_frame_leaves_no_pieces_among_the_gate_terms(question, content):
    # the segmenter's pieces of 「能不能」 (「不能」) would count as words a chunk must cover
    terms = set(question_terms(question)["gate_terms"])
    assert not any("不" in t for t in terms)
    assert content <= terms
