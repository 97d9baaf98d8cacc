"""Issue 9 items 1, 2, 6 and 7 (kill recovery) through real threads and real processes.

Every agent here uses the default SQLite backend in a temporary data dir (checkpoints, thread
store, file locks), so two :class:`CSAgent` objects on one data dir behave like two worker
processes sharing a database: separate connections, the same files, the same locks.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from csagent.api import (
    CSAgent,
    ForeignThreadError,
    HandoffPendingError,
    NotHandedOffError,
    TurnResult,
    UnknownThreadError,
)
from csagent.config import REPO_ROOT, Settings
from csagent.locks import FileThreadLocks, ThreadBusyError
from csagent.runtime import build_deps
from shop.tools import ShopToolbox
from tests.unit.test_api_agent import REFUND_ORDER, REFUND_Q, mini_kb_settings, tickets

LIST_Q = "帮我看看我的订单都有哪些"
ORDER_ID = re.compile(r"SO\d{13}")
HANDOFF_Q = "你们服务太差了，我要投诉，马上给我转人工！"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return mini_kb_settings(tmp_path_factory.mktemp("conc"))


@pytest.fixture
def local(base: Settings, tmp_path: Path) -> Settings:
    return base.with_overrides(data_dir=tmp_path / "data", shop_db=tmp_path / "shop.sqlite")


def _agent(settings: Settings) -> CSAgent:
    deps = dataclasses.replace(build_deps(settings), shop=ShopToolbox(settings.resolved_shop_db))
    return CSAgent(settings, deps=deps)


def _owned_ids(db: Path, user_id: str) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {r[0] for r in conn.execute("SELECT id FROM orders WHERE user_id = ?", (user_id,))}


def _race(fns: list[Any]) -> list[Any]:
    """Run the callables at the same instant on real threads; return results or exceptions."""
    barrier = threading.Barrier(len(fns))
    out: list[Any] = [None] * len(fns)

    def run(i: int) -> None:
        barrier.wait()
        try:
            out[i] = fns[i]()
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return out


def test_two_users_racing_for_a_new_thread_never_see_each_others_data(local: Settings):
    ShopToolbox(local.resolved_shop_db)  # seed the shop before the race
    mine = {u: _owned_ids(local.resolved_shop_db, u) for u in ("u1001", "u1002")}
    a, b = _agent(local), _agent(local)  # two "workers" on the same files
    try:
        for i in range(12):
            thread = f"race-{i}"
            out = _race([lambda t=thread: a.ask(LIST_Q, user_id="u1001", thread_id=t),
                         lambda t=thread: b.ask(LIST_Q, user_id="u1002", thread_id=t)])
            wins = [r for r in out if isinstance(r, TurnResult)]
            losses = [r for r in out if isinstance(r, ForeignThreadError)]
            assert len(wins) == 1 and len(losses) == 1, out
            winner = "u1001" if out[0] is wins[0] else "u1002"
            other = "u1002" if winner == "u1001" else "u1001"
            shown = set(ORDER_ID.findall(wins[0].answer + json.dumps(wins[0].citations)))
            assert not shown & mine[other], (winner, wins[0].answer)
            assert a.owner_of(thread) == winner
            history = a.history(user_id=winner, thread_id=thread)
            assert [e["kind"] for e in history] == ["customer", "turn"]
            assert history[1]["payload"]["result"]["trace_id"] == wins[0].trace_id
    finally:
        a.close()
        b.close()


def test_a_thread_runs_one_turn_at_a_time(local: Settings):
    a, b = _agent(local), _agent(local)
    try:
        first = a.ask(LIST_Q, user_id="u1001", thread_id="serial")
        assert first.status == "answered"
        out = _race([lambda: a.ask(LIST_Q, user_id="u1001", thread_id="serial"),
                     lambda: b.ask(LIST_Q, user_id="u1001", thread_id="serial")])
        assert all(isinstance(r, TurnResult) and r.status == "answered" for r in out), out
        assert out[0].trace_id != out[1].trace_id
        state = a.graph.get_state({"configurable": {"thread_id": "serial"}})
        humans = [m for m in state.values["messages"] if m.type == "human"]
        answers = [m for m in state.values["messages"] if m.type == "ai"]
        assert len(humans) == 3 and len(answers) == 3  # no interleaved or lost turn
        # each result is its own run's: the history pairs every message with its answer
        kinds = [e["kind"] for e in a.history(user_id="u1001", thread_id="serial")]
        assert kinds == ["customer", "turn"] * 3
    finally:
        a.close()
        b.close()


def test_a_busy_thread_gives_a_clear_error_after_the_timeout(tmp_path: Path):
    locks = FileThreadLocks(tmp_path / "locks")
    with locks.hold("t1"):
        with pytest.raises(ThreadBusyError, match="busy"):
            with locks.hold("t1", timeout=0.2):
                pass
        with locks.hold("t2", timeout=0.2):  # other threads are not blocked
            pass
    with locks.hold("t1", timeout=0.2):  # released
        pass


def test_double_clicked_confirmation_writes_once_and_both_get_the_result(local: Settings):
    a, b = _agent(local), _agent(local)
    try:
        asked = a.ask(REFUND_Q, user_id="u1001", thread_id="dbl")
        assert asked.status == "needs_confirmation", asked
        out = _race([lambda: a.resume("确认", user_id="u1001", thread_id="dbl"),
                     lambda: b.resume("确认", user_id="u1001", thread_id="dbl")])
        assert all(isinstance(r, TurnResult) for r in out), out
        assert out[0].to_json() == out[1].to_json()  # the second gets the first one's result
        assert out[0].status == "answered" and out[0].answer.strip()
        assert "失败" not in out[0].answer
        assert tickets(local.resolved_shop_db, REFUND_ORDER) == [(REFUND_ORDER, "u1001")]
        again = a.resume("确认", user_id="u1001", thread_id="dbl")  # a late retry, too
        assert again.trace_id == out[0].trace_id
        assert len(tickets(local.resolved_shop_db, REFUND_ORDER)) == 1
    finally:
        a.close()
        b.close()


def test_only_an_agent_can_answer_a_handoff(local: Settings):
    with _agent(local) as agent:
        handed = agent.ask(HANDOFF_Q, user_id="u1001", thread_id="h1")
        assert handed.status == "handoff", handed
        queued = agent.store.active_handoff("h1")
        assert queued is not None and queued["status"] == "open"
        assert queued["payload"]["question"] and queued["payload"]["trace_id"] == handed.trace_id
        with pytest.raises(HandoffPendingError):
            agent.resume("我是客服，已为您退款1000元", user_id="u1001", thread_id="h1")
        assert all(e["payload"].get("result", {}).get("answered_by") != "human"
                   for e in agent.history(user_id="u1001", thread_id="h1"))
        with pytest.raises(NotHandedOffError):
            agent.ask("七天无理由退货的运费谁承担？", user_id="u1001", thread_id="other")
            agent.reply_as_agent("你好", agent_id="a1", thread_id="other")
        with pytest.raises(UnknownThreadError):
            agent.reply_as_agent("你好", agent_id="a1", thread_id="nope")
        reply = agent.reply_as_agent("您好，投诉已登记。", agent_id="a1", thread_id="h1")
        assert reply.status == "answered" and reply.answered_by == "human"
        last = agent.history(user_id="u1001", thread_id="h1")[-1]
        assert last["payload"]["agent_id"] == "a1"
        assert last["payload"]["result"]["answered_by"] == "human"


def test_an_agent_reply_reaches_a_thread_whose_customer_moved_on(local: Settings):
    with _agent(local) as agent:
        assert agent.ask(HANDOFF_Q, user_id="u1001", thread_id="h2").status == "handoff"
        moved = agent.ask("七天无理由退货的运费谁承担？", user_id="u1001", thread_id="h2")
        assert moved.status != "handoff" and agent.pending(user_id="u1001", thread_id="h2") is None
        reply = agent.reply_as_agent("您好，已为您登记。", agent_id="a2", thread_id="h2")
        assert reply.answered_by == "human"
        state = agent.graph.get_state({"configurable": {"thread_id": "h2"}})
        assert state.values["messages"][-1].content == "您好，已为您登记。"
        assert state.values["answered_by"] == "human"
        nxt = agent.ask("七天无理由退货的运费谁承担？", user_id="u1001", thread_id="h2")
        assert nxt.answered_by == "agent"  # the next customer turn is the agent's again


KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from langgraph.checkpoint.sqlite import SqliteSaver
    import sqlite3
    from csagent.api import CSAgent
    from csagent.config import Settings

    data_dir, index_dir, shop_db, kill_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    settings = Settings().with_overrides(data_dir=data_dir, index_dir=index_dir, shop_db=shop_db)

    class KillingSaver(SqliteSaver):
        armed = False
        seen = 0

        def put(self, config, checkpoint, metadata, new_versions):
            calls = (checkpoint.get("channel_values") or {}).get("tool_calls") or []
            if self.armed and any(c.get("write") for c in calls):
                self.seen += 1
                if self.seen == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
            return super().put(config, checkpoint, metadata, new_versions)

    conn = sqlite3.connect(os.path.join(data_dir, "checkpoints.sqlite"), check_same_thread=False)
    saver = KillingSaver(conn)
    with CSAgent(settings, checkpointer=saver) as agent:
        asked = agent.ask(sys.argv[5], user_id="u1001", thread_id="killed")
        assert asked.status == "needs_confirmation", asked
        saver.armed = True
        agent.resume("确认", user_id="u1001", thread_id="killed")
    print("NOT KILLED")
""")


@pytest.mark.parametrize("kill_at", [1, 2], ids=["before-the-write-checkpoint",
                                                 "after-the-write-checkpoint"])
@pytest.mark.parametrize("next_call", ["ask", "resume"])
def test_a_turn_killed_after_its_write_is_reported_on_the_next_message(
        local: Settings, kill_at: int, next_call: str):
    local.data_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-c", KILL_SCRIPT, str(local.data_dir), str(local.resolved_index_dir),
         str(local.resolved_shop_db), str(kill_at), REFUND_Q],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert proc.returncode == -9, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    db = local.resolved_shop_db
    assert tickets(db, REFUND_ORDER) == [(REFUND_ORDER, "u1001")]  # the write committed
    with sqlite3.connect(db) as conn:
        ticket_id = conn.execute("SELECT id FROM after_sales_tickets WHERE order_id = ?",
                                 (REFUND_ORDER,)).fetchone()[0]
    with _agent(local) as agent:
        if next_call == "ask":
            result = agent.ask("好的，谢谢", user_id="u1001", thread_id="killed")
            assert result.recovered is not None, result
            report = TurnResult.from_json(result.recovered)
        else:  # the customer's client retries the confirmation
            report = agent.resume("确认", user_id="u1001", thread_id="killed")
        assert report.status == "answered", report
        assert str(ticket_id) in report.answer, report.answer  # from the tool's own data
        assert "失败" not in report.answer
        assert tickets(db, REFUND_ORDER) == [(REFUND_ORDER, "u1001")]  # never written twice
        assert agent.pending(user_id="u1001", thread_id="killed") is None
        after = agent.ask("七天无理由退货的运费谁承担？", user_id="u1001", thread_id="killed")
        assert after.recovered is None and after.status == "answered"


EARLY_KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sqlite3, sys
    from langgraph.checkpoint.sqlite import SqliteSaver
    from csagent.api import CSAgent
    from csagent.config import Settings

    data_dir, index_dir, shop_db = sys.argv[1], sys.argv[2], sys.argv[3]
    settings = Settings().with_overrides(data_dir=data_dir, index_dir=index_dir, shop_db=shop_db)

    class KillingSaver(SqliteSaver):
        armed = False

        def put(self, config, checkpoint, metadata, new_versions):
            if self.armed:  # the run's first checkpoint: it never reaches the database
                os.kill(os.getpid(), signal.SIGKILL)
            return super().put(config, checkpoint, metadata, new_versions)

    conn = sqlite3.connect(os.path.join(data_dir, "checkpoints.sqlite"), check_same_thread=False)
    saver = KillingSaver(conn)
    with CSAgent(settings, checkpointer=saver) as agent:
        assert agent.ask(sys.argv[4], user_id="u1001", thread_id="early").status == "answered"
        saver.armed = True
        agent.ask(sys.argv[5], user_id="u1001", thread_id="early")
    print("NOT KILLED")
""")


@pytest.mark.parametrize("next_call", ["finish_interrupted", "ask"])
def test_a_message_whose_run_died_before_its_first_checkpoint_is_run_again(
        local: Settings, next_call: str):
    local.data_dir.mkdir(parents=True, exist_ok=True)
    lost = "七天无理由退货的运费谁承担？"
    since = time.time()
    proc = subprocess.run(
        [sys.executable, "-c", EARLY_KILL_SCRIPT, str(local.data_dir),
         str(local.resolved_index_dir), str(local.resolved_shop_db), LIST_Q, lost],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert proc.returncode == -9, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    with _agent(local) as agent:
        if next_call == "finish_interrupted":  # what the service asks another process
            report = agent.finish_interrupted(thread_id="early", since=since)
        else:  # the customer's next message reports the lost one
            result = agent.ask("好的，谢谢", user_id="u1001", thread_id="early")
            report = TurnResult.from_json(result.recovered) if result.recovered else None
        assert report is not None and report.status == "answered", report
        assert "运费" in report.answer
        events = agent.history(user_id="u1001", thread_id="early")
        kinds = [e["kind"] for e in events]
        assert kinds[:4] == ["customer", "turn", "customer", "turn"], kinds  # nothing twice
        humans = [m.content for m in agent.graph.get_state(
            {"configurable": {"thread_id": "early"}}).values["messages"] if m.type == "human"]
        assert humans.count(lost) == 1, humans
        assert agent.finish_interrupted(thread_id="early", since=time.time()) is None


def test_a_file_lock_excludes_other_processes_and_dies_with_its_holder(tmp_path: Path):
    import signal
    import time

    script = textwrap.dedent(f"""
        import sys, time
        from csagent.locks import FileThreadLocks
        with FileThreadLocks({str(tmp_path / "locks")!r}).hold("shared-thread"):
            print("held", flush=True)
            time.sleep(120)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             cwd=REPO_ROOT)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        locks = FileThreadLocks(tmp_path / "locks")
        with pytest.raises(ThreadBusyError):
            with locks.hold("shared-thread", timeout=0.3):
                pass
        child.send_signal(signal.SIGKILL)  # the holder dies without releasing anything
        child.wait(timeout=30)
        started = time.monotonic()
        with locks.hold("shared-thread", timeout=5):
            assert time.monotonic() - started < 1.0
    finally:
        child.kill()
        child.wait(timeout=30)
