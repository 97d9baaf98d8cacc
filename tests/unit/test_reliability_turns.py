"""Issue 9 item 11: every turn leaves a trace; 「确认」 via ask(); no foreign-order oracle on stderr."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from csagent.api import CSAgent
from csagent.config import Settings
from tests.reliability_support import build_index, cli_env, run_cli

ORDER = "SO2026112000102"
REFUND = f"订单 {ORDER} 的耳机我不想要了，帮我申请退货退款"
FOREIGN = "SO2026111100202"  # u1002's order
MISSING = "SO2026111199999"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_index(tmp_path_factory.mktemp("relturns"))


@pytest.fixture
def agent(index: Path, tmp_path: Path) -> Iterator[CSAgent]:
    settings = Settings(data_dir=tmp_path, index_dir=index, shop_db=tmp_path / "shop.sqlite")
    with CSAgent(settings, checkpointer=InMemorySaver()) as agent:
        yield agent


def traces(agent: CSAgent) -> set[str]:
    return {p.stem for p in agent.settings.traces_dir.glob("*.jsonl")}


def tickets(agent: CSAgent) -> int:
    with sqlite3.connect(agent.settings.resolved_shop_db) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM after_sales_tickets").fetchone()[0])


@pytest.mark.parametrize("text", ["退货运费\ud800谁出", "\udcff\udcfe退款多久到账", "a\x00b\x1b[31m退货"])
def test_every_turn_leaves_a_trace_even_with_broken_text(agent: CSAgent, text: str) -> None:
    result = agent.ask(text, user_id="u1001", thread_id="broken-text")
    assert result.trace_id in traces(agent)
    record = (agent.settings.traces_dir / f"{result.trace_id}.jsonl").read_bytes()
    record.decode("utf-8")  # valid UTF-8 on disk


def test_chat_with_non_utf8_input_answers_and_traces(index: Path, tmp_path: Path) -> None:
    env = cli_env(tmp_path, index)
    proc = run_cli("chat", env=env, stdin="退货运费谁出\n".encode() + b"\xff\xfe\xfa\n/quit\n")
    err = proc.stderr.decode("utf-8", errors="replace")
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert len(list((tmp_path / "traces").glob("*.jsonl"))) == 2


def test_confirm_sent_through_ask_does_not_get_a_policy_quote(agent: CSAgent) -> None:
    before = tickets(agent)
    assert agent.ask(REFUND, user_id="u1001", thread_id="ask-confirm").status == "needs_confirmation"
    result = agent.ask("确认", user_id="u1001", thread_id="ask-confirm")
    kb_cited = [c.get("id") for c in result.citations if not str(c.get("id", "")).startswith("tool:")]
    assert not kb_cited, result.answer
    assert "没有需要您确认" not in result.answer  # there WAS a pending action
    assert tickets(agent) == before + 1 and result.status == "answered"


def test_bare_confirm_with_nothing_pending_is_not_answered_from_the_kb(agent: CSAgent) -> None:
    for word in ("确认", "好的", "嗯"):
        result = agent.ask(word, user_id="u1001", thread_id=f"bare-{word}")
        kb_cited = [c for c in result.citations if not str(c.get("id", "")).startswith("tool:")]
        assert not kb_cited and "【来源" not in result.answer, result.answer


def _normalise(text: str) -> str:
    return re.sub(r"(thread|trace): \S+", r"\1: X", text)


def test_ask_gives_no_oracle_for_foreign_order_ids(index: Path, tmp_path: Path) -> None:
    outs = []
    for order in (FOREIGN, MISSING):
        env = cli_env(tmp_path / order, index)
        proc = run_cli("-vv", "ask", f"订单{order}到哪了", env=env)
        assert proc.returncode == 0
        out = proc.stdout.decode().replace(order, "ORDER")
        err = "\n".join(line for line in proc.stderr.decode().splitlines()
                        if "shop" in line or "tool" in line or "order" in line.lower())
        outs.append((_normalise(out), re.sub(r"\d+(\.\d+)? ?ms", "", err.replace(order, "ORDER"))))
    assert outs[0][0] == outs[1][0]
    assert "another user" not in outs[0][1] and "belongs" not in outs[0][1]
