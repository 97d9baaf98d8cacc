"""Generated suites (leave-gold-out, swap, foreign loader), their metrics, and eval's own facts."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval import facts as ef
from eval import generated as gen
from eval import metrics as m
from eval.runner import case_passed, parse_suites

EVAL_DIR = Path(__file__).resolve().parents[2] / "eval"


@dataclass
class _Chunk:
    doc_id: str
    chunk_id: str


@dataclass
class _Hit:
    chunk: _Chunk


class _Retriever:
    def __init__(self) -> None:
        self.hits = [_Hit(_Chunk(d, f"{d}#{i}")) for i, d in enumerate(["gold", "gold", "other", "x", "y"])]
        self.asked: list[int] = []

    def search(self, query: str, *, k: int = 5, **_: object) -> list[_Hit]:
        self.asked.append(k)
        return self.hits[:k]

    def get_chunk(self, chunk_id: str) -> _Chunk | None:
        return next((h.chunk for h in self.hits if h.chunk.chunk_id == chunk_id), None)

    def chunks(self) -> list[_Chunk]:
        return [h.chunk for h in self.hits]


def test_excluding_retriever_drops_gold_documents_only_while_active() -> None:
    inner = _Retriever()
    wrapper = gen.ExcludingRetriever(inner)
    assert [h.chunk.doc_id for h in wrapper.search("q", k=2)] == ["gold", "gold"]
    with wrapper.excluding(["gold"]):
        hits = wrapper.search("q", k=2)
        assert [h.chunk.doc_id for h in hits] == ["other", "x"]
        assert inner.asked[-1] == 2 * gen.OVERFETCH
        assert wrapper.get_chunk("gold#0") is None
    assert wrapper.get_chunk("gold#0") is not None
    assert len(wrapper.chunks()) == 5  # delegated


def test_leave_gold_out_cases_are_kb_questions_of_normal_and_distractor() -> None:
    suites: dict[str, list[dict[str, Any]]] = {"normal": [{"id": "n1", "question": "q", "gold_doc_ids": ["a"]},
                         {"id": "n2", "question": "q", "needs_tool": True, "gold_doc_ids": []}],
              "distractor": [{"id": "d1", "question": "q", "gold_doc_ids": ["b"]}]}
    cases = gen.leave_gold_out_cases(suites)
    assert [c["id"] for c in cases] == ["normal/n1", "distractor/d1"]


def test_swap_replaces_a_value_with_another_of_its_kind_from_the_evidence() -> None:
    evidence = ["普通会员满99元包邮，新疆满199元；退款1-3个工作日到账，信用卡3-15个工作日。"]
    swaps = list(gen.swaps("新疆满199元包邮【来源:s#1】。", evidence))
    assert swaps[0].kind == "number" and swaps[0].answer == "新疆满99元包邮【来源:s#1】。"
    ranged = next(gen.swaps("信用卡退款3至15个工作日到账【来源:x】", evidence))
    assert ranged.answer == "信用卡退款1-3工作日到账【来源:x】"
    written = next(gen.swaps("签收后七天内可退【来源:r】", ["7天内可退，Plus会员15天"]))
    assert written.answer == "签收后15天内可退【来源:r】"
    assert list(gen.swaps("满99元包邮", ["满99元包邮"])) == []  # nothing else of that kind
    assert gen.control("原样【来源:a】") == "原样【来源:a】"


def test_foreign_loader_reads_answerable_and_unanswerable_cases(tmp_path: Path) -> None:
    lines = [{"id": "f1", "question": "保修多久", "gold_facts": ["2年"], "gold_doc_ids": ["manual"]},
             {"id": "f2", "question": "能防水吗", "answerable": False},
             {"id": "f3", "question": "没有事实"}]
    (tmp_path / "questions.jsonl").write_text(
        "\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\nnot json\n", encoding="utf-8")
    cases, errors = gen.load_foreign(tmp_path)
    assert [(c["id"], c["answerable"]) for c in cases] == [("f1", True), ("f2", False)]
    assert len(errors) == 2
    assert gen.load_foreign(tmp_path / "missing") == ([], [f"{tmp_path / 'missing' / 'questions.jsonl'}: does not exist"])


def test_generated_metrics_and_pass_rules() -> None:
    cases = [
        {"suite": "leave-gold-out", "answered": False},
        {"suite": "leave-gold-out", "answered": True, "facts_ok": True, "hallucinated": False},
        {"suite": "leave-gold-out", "answered": True, "facts_ok": False},
        {"suite": "swap", "swap_flagged": True, "control_passed": True},
        {"suite": "swap", "swap_flagged": False, "control_passed": True},
        {"suite": "foreign", "answerable": False, "answered": False},
        {"suite": "foreign", "answerable": False, "answered": True},
        {"suite": "foreign", "answerable": True, "answered": True, "facts_ok": True, "hallucinated": False},
    ]
    assert m.leave_gold_out_declined(cases) == (2 / 3, 2, 3)
    assert m.swap_flagged(cases) == (0.5, 1, 2) and m.swap_unswapped_pass(cases) == (1.0, 2, 2)
    assert m.foreign_declined(cases) == (0.5, 1, 2) and m.foreign_answer_right(cases) == (1.0, 1, 1)
    assert [case_passed(c) for c in cases] == [True, True, False, True, False, True, False, True]
    result = m.compute_metrics(cases)
    assert result["targets"]["swap_flagged"]["met"] is False
    assert result["counts"]["hallucination_rate"]["den"] == 0  # generated rows stay out


def test_all_suites_exclude_foreign() -> None:
    assert "foreign" not in parse_suites("all") and "leave-gold-out" in parse_suites("all")
    assert parse_suites("foreign") == ["foreign"]


def test_eval_facts_are_independent_of_the_product() -> None:
    for name in ("facts.py", "metrics.py", "generated.py"):
        tree = ast.parse((EVAL_DIR / name).read_text(encoding="utf-8"))
        imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not any(i.split(".")[0] in {"strategies", "nodes", "graph", "knowledge"} for i in imported), name


def test_eval_facts_normalise_and_compare() -> None:
    assert [str(n) for n in ef.extract("签收后七天内，1~3个工作日，满九十九元").numbers] == ["7天", "1-3工作日", "99元"]
    assert ef.extract("2026年3月17日 10:30 订单SO2026112500103 已签收").dates == ["2026-03-17"]
    assert ef.unsupported("7天内，运费12元", ["7天内可退，运费10元"]) == ["12元"]
    assert ef.unsupported("1-3个工作日", ["1至3个工作日"]) == []
    assert ef.unsupported("新疆包邮", ["西藏包邮"]) == ["新疆"]


def test_eval_facts_read_no_number_in_words_whose_yi_counts_nothing() -> None:
    # the gate's sentence for an uncovered part (「另一部分」「进一步」) states no number 1
    assert ef.extract("您问题中的另一部分没有找到，如需进一步帮助可转人工。").numbers == []
    assert ef.unsupported("会员卡统一在前台办理", ["会员卡在前台办理"]) == []
    assert [str(n) for n in ef.extract("一次最多借一件，另一张卡须满一年").numbers] == ["1次", "1件", "1年"]
