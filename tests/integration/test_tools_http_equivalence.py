"""The HTTP order service answers the normal suite's tool questions exactly as the SQLite demo does.

A real ``python -m shop.http_service`` process on a free loopback port; the agent's graph runs
every ``needs_tool`` question of ``eval/datasets/normal.jsonl`` once with the HTTP backend
(``CSAGENT_TOOLS=shop.http_client:http_backend``, loaded through the same loader the app uses)
and once with the SQLite toolbox, each on a fresh copy of the demo data; status, answer and
citations must be identical.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from csagent.config import Settings
from graph.builder import build_graph
from graph.context import Context
from graph.deps import Deps
from shop.http_client import HttpOrderBackend
from shop.tools import ShopToolbox
from tests.fakes import fixture_index
from tools.loader import HTTP_SPEC, load_backend

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
NORMAL = REPO / "eval" / "datasets" / "normal.jsonl"


def tool_cases() -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in NORMAL.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r.get("needs_tool")]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("http-shop") / "shop.sqlite"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "shop.http_service", "--db", str(db), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("serving on http://127.0.0.1:"), (line, proc.stderr.read() if proc.poll() is not None else "")
        yield line.removeprefix("serving on ")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def run_suite(backend: Any) -> list[tuple[str, str, list[str]]]:
    graph = build_graph(Deps(retriever=fixture_index(), shop=backend)).compile(checkpointer=InMemorySaver())
    out = []
    for case in tool_cases():
        config = {"configurable": {"thread_id": case["id"]}}
        result = graph.invoke({"messages": [("user", case["question"])]}, config,
                              context=Context(user_id=case["user_id"]))
        out.append((str(result.get("status")), str(result.get("answer")),
                    [str(c.get("id")) for c in result.get("citations") or []]))
    return out


def test_http_backend_answers_the_tool_questions_like_sqlite(service: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    cases = tool_cases()
    assert len(cases) >= 30
    monkeypatch.setenv("CSAGENT_TOOLS", HTTP_SPEC)
    monkeypatch.setenv("CSAGENT_ORDER_SERVICE_URL", service)
    http = load_backend(Settings.from_env(data_dir=tmp_path))
    assert isinstance(http, HttpOrderBackend)
    over_http = run_suite(http)
    local = run_suite(ShopToolbox(tmp_path / "local.sqlite"))
    same = [c["id"] for c, a, b in zip(cases, over_http, local, strict=True) if a == b]
    differing = {c["id"]: (a, b) for c, a, b in zip(cases, over_http, local, strict=True) if a != b}
    assert not differing, f"{len(same)}/{len(cases)} identical; differing: {differing}"
    assert sum(1 for status, _, cites in local if status == "answered" and any(c.startswith("tool:") for c in cites)) >= 25
