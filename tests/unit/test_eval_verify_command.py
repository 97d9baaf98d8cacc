"""``csagent verify`` end to end through the CLI, with the real verifier (code checks)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from csagent.cli import main

EVIDENCE = [{"id": "returns#1", "text": "商品签收后7天内，支持7天无理由退货。"}]
GOOD = {"id": "ok", "question": "能退货吗", "answer": "签收后7天内支持7天无理由退货【来源:returns#1】",
        "evidence": EVIDENCE}
BAD = {"question": "能退货吗", "answer": "签收后15天内支持7天无理由退货【来源:returns#1】",
       "evidence": EVIDENCE}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CSAGENT_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("CSAGENT_LLM_MODEL", raising=False)


def _run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stdin: str,
         *argv: str) -> tuple[int, list[dict], str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(["verify", *argv])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_verify_jsonl_stdin_pass_and_fail(monkeypatch, capsys) -> None:
    code, rows, err = _run(monkeypatch, capsys, json.dumps(GOOD) + "\n" + json.dumps(BAD) + "\n")
    assert code == 0, err
    assert [r["overall"] for r in rows] == ["pass", "fail"]
    assert rows[0]["id"] == "ok" and "id" not in rows[1]
    for row in rows:
        assert set(row) - {"id"} == {"overall", "claims"}
        for claim in row["claims"]:
            assert set(claim) == {"claim", "status", "evidence_ids"}
    assert rows[1]["claims"][0]["status"] == "unsupported"
    assert rows[1]["claims"][0]["evidence_ids"] == ["returns#1"]


def test_verify_single_pretty_object_on_stdin(monkeypatch, capsys) -> None:
    code, rows, _ = _run(monkeypatch, capsys, json.dumps(GOOD, ensure_ascii=False, indent=2))
    assert code == 0 and len(rows) == 1 and rows[0]["overall"] == "pass"


def test_verify_reports_bad_lines_with_numbers(monkeypatch, capsys, tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    lines = [json.dumps(GOOD), "{not json", "", json.dumps({"question": "q", "answer": "x"}),
             json.dumps({"question": "q", "answer": "x", "evidence": [{"id": "a"}]}), json.dumps(BAD)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, rows, err = _run(monkeypatch, capsys, "", "--input", str(path))
    assert code == 1
    assert [r["overall"] for r in rows] == ["pass", "fail"]
    assert "line 2: invalid JSON" in err
    assert 'line 4: "evidence" must be a list' in err
    assert "line 5: evidence[0]" in err
    assert "Traceback" not in err


def test_verify_missing_file_is_a_usage_error(monkeypatch, capsys, tmp_path: Path) -> None:
    code, rows, err = _run(monkeypatch, capsys, "", "--input", str(tmp_path / "nope.jsonl"))
    assert code == 2 and rows == [] and "cannot read" in err


def test_verify_empty_input_is_a_usage_error(monkeypatch, capsys) -> None:
    code, _, err = _run(monkeypatch, capsys, "   \n")
    assert code == 2 and "no input items" in err
