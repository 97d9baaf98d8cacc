"""Honest accounting in `csagent eval` with an LLM (issue 10.5, 10.7), against the fake server."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from csagent.config import Settings
from csagent.llm import reset_endpoints
from eval import cli as eval_cli
from eval.runner import run_eval
from tests.fake_openai import Fail, FakeOpenAIServer, Item, Reply, request_text
from tests.unit.test_api_agent import POLICY_Q, mini_kb_settings
from tests.unit.test_openai_graph import ShopLLM


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return mini_kb_settings(tmp_path_factory.mktemp("openai-eval"))


@pytest.fixture
def datasets(tmp_path: Path) -> Path:
    folder = tmp_path / "datasets"
    folder.mkdir()
    case = {"id": "p1", "question": POLICY_Q, "user_id": "u1001", "category": "returns",
            "gold_facts": ["买家承担"], "gold_doc_ids": ["returns-7day"], "needs_tool": False}
    (folder / "normal.jsonl").write_text(json.dumps(case, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
    return folder


def test_llm_run_reports_how_many_turns_really_used_the_llm(kb: Settings, datasets: Path,
                                                            tmp_path: Path) -> None:
    reset_endpoints()
    with FakeOpenAIServer(ShopLLM()) as server:
        settings = kb.with_overrides(llm_base_url=server.url, llm_model="qwen-test")
        results = run_eval(suites=["normal"], datasets_dir=datasets, settings=settings,
                           report_dir=tmp_path / "rep", progress=False)
    usage = results["run"]["llm_usage"]
    assert results["run"]["mode"] == "llm" and results["run"]["guards"] == "on"
    assert usage["turns"] == 1 and usage["turns_with_ok"] == 1 and usage["ok"] >= 2
    assert usage["per_node"]["generate_answer"]["turns_ok"] == 1
    assert results["cases"][0]["llm"]["calls"] == usage["calls"]


def test_llm_run_without_a_successful_call_exits_non_zero(kb: Settings, datasets: Path,
                                                          tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    reset_endpoints()
    with FakeOpenAIServer(lambda request: Fail(500, "down")) as server:
        monkeypatch.setenv("CSAGENT_DATA_DIR", str(tmp_path / "data"))
        monkeypatch.setenv("CSAGENT_INDEX_DIR", str(kb.resolved_index_dir))
        monkeypatch.setenv("CSAGENT_LLM_BASE_URL", server.url)
        monkeypatch.setenv("CSAGENT_LLM_MODEL", "qwen-test")
        args = argparse.Namespace(
            suite="normal", report=tmp_path / "rep", index=None, compare=None, limit=None,
            datasets=datasets, no_progress=True, guards="on")
        assert eval_cli.run(args) == eval_cli.LLM_UNUSED_EXIT
    assert "no successful LLM call" in capsys.readouterr().err


def test_guards_off_is_naive_rag_with_the_same_model(kb: Settings, datasets: Path,
                                                     tmp_path: Path) -> None:
    reset_endpoints()
    seen: list[dict[str, Any]] = []

    def plain(request: dict[str, Any]) -> Item:
        seen.append(request)
        return Reply(content="退货运费由商城承担。")  # an unguarded, wrong answer

    with FakeOpenAIServer(plain) as server:
        settings = kb.with_overrides(llm_base_url=server.url, llm_model="qwen-test")
        results = run_eval(suites=["normal"], datasets_dir=datasets, settings=settings,
                           report_dir=tmp_path / "rep", progress=False, guards=False)
    assert len(seen) == 1 and "response_format" not in seen[0]  # one plain call, no router
    assert "退货" in request_text(seen[0])  # the retrieved evidence is in the prompt
    case = results["cases"][0]
    assert case["status"] == "answered" and case["answer"] == "退货运费由商城承担。"
    assert results["run"]["guards"].startswith("off")
