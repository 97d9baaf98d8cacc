"""Failing fast at the LLM boundary (issue 9.10 / 10.7), against real local HTTP servers.

A dead or hanging endpoint must cost seconds; retries never multiply a timeout; repeated 5xx
open the circuit breaker; a rejected json_schema is remembered across processes; the turn budget
caps a turn's LLM time; the turn meter counts calls, failures and tokens per node.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from pydantic import BaseModel

from contracts.errors import LLMUnavailableError
from csagent import llm as llm_mod
from csagent.config import Settings
from csagent.llm import (
    CAPS_FILE,
    LLMBudgetExceededError,
    build_chat_model,
    llm_turn,
    load_caps,
)
from tests.fake_openai import Fail, FakeOpenAIServer, RawBody, Reply, Slow, structured


class Route(BaseModel):
    route: str
    confidence: float


@pytest.fixture(autouse=True)
def _fresh_endpoints() -> Iterator[None]:
    llm_mod.reset_endpoints()
    yield
    llm_mod.reset_endpoints()


@pytest.fixture
def hanging_url() -> Iterator[str]:
    """A loopback port that accepts connections and never answers (a hung server)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)  # the kernel completes handshakes; nobody ever reads or answers
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        sock.close()


def model_for(url: str, tmp_path: Path, **overrides: object):
    settings = Settings(data_dir=tmp_path, llm_base_url=url, llm_model="qwen-test",
                        llm_timeout=5.0, llm_max_retries=1).with_overrides(**overrides)
    model = build_chat_model(settings)
    assert model is not None
    return model


def test_default_settings_bound_a_call_and_a_turn() -> None:
    s = Settings()
    assert s.llm_timeout <= 30 and s.llm_probe_timeout <= 5 and 0 < s.llm_turn_budget <= 120


def test_hanging_server_costs_the_probe_timeout_not_the_call_timeout(hanging_url: str,
                                                                      tmp_path: Path) -> None:
    model = model_for(hanging_url, tmp_path, llm_timeout=30.0, llm_probe_timeout=0.5)
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        model.invoke("hi")
    first = time.monotonic() - started
    started = time.monotonic()
    with pytest.raises(LLMUnavailableError, match="skipped"):
        model.invoke("hi again")  # the breaker is open: no network at all
    assert first < 5.0, first
    assert time.monotonic() - started < 0.5


def test_a_timeout_is_never_retried(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(Slow(3.0, Reply(content="late")), Reply(content="never asked"))
        model = model_for(server.url, tmp_path, llm_timeout=0.6, llm_max_retries=3)
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            model.invoke("x")
        elapsed = time.monotonic() - started
        assert len(server.requests) == 1  # one request, although 3 retries were allowed
        assert elapsed < 2.5, elapsed
        assert server.pending == 1


def test_5xx_retries_share_one_deadline(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(Fail(503), Reply(content="second try", delay=0.1))
        model = model_for(server.url, tmp_path, llm_max_retries=1)
        assert model.invoke("x").content == "second try"
        assert len(server.requests) == 2


def test_repeated_5xx_open_the_circuit_breaker(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(*[Fail(500, "upstream exploded")] * 10)
        model = model_for(server.url, tmp_path, llm_max_retries=0)
        for _ in range(llm_mod.BREAKER_5XX):
            with pytest.raises(openai.InternalServerError):
                model.invoke("x")
        with pytest.raises(LLMUnavailableError, match="upstream exploded"):
            model.invoke("x")
        assert len(server.requests) == llm_mod.BREAKER_5XX  # the 4th call never left


def test_a_success_resets_the_5xx_count(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(Fail(500), Fail(500), Reply(content="ok"), Fail(500), Fail(500),
                      Reply(content="ok again"))
        model = model_for(server.url, tmp_path, llm_max_retries=0)
        for expected in ("ok", "ok again"):
            for _ in range(2):
                with pytest.raises(openai.InternalServerError):
                    model.invoke("x")
            assert model.invoke("x").content == expected


def test_json_schema_rejection_is_remembered_across_processes(tmp_path: Path) -> None:
    rejection = Fail(500, "1 validation error: {'loc': ('body', 'response_format', 'type'), "
                          "'msg': \"Input should be 'text' or 'json_object'\"}")

    def answer(request: dict) -> Reply:
        return structured(request, {"route": "answer", "confidence": 0.9})

    with FakeOpenAIServer(answer) as server:
        server.script(rejection)
        first = model_for(server.url, tmp_path).with_structured_output(Route)
        assert first.invoke("x").route == "answer"
        assert len(server.requests) == 2  # one rejected, one json_object
        caps = load_caps(tmp_path / CAPS_FILE, f"{server.url}|qwen-test")
        assert caps["json_schema"] is False and caps["json_object_schema"] is True
        # a new process reads the file and never sends json_schema again
        code = (
            "import sys; from pydantic import BaseModel\n"
            "from csagent.config import Settings\nfrom csagent.llm import build_chat_model\n"
            "class Route(BaseModel):\n    route: str\n    confidence: float\n"
            f"s = Settings(data_dir={str(tmp_path)!r}, llm_base_url={server.url!r}, "
            "llm_model='qwen-test')\n"
            "print(build_chat_model(s).with_structured_output(Route).invoke('x').route)\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=120, cwd=Path(__file__).resolve().parents[2], check=True)
        assert out.stdout.strip() == "answer"
        formats = [r["response_format"]["type"] for r in server.requests]
        assert formats == ["json_schema", "json_object", "json_object"]
        assert "schema" in server.requests[-1]["response_format"]


def test_broken_json_body_fails_the_call_without_opening_the_breaker(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(*[RawBody('{"choices": [ broken')] * 4, Reply(content="fine"))
        model = model_for(server.url, tmp_path, llm_max_retries=0)
        for _ in range(4):
            with pytest.raises(json.JSONDecodeError):
                model.invoke("x")
        assert model.invoke("x").content == "fine"


def test_turn_budget_cuts_the_call_and_refuses_the_next(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(Slow(3.0, Reply(content="late")))
        model = model_for(server.url, tmp_path, llm_timeout=30.0)
        started = time.monotonic()
        with llm_turn(1.0) as meter:
            with pytest.raises(openai.APITimeoutError):
                model.invoke("x")  # cut to the ~1 s left, not the 30 s call timeout
            with pytest.raises(LLMBudgetExceededError):
                model.invoke("y")
        assert time.monotonic() - started < 2.5
        assert len(server.requests) == 1
        summary = meter.summary()
        assert summary["calls"] == 1 and summary["failed"] == 2 and summary["ok"] == 0
        assert any("budget" in e for e in summary["errors"])


def test_turn_meter_counts_calls_tokens_and_failures(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(Reply(content="一二三四五六"), Fail(400, "bad request"), Reply(content="好"))
        model = model_for(server.url, tmp_path)
        with llm_turn(None) as meter:
            model.invoke("你好你好")
            with pytest.raises(openai.BadRequestError):
                model.invoke("x")
            model.invoke("再来")
        summary = meter.summary()
        assert (summary["calls"], summary["ok"], summary["failed"]) == (3, 2, 1)
        assert summary["completion_tokens"] == 3 + 1  # the fake server: len(content) // 2
        assert summary["prompt_tokens"] > 0
        assert summary["per_node"]["direct"]["calls"] == 3
        assert len(summary["errors"]) == 1 and "400" in summary["errors"][0]
        assert model.stats["calls"] == 3  # the model's own figures, across turns

