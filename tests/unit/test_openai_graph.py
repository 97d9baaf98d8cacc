"""Whole-graph turns with the LLM behind a real OpenAI-compatible HTTP server (tests.fake_openai).

The fake server answers each structured LLM step of the graph by schema name (boundary,
rewrite, generation, verification); generation copies a sentence from the evidence the graph
put in the prompt, or fabricates one when a test wants the verifier to catch it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from csagent.api import CSAgent, TurnResult
from csagent.config import Settings
from csagent.llm import BREAKER_5XX, reset_endpoints
from csagent.runtime import build_deps
from tests.fake_openai import (
    Fail,
    FakeOpenAIServer,
    Item,
    Reply,
    Slow,
    dead_url,
    schema_name,
    structured,
)
from tests.unit.test_api_agent import POLICY_Q, mini_kb_settings

EVIDENCE_RE = re.compile(r'<evidence id="([^"]+)"[^>]*>\n(.*?)\n</evidence>', re.S)
FAKE_CLAIM = "退货运费由商城全额承担，另补贴{n}元"


def last_user_text(request: dict[str, Any]) -> str:
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    return str(users[-1]["content"]) if users else ""


def evidence_blocks(request: dict[str, Any]) -> list[tuple[str, str]]:
    return EVIDENCE_RE.findall(last_user_text(request))


def supported_sentence(request: dict[str, Any]) -> tuple[str, str]:
    """Return (evidence id, a sentence of it) about return shipping paid by the buyer."""
    for eid, text in evidence_blocks(request):
        for sentence in re.split(r"[。；\n]", text):
            if "运费" in sentence and "买家承担" in sentence and "|" not in sentence:
                return eid, sentence.strip(" -*")
    raise AssertionError("the prompt carries no evidence about return shipping")


def unused_number(request: dict[str, Any]) -> int:
    text = last_user_text(request)
    return next(n for n in range(37, 999) if str(n) not in text)


class ShopLLM:
    """Answers the graph's structured LLM calls by schema; ``fabricate`` = first answers invented."""

    def __init__(self, *, fabricate: int = 0, own_words: bool = False):
        self.fabricate = fabricate
        self.own_words = own_words  # a true sentence in the model's wording (not evidence text)
        self.answers: list[str] = []

    def __call__(self, request: dict[str, Any]) -> Item:
        name = schema_name(request)
        if name == "BoundaryDecision":
            return structured(request, {"route": "answer", "domain": "after_sales",
                                        "intent": "knowledge", "confidence": 0.97,
                                        "reason": "退货运费政策"})
        if name == "RewrittenQueries":
            return structured(request, {"queries": ["7天无理由退货 退货运费 买家承担"]})
        if name == "GeneratedAnswer":
            eid, sentence = supported_sentence(request)
            if self.fabricate > 0:
                self.fabricate -= 1
                sentence = FAKE_CLAIM.format(n=unused_number(request))
            elif self.own_words:
                sentence = f"温馨提示，请您留意：{sentence}"
            answer = f"{sentence}【来源:{eid}】。"
            self.answers.append(answer)
            return structured(request, {"answer": answer, "cannot_answer": False})
        if name == "VerificationResult":
            return structured(request, {"claims": [], "overall": "pass"})
        raise AssertionError(f"unexpected LLM request for schema {name!r}")


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return mini_kb_settings(tmp_path_factory.mktemp("openai-graph"))


def agent_for(settings: Settings, url: str, tmp: Path, **llm: Any) -> CSAgent:
    llm_settings = settings.with_overrides(llm_base_url=url, llm_model="qwen-test",
                                           llm_timeout=llm.pop("timeout", 5.0),
                                           llm_max_retries=llm.pop("max_retries", 0))
    reset_endpoints()  # every test starts with a closed circuit breaker
    deps = build_deps(llm_settings)  # the strategies are chosen for the LLM there
    return CSAgent(settings.with_overrides(data_dir=tmp), deps=deps, checkpointer=InMemorySaver())


def state_of(agent: CSAgent, result: TurnResult) -> dict[str, Any]:
    return dict(agent.graph.get_state({"configurable": {"thread_id": result.thread_id}}).values)


def requests_for(server: FakeOpenAIServer, name: str) -> list[dict[str, Any]]:
    return [r for r in server.requests if schema_name(r) == name]


def test_cited_answer_through_the_llm_path(settings: Settings, tmp_path: Path):
    llm = ShopLLM(own_words=True)
    with FakeOpenAIServer(llm) as server, agent_for(settings, server.url, tmp_path) as agent:
        result = agent.ask(POLICY_Q, user_id="u1001", thread_id="llm-ok")
        assert server.errors == []
    assert result.status == "answered", result
    assert result.answer == llm.answers[-1]  # the LLM's answer, not the extractive one
    assert re.search(r"【来源:returns-7day#[0-9a-f]{8}】", result.answer)
    assert [c["id"] for c in result.citations] == re.findall(r"【来源:([^】]+)】", result.answer)
    assert state_of(agent, result).get("llm_error") is None
    generate = requests_for(server, "GeneratedAnswer")
    assert len(generate) == 1 and generate[0]["temperature"] == 0.0
    assert generate[0]["logprobs"] is True
    assert generate[0]["response_format"]["type"] == "json_schema"
    assert requests_for(server, "VerificationResult"), "the model's own wording is LLM-verified"


def test_an_answer_that_is_evidence_text_is_not_sent_to_the_llm_verifier(settings: Settings,
                                                                          tmp_path: Path):
    llm = ShopLLM()  # the model copies an evidence sentence: the code verified it as evidence text
    with FakeOpenAIServer(llm) as server, agent_for(settings, server.url, tmp_path) as agent:
        result = agent.ask(POLICY_Q, user_id="u1001", thread_id="llm-verbatim")
    assert result.status == "answered" and result.answer == llm.answers[-1], result
    assert requests_for(server, "VerificationResult") == []
    verification = state_of(agent, result)["verification"]
    assert {"name": "llm_claims_not_needed", "ok": True} in verification["checks"]


def test_fabricated_answer_is_caught_and_the_extractive_answer_given(settings: Settings,
                                                                     tmp_path: Path):
    llm = ShopLLM(fabricate=10)  # the model invents a subsidy every time
    with FakeOpenAIServer(llm) as server, agent_for(settings, server.url, tmp_path) as agent:
        result = agent.ask(POLICY_Q, user_id="u1001", thread_id="llm-fab")
        assert server.errors == []
    # the model is asked again with the feedback; the last round is the verified extractive answer
    asked = requests_for(server, "GeneratedAnswer")
    assert len(asked) == 2 and "没有资料支持" in json.dumps(asked[1], ensure_ascii=False)
    assert result.status == "answered", result
    assert "补贴" not in result.answer and llm.answers[0] not in result.answer
    assert re.search(r"【来源:returns-7day#[0-9a-f]{8}】", result.answer)
    assert state_of(agent, result)["reflections"] == 2


def test_uncited_llm_sentence_gets_its_tag_by_code(settings: Settings, tmp_path: Path):
    def uncited(request: dict[str, Any]) -> Item:
        if schema_name(request) == "GeneratedAnswer":
            _, sentence = supported_sentence(request)
            return structured(request, {"answer": f"{sentence}。", "cannot_answer": False})
        return ShopLLM()(request)

    with FakeOpenAIServer(uncited) as server, agent_for(settings, server.url, tmp_path) as agent:
        result = agent.ask(POLICY_Q, user_id="u1001", thread_id="llm-uncited")
    assert result.status == "answered", result
    assert len(requests_for(server, "GeneratedAnswer")) == 1  # no reflection needed
    assert re.search(r"【来源:returns-7day#[0-9a-f]{8}】", result.answer)
    assert state_of(agent, result).get("reflections", 0) == 0


def broken_generation(request: dict[str, Any]) -> Item:
    if schema_name(request) == "GeneratedAnswer":
        return Reply(content='{"answer": "7天无理由退货运费由买家承担【来源:')  # cut off
    return ShopLLM()(request)


def test_broken_json_is_retried_then_the_offline_path_answers(settings: Settings, tmp_path: Path):
    with FakeOpenAIServer(broken_generation) as server, \
            agent_for(settings, server.url, tmp_path) as agent:
        result = agent.ask(POLICY_Q, user_id="u1001", thread_id="llm-broken")
    assert len(requests_for(server, "GeneratedAnswer")) == 2  # bounded: one retry
    assert result.status == "answered", result
    assert "【来源:returns-7day#" in result.answer  # the extractive offline answer, cited
    assert str(state_of(agent, result)["llm_error"]).startswith("generate:")


def test_dead_endpoint_never_crashes_a_turn(settings: Settings, tmp_path: Path):
    with agent_for(settings, dead_url(), tmp_path, max_retries=1) as agent:
        result = agent.ask(POLICY_Q, user_id="u1001", thread_id="llm-dead")
        refund = agent.ask("我头疼吃什么药", user_id="u1001", thread_id="llm-dead-2")
    assert result.status in ("answered", "handoff"), result
    if result.status == "answered":
        assert "【来源:returns-7day#" in result.answer
    assert "Connection" in str(state_of(agent, result)["llm_error"])
    assert refund.status == "refused"  # rules need no LLM


def test_repeated_server_errors_open_the_breaker_and_the_turn_goes_offline(
        settings: Settings, tmp_path: Path):
    with FakeOpenAIServer(lambda request: Fail(503, "model overloaded")) as server, \
            agent_for(settings, server.url, tmp_path, timeout=0.4) as agent:
        result = agent.ask(POLICY_Q, user_id="u1001", thread_id="llm-flaky")
        second = agent.ask(POLICY_Q, user_id="u1001", thread_id="llm-flaky-2")
    assert result.status == "answered" and "【来源:" in result.answer, result
    assert "503" in str(state_of(agent, result)["llm_error"])
    # 3 consecutive 5xx open the circuit: nothing more is sent, in this turn or the next
    assert len(server.requests) == BREAKER_5XX
    assert second.status == "answered" and second.llm["calls"] == 0 and second.llm["failed"] > 0
    assert all("skipped" in e for e in second.llm["errors"])


def test_a_timeout_opens_the_breaker_at_once(settings: Settings, tmp_path: Path):
    with FakeOpenAIServer(lambda request: Slow(1.5, Reply(content="{}"))) as server, \
            agent_for(settings, server.url, tmp_path, timeout=0.4) as agent:
        result = agent.ask(POLICY_Q, user_id="u1001", thread_id="llm-slow")
    assert result.status in ("answered", "handoff"), result
    assert result.status != "answered" or "【来源:" in result.answer
    assert "Timeout" in str(state_of(agent, result)["llm_error"])
    assert len(server.requests) == 1  # no retry of a timeout, no other node waits it out
    assert result.llm["calls"] == 1 and result.llm["ok"] == 0


def test_endpoint_without_logprobs_support_still_answers(settings: Settings, tmp_path: Path):
    with FakeOpenAIServer(ShopLLM(), reject_logprobs=True) as server, \
            agent_for(settings, server.url, tmp_path) as agent:
        result = agent.ask(POLICY_Q, user_id="u1001", thread_id="llm-nolp")
        assert server.errors == []
    assert result.status == "answered" and state_of(agent, result).get("llm_error") is None
    assert server.requests[0].get("logprobs") is True
    assert all(r.get("logprobs") is None for r in server.requests[1:])


def test_endpoint_with_json_object_only_still_uses_the_llm(settings: Settings, tmp_path: Path):
    llm = ShopLLM()
    with FakeOpenAIServer(llm, reject_json_schema=True) as server, \
            agent_for(settings, server.url, tmp_path) as agent:
        result = agent.ask(POLICY_Q, user_id="u1001", thread_id="llm-jsonobj")
        assert server.errors == []
    assert result.status == "answered" and result.answer == llm.answers[-1]
    assert state_of(agent, result).get("llm_error") is None
    kinds = [r["response_format"]["type"] for r in server.requests]
    assert kinds[0] == "json_schema" and set(kinds[1:]) == {"json_object"}


def test_a_failed_llm_verifier_call_lands_in_llm_error_and_the_turn_figures(settings: Settings,
                                                                           tmp_path: Path):
    def verifier_fails(request: dict[str, Any]) -> Item:
        if schema_name(request) == "VerificationResult":
            return Fail(400, "context length exceeded")
        return ShopLLM(own_words=True)(request)

    with FakeOpenAIServer(verifier_fails) as server, \
            agent_for(settings, server.url, tmp_path) as agent:
        result = agent.ask(POLICY_Q, user_id="u1001", thread_id="llm-verify-fails")
    assert result.status == "answered", result  # the code checks still verified the answer
    assert str(state_of(agent, result)["llm_error"]).startswith("verify: ")
    assert result.llm["failed"] >= 1 and any("400" in e for e in result.llm["errors"])
    assert result.llm["ok"] >= 1 and result.llm["prompt_tokens"] > 0
    trace = json.loads((agent.settings.traces_dir / f"{result.trace_id}.jsonl")
                       .read_text(encoding="utf-8").splitlines()[-1])
    assert trace["llm"]["errors"] == result.llm["errors"]  # the failure is in the trace too
