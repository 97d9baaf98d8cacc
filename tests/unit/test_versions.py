"""Which policy version governs a question (strategies.rules.versions): dates, asked versions, answers.

Hand-made evidence from a gym's membership rules, replaced by a new version; none of these strings
comes from an eval case.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from contracts.evidence import EVIDENCE_RESET, Evidence
from knowledge.normalize import names_a_calendar_date
from strategies.protocols import CheckRequest
from strategies.rules.answer import Gate, compose_with_gate
from strategies.rules.question import analyze_question, build_vocabulary
from strategies.rules.verify import RulesClaimChecker
from strategies.rules.versions import (
    IN_FORCE_OLD,
    NOT_YET_IN_FORCE,
    frame_versions,
    question_event,
    settled_qualifiers,
    version_note,
)

TODAY = date(2026, 12, 2)


def _chunk(doc_id: str, text: str, *, effective: str, superseded_by: str | None = None, n: int = 1) -> Evidence:
    item: dict[str, Any] = {
        "id": f"{doc_id}#{n:08x}", "kind": "chunk", "doc_id": doc_id, "title": "会员卡冻结规定",
        "text": text, "source": f"{doc_id}.md", "version": "1.0" if superseded_by else "2.0",
        "effective_date": effective, "superseded": superseded_by is not None, "conflict": False,
        "table": False, "scores": {"score": 0.9, "bm25": 8.0, "dense": 0.95}, "superseded_by": superseded_by,
        "heading_path": ["会员卡冻结"],
    }
    return Evidence(**item)  # type: ignore[typeddict-item]


OLD = _chunk("freeze-v1", "年卡会员每年可申请冻结1次，每次最长30天。", effective="2024-01-01", superseded_by="freeze")
NEW = _chunk("freeze", "年卡会员每年可申请冻结2次，每次最长60天。", effective="2026-06-01")
VOCAB = build_vocabulary([["会员卡冻结规定", "会员卡冻结"]], [OLD["text"], NEW["text"], "私教课每节课时60分钟。"])


@pytest.mark.parametrize(("question", "period"), [
    ("去年10月办的年卡，能冻结几次", (date(2025, 10, 1), date(2025, 10, 31))),
    ("三月份办的卡，冻结最长多久", (date(2026, 3, 1), date(2026, 3, 31))),
    ("4月份办的卡，冻结最长多久", (date(2026, 4, 1), date(2026, 4, 30))),
    ("2025年买的年卡能冻结吗", (date(2025, 1, 1), date(2025, 12, 31))),
    ("8月以后办的卡能冻结几次", (date(2026, 8, 1), TODAY)),
    ("今年2月办卡，11月才开始去，能冻结几次", (date(2026, 2, 1), date(2026, 2, 28))),
])
def test_the_question_dates_its_event_by_the_earliest_calendar_period(question, period):
    assert question_event(question, TODAY) == period


@pytest.mark.parametrize("question", ["冻结要提前几天申请", "3个月内能冻结吗", "离到期还有5天能冻结吗", "7天内能退卡吗"])
def test_a_span_from_now_or_no_date_is_no_event(question):
    assert question_event(question, TODAY) is None


def test_a_bare_month_later_in_the_year_than_today_is_last_years():
    assert question_event("11月办的卡", date(2026, 3, 5)) == (date(2025, 11, 1), date(2025, 11, 30))


@pytest.mark.parametrize(("text", "dated"), [
    ("去年10月办的卡", True), ("2月份办的", True), ("三月份办的", True), ("2025年入会", True),
    ("3个月内", False), ("冻结几天", False), ("12个月的卡", False),
])
def test_search_lets_old_versions_compete_only_for_dated_questions(text, dated):
    assert names_a_calendar_date(text) is dated


def test_an_event_before_the_new_version_puts_the_old_one_in_force():
    framed = {e["doc_id"]: e for e in frame_versions([NEW, OLD], "去年10月办的年卡，一年能冻结几次", TODAY)}
    assert framed["freeze-v1"]["superseded"] is False and framed["freeze-v1"]["version_frame"] == IN_FORCE_OLD
    assert framed["freeze"]["superseded"] is True and framed["freeze"]["version_frame"] == NOT_YET_IN_FORCE
    assert OLD["superseded"] is True and "version_frame" not in NEW  # the input is not modified


@pytest.mark.parametrize("question", ["8月份办的年卡，一年能冻结几次", "年卡一年能冻结几次"])
def test_the_current_version_stays_in_force_after_the_change_or_without_a_date(question):
    framed = {e["doc_id"]: e for e in frame_versions([NEW, OLD], question, TODAY)}
    assert framed["freeze"]["superseded"] is False and "version_frame" not in framed["freeze"]
    assert framed["freeze-v1"]["superseded"] is True


def test_the_end_of_the_month_before_the_change_is_still_the_old_rules():
    framed = {e["doc_id"]: e for e in frame_versions([NEW, OLD], "今年5月底办的年卡，一年能冻结几次", TODAY)}
    assert framed["freeze-v1"]["version_frame"] == IN_FORCE_OLD


def test_an_event_that_straddles_the_change_or_predates_the_old_version_changes_nothing():
    for question in ("2026年办的年卡，一年能冻结几次", "2023年办的年卡，一年能冻结几次"):
        framed = {e["doc_id"]: e for e in frame_versions([NEW, OLD], question, TODAY)}
        assert framed["freeze"]["superseded"] is False and framed["freeze-v1"]["superseded"] is True


def test_asking_for_the_old_rule_by_name_puts_it_in_force():
    framed = {e["doc_id"]: e for e in frame_versions([NEW, OLD], "按老规定年卡一年能冻结几次", TODAY)}
    assert framed["freeze-v1"]["version_frame"] == IN_FORCE_OLD
    assert version_note("按老规定年卡一年能冻结几次") != version_note("去年10月办的年卡能冻结几次")


def test_without_the_replacing_versions_date_a_dated_question_changes_nothing():
    assert frame_versions([OLD], "去年10月办的年卡，一年能冻结几次", TODAY)[0]["superseded"] is True


def test_the_answer_comes_from_the_version_in_force_says_so_and_passes_the_verifier():
    question = "去年10月办的年卡会员，每年可申请冻结几次"
    evidence = frame_versions([NEW, OLD], question, TODAY)
    text, reason, gate = compose_with_gate(question, [question], evidence, analysis=analyze_question(question, vocab=VOCAB),
                                           vocab=VOCAB, gate=Gate(min_dense=None))
    assert reason is None and gate is not None and gate.answerable
    assert text.startswith(version_note(question)) and "1次" in text and "2次" not in text
    assert RulesClaimChecker().check(CheckRequest(question=question, answer=text, evidence=evidence))["overall"] == "pass"
    unframed = [NEW, OLD]  # citing the old version without the question's date is still refused
    assert RulesClaimChecker().check(CheckRequest(question=question, answer=text, evidence=unframed))["overall"] == "fail"


def test_unframed_the_same_question_is_answered_by_the_current_rule_without_a_note():
    question = "8月份办的年卡会员，每年可申请冻结几次"
    evidence = frame_versions([NEW, OLD], question, TODAY)
    text, _, _ = compose_with_gate(question, [question], evidence, analysis=analyze_question(question, vocab=VOCAB), vocab=VOCAB, gate=Gate(min_dense=None))
    assert "2次" in text and "旧版" not in text


def _answer(question: str, evidence: list[Evidence]) -> tuple[str, Any]:
    text, _, gate = compose_with_gate(question, [question], evidence, analysis=analyze_question(question, vocab=VOCAB),
                                      vocab=VOCAB, gate=Gate(min_dense=None))
    return text, gate


@pytest.mark.parametrize(("question", "count"), [
    ("2025年10月办的年卡会员，每年可申请冻结几次", "1次"),  # the old version governed that month
    ("2026年8月办的年卡会员，每年可申请冻结几次", "2次"),  # the current one did
])
def test_a_dated_event_is_answered_by_the_document_in_force_on_that_date(question, count):
    evidence = frame_versions([NEW, OLD], question, TODAY)
    assert analyze_question(question, vocab=VOCAB)["qualifiers"].get("period")  # the date is a qualifier
    assert [e["doc_id"] for e in evidence if e.get("in_force_on_date")] == (["freeze-v1"] if count == "1次" else ["freeze"])
    text, gate = _answer(question, evidence)
    assert gate is not None and gate.answerable and count in text


def test_the_events_date_stays_a_qualifier_until_a_document_in_force_then_answers_it():
    qualifiers = {"period": ["2025年10月", "双11"], "tier": ["金卡"]}
    later = frame_versions([NEW], "2025年10月办的年卡会员，每年可申请冻结几次", TODAY)  # in force only later
    assert not any(e.get("in_force_on_date") for e in later)
    assert settled_qualifiers(qualifiers, later) == qualifiers
    framed = frame_versions([NEW, OLD], "2025年10月办的年卡会员，每年可申请冻结几次", TODAY)
    assert settled_qualifiers(qualifiers, framed) == {"period": ["双11"], "tier": ["金卡"]}  # a sale is no date


def test_the_rerank_node_frames_versions_as_of_the_contexts_day():
    from langgraph.runtime import Runtime

    from contracts.context import Context
    from nodes.rerank import rerank_evidence

    state: dict[str, Any] = {"question": "10月份办的年卡，一年能冻结几次", "evidence": [NEW, OLD]}

    def ranked(day: str) -> list[Evidence]:  # the node's update starts with the reducer's reset mark
        out = rerank_evidence(state, Runtime(context=Context(today=day)))["evidence"]
        return [e for e in out if e["id"] != EVIDENCE_RESET]

    as_of = {e["doc_id"]: e for e in ranked("2026-03-01")}
    assert as_of["freeze-v1"]["version_frame"] == IN_FORCE_OLD  # October 2025, before the change
    later = {e["doc_id"]: e for e in ranked("2026-12-02")}
    assert later["freeze-v1"]["superseded"] is True  # October 2026, after it
    assert ranked("2026-03-01")[0]["doc_id"] == "freeze-v1"  # the version in force ranks first


def test_an_llm_answer_from_the_old_version_is_introduced_as_such():
    from strategies.protocols import AnswerRequest, Draft, Turn
    from strategies.rules.answerability import GatedAnswerer

    class ScriptedAnswerer:  # the fake is at the LLM boundary: it returns what a model would say
        def __init__(self) -> None:
            self.seen: list[str] = []

        def answer(self, request: AnswerRequest) -> Draft:
            self.seen = [str(e["id"]) for e in request.evidence]
            return Draft(text=f"年卡会员每年可申请冻结1次【来源:{OLD['id']}】。")

    question = "去年10月办的年卡会员，每年可申请冻结几次"
    inner = ScriptedAnswerer()
    turn = Turn(question=analyze_question(question, vocab=VOCAB), vocab=VOCAB)
    draft = GatedAnswerer(inner).answer(AnswerRequest(turn=turn, queries=[question],
                                                      evidence=frame_versions([NEW, OLD], question, TODAY)))
    assert inner.seen == [OLD["id"]]  # the model sees only the version in force
    assert draft.text.startswith(version_note(question)) and draft.text.count(version_note(question)) == 1


def test_the_time_parser_loads_without_writing_to_stdout():
    # ``csagent ask --json`` prints its answer on stdout: jionlp's import banner must not precede it.
    import subprocess
    import sys

    code = ("from datetime import date; from strategies.rules.versions import question_event; "
            "assert question_event('去年10月办的卡', date(2026, 12, 2))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout == ""
