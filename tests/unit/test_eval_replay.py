"""Batch replay: real offline agent on a tiny KB; bad lines, atomic appends, resume after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from csagent.api import CSAgent
from csagent.cli import main
from csagent.config import Settings
from csagent.errors import UsageError
from eval.replay import parse_conversation, prepare_output, replay_file
from tests.fakes import RETURNS

QUESTIONS = ["七天无理由退货的运费谁承担？", "我吃了头孢能喝酒吗", "帮我查一下最近的订单", "退货期限怎么算？"]


def conv(cid: str, *messages: str, user: str = "u1001") -> str:
    turns = []
    for message in messages:
        turns += [{"role": "user", "content": message}, {"role": "assistant", "content": f"人工:{message}"}]
    return json.dumps({"conversation_id": cid, "user_id": user, "turns": turns}, ensure_ascii=False)


def write_logs(path: Path, n: int) -> list[str]:
    ids = [f"c{i:04d}" for i in range(n)]
    path.write_text("\n".join(conv(cid, QUESTIONS[i % len(QUESTIONS)]) for i, cid in enumerate(ids)) + "\n",
                    encoding="utf-8")
    return ids


def read_out(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    from knowledge.ingest import ingest_paths

    root = tmp_path_factory.mktemp("replay")
    (root / "kb").mkdir()
    (root / "kb" / "returns.md").write_text(RETURNS, encoding="utf-8")
    ingest_paths([root / "kb"], root / "data" / "index", progress=False)
    return Settings(data_dir=root / "data", shop_db=root / "shop.sqlite")


@pytest.fixture(scope="module")
def agent(settings: Settings):
    with CSAgent(settings, checkpointer=InMemorySaver()) as agent:
        yield agent


def test_parse_conversation_errors() -> None:
    assert parse_conversation(3, conv("a", "你好")).user_id == "u1001"
    for raw, message in [
        ("{oops", "invalid JSON"),
        ("[1]", "expected a JSON object"),
        ('{"turns": [{"role": "user", "content": "x"}]}', "conversation_id"),
        ('{"conversation_id": "a", "turns": []}', "non-empty list"),
        ('{"conversation_id": "a", "turns": [{"role": "bot", "content": "x"}]}', "turns[0]"),
        ('{"conversation_id": "a", "turns": [{"role": "assistant", "content": "x"}]}', "no non-empty user"),
        ('{"conversation_id": "a", "user_id": 5, "turns": [{"role": "user", "content": "x"}]}', "user_id"),
    ]:
        with pytest.raises(ValueError, match=message.replace("[", r"\[")):
            parse_conversation(1, raw)


def test_replay_answers_every_user_turn_and_skips_bad_lines(agent: CSAgent, settings: Settings,
                                                            tmp_path: Path) -> None:
    logs = tmp_path / "logs.jsonl"
    lines = [conv("a", QUESTIONS[0], QUESTIONS[3]), "{not json", conv("b", QUESTIONS[1], user="u1002"),
             "", conv("a", QUESTIONS[0]), '{"conversation_id": "z", "turns": 3}',
             conv("c", "帮我取消订单SO2026112000102", "确认")]
    logs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    summary = replay_file(agent, logs, out, concurrency=2)
    records = {r["conversation_id"]: r for r in read_out(out)}
    assert set(records) == {"a", "b", "c"}
    assert [b.split(":")[0] for b in summary.bad_lines] == ["line 2", "line 5", "line 6"]
    assert "duplicate conversation_id 'a'" in summary.bad_lines[1]
    a = records["a"]
    assert a["line"] == 1 and a["user_id"] == "u1001" and len(a["turns"]) == 2
    assert a["turns"][0]["baseline"] == f"人工:{QUESTIONS[0]}"
    first = a["turns"][0]
    assert first["status"] == "answered" and first["citations"] and first["trace_id"]
    assert first["verification"]["overall"] == "pass"
    assert (settings.traces_dir / f"{first['trace_id']}.jsonl").is_file()
    assert records["b"]["turns"][0]["status"] == "refused"
    confirm_turns = records["c"]["turns"]
    assert confirm_turns[0]["status"] == "needs_confirmation"
    assert confirm_turns[1]["status"] != "needs_confirmation"  # 「确认」 resumed the confirmation
    assert "tool:order_cancel" in " ".join(confirm_turns[1]["citations"])
    data = summary.to_json()
    assert data["conversations"] == 3 and data["turns"] == 5
    assert sum(data["status_mix"].values()) == 5 and data["turns_per_second"] > 0
    assert "replayed 3 conversations, 5 turns" in summary.render()


def test_existing_output_needs_resume(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"conversation_id": "a", "turns": []}\n', encoding="utf-8")
    with pytest.raises(UsageError, match="--resume"):
        prepare_output(out, resume=False)
    assert prepare_output(out, resume=True) == ({"a"}, False)


def test_resume_drops_partial_line_and_skips_done(agent: CSAgent, tmp_path: Path) -> None:
    logs = tmp_path / "logs.jsonl"
    ids = write_logs(logs, 6)
    out = tmp_path / "out.jsonl"
    done = {"conversation_id": ids[2], "user_id": "u1001", "line": 3, "turns": [], "latency_ms": 0}
    out.write_bytes((json.dumps(done) + "\n").encode() + b'{"conversation_id": "c0004", "tu')
    summary = replay_file(agent, logs, out, resume=True)
    records = read_out(out)
    assert sorted(r["conversation_id"] for r in records) == ids
    assert summary.skipped_done == 1 and summary.dropped_partial_line
    assert records[0] == done  # earlier results are kept untouched


def test_killed_run_resumes_without_loss_or_duplicates(settings: Settings, tmp_path: Path) -> None:
    logs = tmp_path / "logs.jsonl"
    ids = write_logs(logs, 30)
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "CSAGENT_DATA_DIR": str(settings.data_dir),
           "CSAGENT_INDEX_DIR": str(settings.resolved_index_dir), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "LANGSMITH_TRACING": "false"}
    cmd = [sys.executable, "-m", "csagent.cli", "replay", str(logs), "--out", str(out), "--no-progress"]
    proc = subprocess.Popen([*cmd, "--concurrency", "2"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= 3:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    partial = read_out(out)
    assert 3 <= len(partial) < len(ids)
    with out.open("ab") as handle:  # simulate a torn write on top of the kill
        handle.write(b'{"conversation_id": "c9999", "turns": [')
    done = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    final = read_out(out)
    got = [r["conversation_id"] for r in final]
    assert sorted(got) == ids and len(got) == len(set(got))
    assert final[: len(partial)] == partial
    assert f"skipped {len(partial)} conversations already in the output" in done.stdout
    assert "dropped a partially written last line" in done.stdout


def test_replay_command_errors(tmp_path: Path, capsys) -> None:
    assert main(["replay", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o.jsonl")]) == 2
    logs = tmp_path / "logs.jsonl"
    write_logs(logs, 1)
    out = tmp_path / "o.jsonl"
    out.write_text('{"conversation_id": "c0000"}\n', encoding="utf-8")
    assert main(["replay", str(logs), "--out", str(out)]) == 2
    assert main(["replay", str(logs), "--out", str(tmp_path / "x.jsonl"), "--concurrency", "0"]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "--resume" in err and "at least 1" in err
    assert "Traceback" not in err


def test_synthetic_log_is_valid_and_deterministic(tmp_path: Path) -> None:
    from eval.latency_bench import write_synthetic_log

    a = write_synthetic_log(tmp_path / "a.jsonl", 50, seed=3).read_text(encoding="utf-8")
    b = write_synthetic_log(tmp_path / "b.jsonl", 50, seed=3).read_text(encoding="utf-8")
    assert a == b
    convs = [parse_conversation(i, line) for i, line in enumerate(a.splitlines(), 1)]
    assert len({c.conversation_id for c in convs}) == 50
    assert all(sum(t["role"] == "user" for t in c.turns) == 1 for c in convs)
