"""The LLM boundary (csagent.llm) against a real local OpenAI-compatible HTTP server."""

from __future__ import annotations

import json
import time
from typing import Literal

import openai
import pytest
from langchain_core.messages import AIMessage
from pydantic import BaseModel

from csagent import llm as llm_mod
from csagent.config import Settings
from csagent.llm import DEFAULT_API_KEY, build_chat_model
from tests.fake_openai import (
    Fail,
    FakeOpenAIServer,
    RawBody,
    Reply,
    Slow,
    dead_url,
    schema_name,
    structured,
)


class Decision(BaseModel):
    route: Literal["answer", "refuse"]
    confidence: float


@pytest.fixture(autouse=True)
def _private_data_dir(tmp_path, monkeypatch):
    """Settings() default to the user's data dir; what a server rejects is remembered there."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    llm_mod.reset_endpoints()


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv
        assert srv.errors == [], srv.errors  # every request was scripted


def model_for(url: str, **overrides):
    settings = Settings(llm_base_url=url, llm_model="qwen-test", llm_timeout=5.0,
                        llm_max_retries=0).with_overrides(**overrides)
    model = build_chat_model(settings)
    assert model is not None
    return model


def test_offline_when_not_configured():
    assert build_chat_model(Settings()) is None
    assert build_chat_model(Settings(llm_base_url="http://127.0.0.1:1/v1")) is None  # no model


def test_plain_completion_request_shape_and_logprobs(server):
    server.script(Reply(content="您好，请问有什么可以帮您？", logprobs=[("您好", -0.01), ("？", -0.2)]))
    reply = model_for(server.url).invoke("你好")
    assert reply.content == "您好，请问有什么可以帮您？"
    assert [t["token"] for t in reply.response_metadata["logprobs"]["content"]] == ["您好", "？"]
    request = server.requests[0]
    assert request["model"] == "qwen-test"
    assert request["temperature"] == 0.0
    assert request["logprobs"] is True
    assert request["messages"] == [{"role": "user", "content": "你好"}]


def test_api_key_defaults_to_not_needed(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = model_for("http://127.0.0.1:1/v1")
    assert model.openai_api_key is not None
    assert model.openai_api_key.get_secret_value() == DEFAULT_API_KEY


def test_streaming_reassembles_content_and_usage(server):
    server.script(Reply(content="七天无理由退货运费由买家承担"))
    chunks = list(model_for(server.url).stream("运费谁出"))
    assert "".join(str(c.content) for c in chunks) == "七天无理由退货运费由买家承担"
    assert server.requests[0]["stream"] is True
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert total.usage_metadata is not None and total.usage_metadata["output_tokens"] > 0


def test_structured_output_json_schema_default(server):
    server.script(Reply(content='{"route": "refuse", "confidence": 0.93}'))
    runnable = model_for(server.url).with_structured_output(Decision, include_raw=True)
    out = runnable.invoke("我头疼吃什么药")
    assert out["parsed"] == Decision(route="refuse", confidence=0.93)
    assert out["raw"].response_metadata["logprobs"]["content"]  # confidence is readable
    request = server.requests[0]
    assert request["response_format"]["type"] == "json_schema"
    assert schema_name(request) == "Decision"


def test_structured_output_function_calling(server):
    model = model_for(server.url)
    runnable = model.with_structured_output(Decision, include_raw=True, method="function_calling")
    probe = {"tool_choice": {"type": "function", "function": {"name": "Decision"}}}
    server.script(structured(probe, {"route": "answer", "confidence": 0.8}))
    out = runnable.invoke("退货运费")
    assert out["parsed"] == Decision(route="answer", confidence=0.8)
    assert schema_name(server.requests[0]) == "Decision"
    assert server.requests[0]["tools"][0]["function"]["name"] == "Decision"


def test_tool_calls_are_returned(server):
    server.script(Reply(content=None, tool_calls=[
        {"name": "order_lookup", "args": {"order_id": "SO2026112500103"}}]))
    model = model_for(server.url).bind_tools([{
        "type": "function",
        "function": {"name": "order_lookup", "description": "查订单",
                     "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}},
    }])
    reply = model.invoke("查订单 SO2026112500103")
    assert isinstance(reply, AIMessage)
    assert reply.tool_calls[0]["name"] == "order_lookup"
    assert reply.tool_calls[0]["args"] == {"order_id": "SO2026112500103"}


def test_broken_json_is_a_parsing_error_with_the_raw_message(server):
    server.script(Reply(content='{"route": "ans'), Reply(content="好的，路由是 answer"))
    model = model_for(server.url)
    out = model.with_structured_output(Decision, include_raw=True).invoke("q")
    assert out["parsed"] is None and out["parsing_error"] is not None
    assert out["raw"].content == '{"route": "ans'  # the caller can retry or fall back
    with pytest.raises(ValueError):
        model.with_structured_output(Decision).invoke("q")


def test_json_in_code_fences_or_prose_is_parsed(server):
    server.script(
        Reply(content='```json\n{"route": "answer", "confidence": 0.7}\n```'),
        Reply(content='好的：{"route": "refuse", "confidence": 0.9} 以上。'),
    )
    runnable = model_for(server.url).with_structured_output(Decision)
    assert runnable.invoke("q") == Decision(route="answer", confidence=0.7)
    assert runnable.invoke("q") == Decision(route="refuse", confidence=0.9)


def test_json_schema_rejected_then_json_object_with_the_schema_in_the_prompt():
    with FakeOpenAIServer(reject_json_schema=True) as srv:
        srv.script(Reply(content='{"route": "refuse", "confidence": 0.88}'),
                   Reply(content='{"route": "answer", "confidence": 0.6}'))
        model = model_for(srv.url)
        runnable = model.with_structured_output(Decision, include_raw=True)
        messages = [("system", "你是路由器。"), ("user", "我头疼吃什么药")]
        assert runnable.invoke(messages)["parsed"] == Decision(route="refuse", confidence=0.88)
        assert runnable.invoke(messages)["parsed"] == Decision(route="answer", confidence=0.6)
        kinds = [r["response_format"]["type"] for r in srv.requests]
        assert kinds == ["json_schema", "json_object", "json_object"]  # remembered
        system = srv.requests[1]["messages"][0]
        assert system["role"] == "system" and system["content"].startswith("你是路由器。")
        assert '"route"' in system["content"] and "JSON Schema" in system["content"]
        assert [m["role"] for m in srv.requests[1]["messages"]] == ["system", "user"]
        assert srv.errors == []


def test_logprobs_rejected_then_retried_without():
    with FakeOpenAIServer(reject_logprobs=True) as srv:
        srv.script(Reply(content="好的"))
        model = model_for(srv.url)
        assert model.invoke("hi").content == "好的"
        assert [r.get("logprobs") for r in srv.requests] == [True, None]
        srv.script(Reply(content="再次"))
        assert model.invoke("hi").content == "再次"  # remembered: no second rejection
        assert len(srv.requests) == 3
        assert srv.errors == []


def test_server_error_is_retried_a_bounded_number_of_times(server):
    server.script(Fail(500), Fail(503), Reply(content="第三次成功"))
    assert model_for(server.url, llm_max_retries=2).invoke("x").content == "第三次成功"
    server.script(Fail(500), Fail(500))
    with pytest.raises(openai.APIError):
        model_for(server.url, llm_max_retries=1).invoke("x")
    assert len(server.requests) == 5


def test_slow_endpoint_times_out(server):
    # the reply would come after 20 s; a 0.3 s timeout must end the wait long before that
    # (the margin is wide so that a loaded machine cannot make the check fail)
    server.script(Slow(20.0, Reply(content="太晚了")))
    model = model_for(server.url, llm_timeout=0.3)
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        model.invoke("x")
    assert time.monotonic() - started < 10.0


def test_broken_http_body_raises(server):
    server.script(RawBody('{"choices": [ broken'))
    with pytest.raises(json.JSONDecodeError):
        model_for(server.url).invoke("x")


def test_dead_endpoint_raises_connection_error():
    with pytest.raises(openai.APIConnectionError):
        model_for(dead_url()).invoke("x")


def test_unscripted_request_fails_loudly():
    with FakeOpenAIServer() as srv:
        with pytest.raises(openai.APIError):
            model_for(srv.url).invoke("x")
        assert srv.errors and "script exhausted" in srv.errors[0]


def test_models_endpoint_lists_the_fake_model(server):
    client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
    assert [m.id for m in client.models.list()] == ["fake-model"]


def test_streamed_tool_calls_are_reassembled(server):
    server.script(Reply(content=None, tool_calls=[
        {"name": "logistics_tracking", "args": {"order_id": "SO2026112500103"}}]))
    model = model_for(server.url).bind_tools([{
        "type": "function",
        "function": {"name": "logistics_tracking", "description": "查物流",
                     "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}},
    }])
    chunks = list(model.stream("快递到哪了"))
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert total.tool_calls == [{"name": "logistics_tracking", "args": {"order_id": "SO2026112500103"},
                                 "id": "call_1_0", "type": "tool_call"}]
    assert server.requests[0]["stream"] is True


LLAMA_CPP_REJECTION = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}")


def test_llama_cpp_500_json_schema_rejection_falls_back_to_json_object_with_schema():
    # llama-cpp-python's server answers a json_schema response_format with HTTP 500 (its request
    # validation error), seen against a real llama_cpp.server 0.3.36.
    def responder(request):
        if request.get("response_format", {}).get("type") == "json_schema":
            return Fail(500, LLAMA_CPP_REJECTION)
        return Reply(content='{"route": "refuse", "confidence": 0.8}')

    with FakeOpenAIServer(responder) as srv:
        model = model_for(srv.url)
        runnable = model.with_structured_output(Decision, include_raw=True)
        assert runnable.invoke("我头疼吃什么药")["parsed"] == Decision(route="refuse", confidence=0.8)
        assert runnable.invoke("再问一次")["parsed"] == Decision(route="refuse", confidence=0.8)
        formats = [r["response_format"] for r in srv.requests]
        assert [f["type"] for f in formats] == ["json_schema", "json_object", "json_object"]
        # the schema rides along so llama.cpp constrains the output with a grammar
        assert formats[1]["schema"]["properties"]["route"]["enum"] == ["answer", "refuse"]
        assert srv.errors == []


def test_plain_500_is_not_taken_for_a_json_schema_rejection(server):
    server.script(Fail(500, "boom: json_schema handler crashed"))
    runnable = model_for(server.url).with_structured_output(Decision, include_raw=True)
    with pytest.raises(openai.InternalServerError):
        runnable.invoke("q")
    assert [r["response_format"]["type"] for r in server.requests] == ["json_schema"]
