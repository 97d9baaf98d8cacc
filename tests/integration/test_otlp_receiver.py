"""Langfuse tracing across processes: a subprocess runs a traced turn against an OTLP receiver.

The receiver is a stdlib HTTP server on loopback that accepts OTLP/HTTP protobuf trace exports
(the protocol Langfuse's SDK speaks) and decodes them with ``opentelemetry-proto``.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

pytestmark = pytest.mark.integration


class _Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, dict[str, str], ExportTraceServiceRequest]] = []


class _Handler(BaseHTTPRequestHandler):
    server: _Receiver

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, request))
        payload = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    server = _Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


_TURN = textwrap.dedent(
    """
    import sys
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict
    from csagent import tracing

    class S(TypedDict, total=False):
        question: str
        answer: str
        status: str

    def generate_answer(state):
        return {"answer": "李娜您好，已发短信到13912345678", "status": "answered"}

    builder = StateGraph(S)
    builder.add_node("generate_answer", generate_answer)
    builder.add_edge(START, "generate_answer")
    builder.add_edge("generate_answer", END)
    graph = builder.compile()
    tracing.set_known_names(["李娜"])
    trace_id = tracing.new_trace_id()
    callbacks = tracing.callbacks_for_turn(user_id="u1002", thread_id="th-9", trace_id=trace_id)
    updates = []
    for chunk in graph.stream({"question": "查快递"}, config={"callbacks": callbacks},
                              stream_mode="updates"):
        updates += [(node, update, 1.0) for node, update in chunk.items()]
    record = tracing.build_trace_record(trace_id=trace_id, thread_id="th-9", user_id="u1002",
                                        question="查快递", updates=updates, final_state={})
    tracing.write_trace(sys.argv[1], record)
    tracing.flush()
    print(trace_id)
    """
)


def _attrs(span) -> dict[str, object]:
    out: dict[str, object] = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = getattr(value, value.WhichOneof("value")) if value.WhichOneof("value") else None
    return out


def test_subprocess_turn_exports_spans_to_loopback_receiver(receiver: _Receiver, tmp_path: Path) -> None:
    env = dict(os.environ)
    env.update({
        "LANGFUSE_PUBLIC_KEY": "pk-lf-local",
        "LANGFUSE_SECRET_KEY": "sk-lf-local",
        "LANGFUSE_HOST": f"http://127.0.0.1:{receiver.server_port}",
        "LANGFUSE_TRACING_ENABLED": "true",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "LANGSMITH_TRACING": "false",
    })
    env.pop("LANGFUSE_BASE_URL", None)
    proc = subprocess.run([sys.executable, "-c", _TURN, str(tmp_path)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    trace_id = proc.stdout.strip().splitlines()[-1]

    assert receiver.requests, "no OTLP export reached the receiver"
    spans = []
    for path, headers, request in receiver.requests:
        assert path.endswith("/v1/traces")
        assert headers.get("authorization", "").startswith("Basic ")
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                spans.extend(scope_spans.spans)
    names = {span.name for span in spans}
    assert {"generate_answer", "csagent.turn"} <= names
    for span in spans:
        assert span.trace_id.hex() == trace_id
        attrs = _attrs(span)
        assert attrs.get("session.id") == "th-9" and attrs.get("user.id") == "u1002"
        dumped = json.dumps(attrs, ensure_ascii=False)
        assert "13912345678" not in dumped and "李娜" not in dumped
    local = json.loads((tmp_path / f"{trace_id}.jsonl").read_text(encoding="utf-8"))
    assert local["trace_id"] == trace_id and "13912345678" not in json.dumps(local, ensure_ascii=False)


_KB_DOC = """---
id: returns
title: 七天无理由退货政策
version: v1
effective_date: 2026-01-01
status: current
category: 售后
tags: 退货, 七天无理由
---
# 七天无理由退货政策

## 运费
7天无理由退货属于买家原因退货，寄回商品的运费由买家承担。
"""


def test_csagent_ask_subprocess_is_one_langfuse_trace(receiver: _Receiver, tmp_path: Path) -> None:
    from knowledge.ingest import ingest_paths

    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "returns.md").write_text(_KB_DOC, encoding="utf-8")
    ingest_paths([tmp_path / "kb"], tmp_path / "data" / "index", progress=False)
    env = dict(os.environ)
    env.update({
        "CSAGENT_DATA_DIR": str(tmp_path / "data"),
        "LANGFUSE_PUBLIC_KEY": "pk-lf-local",
        "LANGFUSE_SECRET_KEY": "sk-lf-local",
        "LANGFUSE_HOST": f"http://127.0.0.1:{receiver.server_port}",
        "LANGFUSE_TRACING_ENABLED": "true",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "LANGSMITH_TRACING": "false",
    })
    env.pop("LANGFUSE_BASE_URL", None)
    proc = subprocess.run(
        [sys.executable, "-m", "csagent.cli", "ask", "我是张伟，手机13812345678，七天无理由退货的运费谁承担？",
         "--user-id", "u1001", "--thread", "otlp-thread", "--json"],
        env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    trace_id = result["trace_id"]
    spans = [span for _, _, request in receiver.requests for rs in request.resource_spans
             for ss in rs.scope_spans for span in ss.spans]
    names = {span.name for span in spans}
    assert {"route_boundary", "retrieve_hybrid", "generate_answer", "verify_answer",
            "csagent.turn"} <= names, names
    for span in spans:
        assert span.trace_id.hex() == trace_id
        attrs = _attrs(span)
        assert attrs.get("session.id") == "otlp-thread" and attrs.get("user.id") == "u1001"
        dumped = json.dumps(attrs, ensure_ascii=False)
        assert "13812345678" not in dumped and "张伟" not in dumped
    summary = next(span for span in spans if span.name == "csagent.turn")
    retrieval = json.loads(str(_attrs(summary)["langfuse.observation.metadata.retrieval"]))
    assert retrieval and all(row["id"].startswith("returns#") for row in retrieval)
    local = tmp_path / "data" / "traces" / f"{trace_id}.jsonl"
    assert json.loads(local.read_text(encoding="utf-8"))["status"] == result["status"]
