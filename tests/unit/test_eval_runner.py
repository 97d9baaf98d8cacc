"""``csagent eval`` through the real offline graph on a tiny inline KB and hand-made suites."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from csagent.cli import main
from csagent.config import Settings
from eval import metrics as m
from eval import runner
from eval.report import render_html, write_report
from tests.fakes import RETURNS

SHIPPING = """---
id: shipping
title: 运费规则
version: v1
effective_date: 2026-01-01
status: current
category: 物流
tags: 运费, 包邮
---
# 运费规则

## 包邮门槛
普通会员订单满99元包邮，不满99元收取运费10元。
"""
EVIDENCE = [{"id": "returns#x", "text": "商品签收后7天内，支持7天无理由退货。"}]
SUITES = {
    "normal": [
        {"id": "n1", "question": "七天无理由退货的运费谁承担？", "user_id": "u1001", "category": "returns",
         "gold_facts": ["买家"], "gold_doc_ids": ["returns"], "needs_tool": False},
        {"id": "n2", "question": "满多少包邮？", "user_id": "u1002", "category": "shipping",
         "gold_facts": ["99元"], "gold_doc_ids": ["shipping"], "needs_tool": False},
    ],
    "boundary": [
        {"id": "b1", "question": "我吃了头孢今晚能喝酒吗", "user_id": "u1002", "category": "medical",
         "expected": "refused"},
    ],
    "distractor": [
        {"id": "d1", "question": "普通会员满多少包邮", "user_id": "u1002", "category": "shipping",
         "gold_facts": ["99元"], "gold_doc_ids": ["shipping"], "needs_tool": False,
         "distractor_doc_ids": [], "trap": "none"},
    ],
    "verifier": [
        {"id": "v1", "pair_id": "p1", "question": "能退吗", "evidence": EVIDENCE,
         "answer": "签收后7天内支持7天无理由退货【来源:returns#x】", "label": "correct",
         "error_type": None, "injected_span": None},
        {"id": "v2", "pair_id": "p1", "question": "能退吗", "evidence": EVIDENCE,
         "answer": "签收后15天内支持7天无理由退货【来源:returns#x】", "label": "injected",
         "error_type": "number", "injected_span": "15天"},
    ],
    "multiturn": [
        {"id": "m1", "user_id": "u1001", "trap": "second turn", "turns": [
            {"user": "七天无理由退货的运费谁承担？", "gold_facts": ["买家"], "forbidden": [],
             "expected_status": "answered"},
            {"user": "那我吃了头孢能喝酒吗", "gold_facts": [], "forbidden": [],
             "expected_status": "refused"}]},
    ],
}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from knowledge.ingest import ingest_paths

    root = tmp_path_factory.mktemp("evalrun")
    kb = root / "kb"
    kb.mkdir()
    (kb / "returns.md").write_text(RETURNS, encoding="utf-8")
    (kb / "shipping.md").write_text(SHIPPING, encoding="utf-8")
    ingest_paths([kb], root / "data" / "index", progress=False)
    datasets = root / "datasets"
    datasets.mkdir()
    for name, cases in SUITES.items():
        lines = [json.dumps(c, ensure_ascii=False) for c in cases]
        if name == "normal":
            lines.insert(1, "{broken")  # a bad line is reported and skipped
        (datasets / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"root": root, "data": root / "data", "datasets": datasets}


@pytest.fixture(scope="module")
def results(env: dict[str, Path]) -> dict:
    return runner.run_eval(suites=runner.parse_suites("all"), report_dir=env["root"] / "report",
                           datasets_dir=env["datasets"], progress=False,
                           settings=Settings(data_dir=env["data"]))


def test_parse_suites() -> None:
    assert runner.parse_suites("all") == [*runner.DEV_SUITES, *runner.GENERATED_SUITES]
    assert runner.parse_suites("boundary, normal") == ["boundary", "normal"]
    from csagent.errors import UsageError

    with pytest.raises(UsageError, match="unknown suite"):
        runner.parse_suites("normal,bogus")


def test_results_shape_and_judgments(results: dict) -> None:
    metrics = results["metrics"]
    assert set(metrics) == set(m.METRIC_KEYS)
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in metrics.values())
    cases = {f"{c['suite']}/{c['id']}": c for c in results["cases"]}
    dev = {k for k in cases if not k.startswith(("leave-gold-out/", "swap/"))}
    assert dev == {"normal/n1", "normal/n2", "boundary/b1", "distractor/d1", "verifier/v1",
                   "verifier/v2", "multiturn/m1#1", "multiturn/m1#2"}
    # every normal/distractor KB question again, its gold documents out of retrieval
    lgo = {k for k in cases if k.startswith("leave-gold-out/")}
    assert lgo == {"leave-gold-out/normal/n1", "leave-gold-out/normal/n2", "leave-gold-out/distractor/d1"}
    assert all(cases[k]["passed"] == (not cases[k]["answered"] or bool(cases[k]["facts_ok"])) for k in lgo)
    assert results["counts"]["leave_gold_out_declined"]["den"] == 3
    assert results["dataset_errors"] == ["normal.jsonl:2: invalid JSON (Expecting property name "
                                         "enclosed in double quotes)"]
    # The verifier suite is deterministic: the injected number is caught, the correct answer passes.
    assert cases["verifier/v2"]["flagged"] and not cases["verifier/v1"]["flagged"]
    assert metrics["verifier_recall"] == 1.0 and metrics["verifier_precision"] == 1.0
    assert cases["boundary/b1"]["status"] == "refused" and cases["boundary/b1"]["passed"]
    assert metrics["refusal_rate"] == 1.0
    n1 = cases["normal/n1"]
    assert n1["status"] == "answered" and n1["trace_id"] and n1["node_latency_ms"]
    assert n1["evidence_ids"] and all(i.startswith("returns#") for i in n1["citations"])
    assert cases["multiturn/m1#2"]["thread_id"] == cases["multiturn/m1#1"]["thread_id"]
    assert cases["normal/n1"]["thread_id"] != cases["normal/n2"]["thread_id"]
    assert results["confusion"]["refused"].get("refused") == 2
    assert set(results["latency"]) >= {"route_boundary", "total"}
    assert sorted(results["failing"]) == sorted(k for k, c in cases.items() if not c["passed"])
    traces = Path(results["run"]["traces_dir"])
    assert (traces / f"{n1['trace_id']}.jsonl").is_file()


def test_report_files_are_self_contained(results: dict, tmp_path: Path) -> None:
    paths = write_report(results, tmp_path)
    data = json.loads(paths["results"].read_text(encoding="utf-8"))
    assert data["metrics"] == results["metrics"] and len(data["cases"]) == len(results["cases"])
    page = paths["html"].read_text(encoding="utf-8")
    assert "data:image/png;base64," in page
    assert not re.search(r"https?://", page)
    assert not re.search(r"""(?:src|href)\s*=\s*['"](?!data:|#)""", page)
    for key in ("hallucination_rate", "verifier_recall", "Expected vs actual status", "Fail-reason mix"):
        assert key in page
    summary = paths["summary"].read_text(encoding="utf-8")
    assert "| refusal_rate | 100.0% | 1/1 | ≥ 97.0% | PASS |" in summary


def test_compare_finds_regressions_and_improvements(results: dict) -> None:
    before = copy.deepcopy(results)
    after = copy.deepcopy(results)
    v1 = next(c for c in after["cases"] if c["id"] == "v1")
    v1.update(passed=False, status="fail")
    b1 = next(c for c in before["cases"] if c["id"] == "b1")
    b1.update(passed=False, status="answered")
    after["metrics"]["verifier_precision"] = 0.5
    diff = runner.compare_results(after, before)
    assert [r["case"] for r in diff["regressions"]] == ["verifier/v1"]
    assert [r["case"] for r in diff["improvements"]] == ["boundary/b1"]
    assert diff["metric_deltas"]["verifier_precision"]["delta"] == pytest.approx(-0.5)
    page = render_html(after, diff)
    assert "Regressions (1)" in page and "verifier/v1" in page


def test_eval_command_writes_report_and_compares(env: dict[str, Path], results: dict, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("CSAGENT_DATA_DIR", str(env["data"]))
    previous = tmp_path / "prev.json"
    previous.write_text(json.dumps(results, ensure_ascii=False), encoding="utf-8")
    code = main(["eval", "--suite", "verifier,boundary", "--limit", "1", "--report", str(tmp_path / "r"),
                 "--datasets", str(env["datasets"]), "--compare", str(previous), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0
    data = json.loads((tmp_path / "r" / "results.json").read_text(encoding="utf-8"))
    assert [c["id"] for c in data["cases"]] == ["v1", "b1"]
    assert "comparison" in data and "Compared with the previous results" in out
    deltas = data["comparison"]["metric_deltas"]
    assert deltas["answerable_rate"] == {"before": results["metrics"]["answerable_rate"],
                                         "after": None, "delta": None}  # not measured this run
    assert deltas["refusal_rate"]["after"] == 1.0 and deltas["verifier_recall"]["after"] is None
    assert (tmp_path / "r" / "report.html").is_file() and (tmp_path / "r" / "summary.md").is_file()


def test_eval_command_bad_arguments_are_usage_errors(env: dict[str, Path], tmp_path: Path, capsys) -> None:
    assert main(["eval", "--suite", "nope"]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("[]", encoding="utf-8")
    assert main(["eval", "--suite", "verifier", "--compare", str(bad),
                 "--datasets", str(env["datasets"])]) == 2
    assert main(["eval", "--suite", "verifier", "--datasets", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown suite" in err and "not a csagent results.json" in err and "does not exist" in err
    assert "Traceback" not in err


def test_foreign_suite_indexes_its_own_kb(env: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "foreign"
    (folder / "kb").mkdir(parents=True)
    (folder / "kb" / "manual.md").write_text(
        "---\nid: manual\ntitle: 电饭煲说明书\n---\n# 电饭煲说明书\n\n## 保修\n整机保修期为2年，内胆保修5年。\n",
        encoding="utf-8")
    rows = [{"id": "f1", "question": "电饭煲整机保修多久", "gold_facts": ["2年"], "gold_doc_ids": ["manual"]},
            {"id": "f2", "question": "电饭煲的内胆是哪家工厂生产的", "answerable": False}]
    (folder / "questions.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows),
                                            encoding="utf-8")
    settings = Settings(data_dir=env["data"])
    found, errors = runner.run_foreign(settings, tmp_path / "data", progress=False, folder=folder)
    assert errors == [] and [r["id"] for r in found] == ["f1", "f2"]
    assert found[0]["answerable"] and not found[1]["answerable"]
    assert all(r["suite"] == "foreign" for r in found)
    assert found[1]["passed"] == found[1]["declined"]
