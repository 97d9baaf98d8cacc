"""Per-run settings: call > environment (CSAGENT_*) > default, whichever entry point runs the graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from contracts.context import ENV_VARS, Context, env_default, make_context
from contracts.errors import UsageError
from graph.builder import build_graph
from graph.deps import Deps
from shop.tools import ShopToolbox
from tests.fakes import fixture_index

QUESTION = "七天无理由退货运费谁出"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var, _ in ENV_VARS.values():
        if var:
            monkeypatch.delenv(var, raising=False)


def test_defaults_without_environment():
    ctx = Context()
    assert (ctx.user_id, ctx.domain_profile, ctx.retrieval_mode, ctx.top_k, ctx.recall_k, ctx.rerank,
            ctx.max_reflections, ctx.llm_verify) == ("anonymous", "shop", "hybrid", 5, 30, None, 2, True)


def test_environment_over_default_and_call_over_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CSAGENT_TOP_K", "3")
    monkeypatch.setenv("CSAGENT_MAX_REFLECTIONS", "0")
    monkeypatch.setenv("CSAGENT_DOMAIN_PROFILE", "kb-only")
    monkeypatch.setenv("CSAGENT_RERANK", "false")
    monkeypatch.setenv("CSAGENT_LLM_VERIFY", "no")
    monkeypatch.setenv("CSAGENT_RETRIEVAL_MODE", "bm25")
    ctx = Context()
    assert (ctx.top_k, ctx.max_reflections, ctx.domain_profile, ctx.rerank, ctx.llm_verify,
            ctx.retrieval_mode) == (3, 0, "kb-only", False, False, "bm25")
    assert Context(top_k=7).top_k == 7
    assert make_context(top_k=None, recall_k=12).top_k == 3  # None = not given
    assert make_context(recall_k=12).recall_k == 12


def test_user_id_never_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CSAGENT_USER_ID", "u1001")
    assert Context().user_id == "anonymous"


@pytest.mark.parametrize(("var", "value"), [("CSAGENT_TOP_K", "many"), ("CSAGENT_TOP_K", "0"),
                                            ("CSAGENT_RERANK", "maybe"),
                                            ("CSAGENT_RETRIEVAL_MODE", "magic"), ("CSAGENT_TODAY", "2026-13-01")])
def test_bad_environment_values_are_usage_errors(monkeypatch: pytest.MonkeyPatch, var: str, value: str):
    monkeypatch.setenv(var, value)
    with pytest.raises(UsageError, match=var):
        Context()


def test_unknown_call_setting_is_a_usage_error():
    with pytest.raises(UsageError, match="top_kk"):
        make_context(top_kk=3)


def test_env_default_reads_a_given_mapping():
    assert env_default("top_k", {"CSAGENT_TOP_K": "9"}) == 9
    assert env_default("top_k", {}) == 5


@pytest.fixture(scope="module")
def index():
    return fixture_index()


def _chunks_kept(index: Any, shop: ShopToolbox, context: Any) -> int:
    """Run one turn the way a LangGraph server does (context given or not) and count chunks kept."""
    graph = build_graph(Deps(retriever=index, shop=shop)).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    kwargs = {} if context is None else {"context": context}
    kept = 0
    for update in graph.stream({"messages": [HumanMessage(QUESTION)]}, config, stream_mode="updates",
                               **kwargs):
        if "rerank_evidence" in update:
            kept = sum(1 for e in update["rerank_evidence"]["evidence"][1:] if e["kind"] == "chunk")
    return kept


def test_graph_runs_read_the_environment_unless_the_call_says_otherwise(
        index: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    shop = ShopToolbox(tmp_path / "shop.sqlite")
    assert _chunks_kept(index, shop, None) > 1  # default top_k=5
    monkeypatch.setenv("CSAGENT_TOP_K", "1")
    assert _chunks_kept(index, shop, None) == 1  # no context (langgraph dev without one): env
    assert _chunks_kept(index, shop, {"user_id": "u1001"}) == 1  # a partial context: env for the rest
    assert _chunks_kept(index, shop, {"top_k": 2}) == 2  # the call wins
    assert _chunks_kept(index, shop, Context(top_k=2)) == 2
