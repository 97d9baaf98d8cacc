"""Tracing through the real Langfuse SDK, captured with an in-memory OpenTelemetry exporter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph.graph import END, START, StateGraph
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typing_extensions import TypedDict

from csagent import tracing


class _S(TypedDict, total=False):
    question: str
    route: str
    answer: str


def _graph():
    def route_boundary(state: _S) -> _S:
        return {"route": "answer"}

    def generate_answer(state: _S) -> _S:
        return {"answer": f"张伟您好，您的手机13812345678已登记。问题：{state['question']}"}

    builder = StateGraph(_S)
    builder.add_node("route_boundary", route_boundary)
    builder.add_node("generate_answer", generate_answer)
    builder.add_edge(START, "route_boundary")
    builder.add_edge("route_boundary", "generate_answer")
    builder.add_edge("generate_answer", END)
    return builder.compile()


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch):
    from langfuse._client.resource_manager import LangfuseResourceManager

    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-test")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-test")
    monkeypatch.setenv("LANGFUSE_HOST", "http://127.0.0.1:9")
    monkeypatch.setenv("LANGFUSE_TRACING_ENABLED", "true")
    LangfuseResourceManager.reset()
    tracing.set_known_names(["张伟"])
    spans = InMemorySpanExporter()
    tracing.init_langfuse(span_exporter=spans, tracer_provider=TracerProvider())
    yield spans
    LangfuseResourceManager.reset()
    tracing.set_known_names(None)


def test_turn_is_one_langfuse_trace_with_session_user_and_masking(exporter, tmp_path: Path) -> None:
    trace_id = tracing.new_trace_id()
    callbacks = tracing.callbacks_for_turn(user_id="u1001", thread_id="thread-7", trace_id=trace_id)
    assert len(callbacks) == 1
    updates = []
    for chunk in _graph().stream({"question": "我家在杭州市西湖区文三路100号"},
                                 config={"callbacks": callbacks}, stream_mode="updates"):
        for node, update in chunk.items():
            updates.append((node, update, 1.0))
    record = tracing.build_trace_record(trace_id=trace_id, thread_id="thread-7", user_id="u1001",
                                        question="我家在杭州市西湖区文三路100号", updates=updates,
                                        final_state={"status": "answered"})
    tracing.write_trace(tmp_path, record)
    tracing.flush()

    spans = exporter.get_finished_spans()
    names = {span.name for span in spans}
    assert {"route_boundary", "generate_answer", "csagent.turn"} <= names
    for span in spans:
        assert format(span.context.trace_id, "032x") == trace_id
        assert span.attributes["session.id"] == "thread-7"
        assert span.attributes["user.id"] == "u1001"
        dumped = json.dumps(dict(span.attributes), ensure_ascii=False)
        for secret in ("13812345678", "张伟", "文三路"):
            assert secret not in dumped
    summary = next(span for span in spans if span.name == "csagent.turn")
    steps = json.loads(summary.attributes["langfuse.observation.metadata.steps"])
    assert [s["node"] for s in steps] == ["route_boundary", "generate_answer"]
    assert json.loads(summary.attributes["langfuse.observation.metadata.boundary"]) == {"route": "answer"}
