"""The ``csagent ask``, ``chat`` and ``demo`` commands, run in-process on a tmp index and shop."""

from __future__ import annotations

import io
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from csagent.cli import main
from csagent.config import Settings
from tests.unit.test_api_agent import POLICY_Q, REFUND_ORDER, REFUND_Q, mini_kb_settings


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return mini_kb_settings(tmp_path_factory.mktemp("cli"))


@pytest.fixture
def env(kb: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the CLI at a fresh data dir (checkpoints, shop db, traces) and the shared index."""
    for name in ("CSAGENT_LLM_BASE_URL", "CSAGENT_LLM_MODEL", "CSAGENT_SHOP_DB"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CSAGENT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CSAGENT_INDEX_DIR", str(kb.resolved_index_dir))
    return tmp_path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ask_prints_a_cited_answer(env: Path, capsys):
    code, out, _ = run_cli(capsys, "ask", POLICY_Q)
    assert code == 0
    assert "【来源:returns-7day#" in out
    assert "sources:" in out and "status: answered" in out


def test_ask_json_is_the_turn_result(env: Path, capsys):
    code, out, _ = run_cli(capsys, "ask", POLICY_Q, "--json", "--thread", "cli-json")
    assert code == 0
    data = json.loads(out)
    assert data["status"] == "answered" and data["thread_id"] == "cli-json"
    assert data["citations"] and data["trace_id"]


def test_ask_confirmation_then_resume_across_invocations(env: Path, capsys):
    code, out, _ = run_cli(capsys, "ask", REFUND_Q, "--thread", "cli-refund")
    assert code == 0
    assert "status: needs_confirmation" in out
    assert "csagent ask --thread cli-refund --resume yes" in out
    code, out, _ = run_cli(capsys, "ask", "--thread", "cli-refund", "--resume", "yes", "--json")
    assert code == 0 and json.loads(out)["status"] == "answered"
    with sqlite3.connect(env / "shop.sqlite") as conn:
        rows = conn.execute("SELECT user_id FROM after_sales_tickets WHERE order_id = ?",
                            (REFUND_ORDER,)).fetchall()
    assert rows == [("u1001",)]


def test_ask_handoff_prints_the_payload_and_how_to_reply(env: Path, capsys):
    code, out, _ = run_cli(capsys, "ask", "我要投诉，马上转人工", "--thread", "cli-human",
                           "--user-id", "u1002")
    assert code == 0
    assert "status: handoff" in out and "handoff for a human agent:" in out
    assert "--as-agent AGENT_ID" in out
    code, out, err = run_cli(capsys, "ask", "--thread", "cli-human", "--user-id", "u1002",
                             "--resume", "我是人工客服，已为您退款")  # the customer cannot
    assert code == 2 and "human agent" in err and out == ""
    code, out, _ = run_cli(capsys, "ask", "--thread", "cli-human", "--as-agent", "agent-7",
                           "您好，我是人工客服，马上为您处理。", "--json")
    data = json.loads(out)
    assert code == 0 and "马上为您处理" in data["answer"] and data["answered_by"] == "human"


@pytest.mark.parametrize(("argv", "message"), [
    (["ask", "   "], "give a QUESTION"),
    (["ask", "--resume", "yes"], "--resume needs --thread"),
    (["ask", "退" * 4001], "too long"),
    (["ask", "--thread", "nothing-waiting", "--resume", "yes"], "does not exist"),
    (["ask", "--as-agent", "a1", "hello"], "--as-agent needs --thread"),
    (["ask", "--thread", "nothing-waiting", "--as-agent", "a1", "hello"], "does not exist"),
])
def test_ask_bad_input_is_a_clear_error(env: Path, capsys, argv: list[str], message: str):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert message in err and "Traceback" not in err and out == ""


def test_ask_without_an_index_says_how_to_build_one(env: Path, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("CSAGENT_INDEX_DIR", str(tmp_path / "missing"))
    code, _, err = run_cli(capsys, "ask", POLICY_Q)
    assert code == 3 and "ingest" in err and "Traceback" not in err


def test_chat_reads_piped_lines_and_confirms_inline(env: Path, capsys, monkeypatch):
    lines = ["", POLICY_Q, "   ", REFUND_Q, "no", "/quit", "这一行不会被读到"]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(lines) + "\n"))
    code, out, _ = run_cli(capsys, "chat", "--thread", "cli-chat")
    assert code == 0
    assert out.count("status: ") == 3  # policy answer, confirmation prompt, the "no"
    assert "status: needs_confirmation" in out
    assert "【来源:returns-7day#" in out
    with sqlite3.connect(env / "shop.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM after_sales_tickets WHERE order_id = ?",
                            (REFUND_ORDER,)).fetchone() == (0,)


def test_chat_never_sends_the_customers_line_as_the_agents_reply(env: Path, capsys,
                                                                  monkeypatch):
    lines = ["我要投诉，转人工", POLICY_Q]  # then end of input
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(lines)))
    code, out, _ = run_cli(capsys, "chat", "--thread", "cli-handoff")
    assert code == 0
    assert "status: handoff" in out and "a human agent will reply" in out
    assert "【来源:returns-7day#" in out  # the next line is a new customer message
    lines = ["您好，我是人工客服小优，已为您登记。", "/quit"]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(lines)))
    code, out, _ = run_cli(capsys, "chat", "--thread", "cli-handoff", "--as-agent", "xiaoyou")
    assert code == 0 and "delivered (answered, answered_by=human)" in out


def test_chat_reports_bad_lines_and_continues(env: Path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("退" * 4001 + "\n" + POLICY_Q + "\n"))
    code, out, _ = run_cli(capsys, "chat")
    assert code == 0 and "too long" in out and "status: answered" in out


def test_demo_tour_runs_every_step(env: Path, capsys):
    code, out, _ = run_cli(capsys, "demo")
    assert code == 0
    assert out.count("── ") == 7
    assert "status: refused" in out and "status: needs_confirmation" in out
    assert "status: handoff" in out and "【来源:" in out
    assert "done: 7 turns" in out
    assert not (env / "shop.sqlite").exists()  # the tour used a throwaway copy of the shop
