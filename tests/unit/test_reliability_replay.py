"""Issue 9 items 8 and 11: replay and verify on hostile input; a killed replay leaves no scratch folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from csagent.errors import UsageError
from csagent.replay import (
    SCRATCH_PREFIX,
    AtomicAppender,
    ReplaySummary,
    make_scratch_dir,
    parse_conversation,
    read_conversations,
)
from tests.reliability_support import REPO_ROOT, build_index, cli_env, one_line_error, run_cli


def conv_line(cid: str, text: str) -> bytes:
    record = {"conversation_id": cid, "user_id": "u1001",
              "turns": [{"role": "user", "content": text}]}
    return (json.dumps(record, ensure_ascii=True) + "\n").encode()


HOSTILE = (conv_line("ok-1", "退货运费谁出")
           + b'{"conversation_id": "sur", "turns": [{"role": "user", "content": "\\ud800\xe9\x80\x80\xe8\xb4\xa7"}]}\n'
           + b'{"conversation_id": "raw", "turns": [{"role": "user", "content": "\xff\xfe\xc3("}]}\n'
           + b'{"conversation_id": "deep", "turns": ' + b"[" * 50_000 + b"\n"
           + b'{"conversation_id": "\\udfff-id", "turns": [{"role": "user", "content": "hi"}]}\n'
           + conv_line("ok-2", "退款多久到账"))


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_index(tmp_path_factory.mktemp("relreplay"))


def test_reader_reports_bad_lines_and_repairs_surrogates(tmp_path: Path) -> None:
    logs = tmp_path / "logs.jsonl"
    logs.write_bytes(HOSTILE)
    summary = ReplaySummary()
    convs = list(read_conversations(logs, summary))
    assert [c.conversation_id for c in convs] == ["ok-1", "sur", "\ufffd-id", "ok-2"]
    assert convs[1].turns[0]["content"].startswith("\ufffd") and convs[1].repaired
    assert [b.split(":")[0] for b in summary.bad_lines] == ["line 3", "line 4"]
    assert "UTF-8" in summary.bad_lines[0] and "nested too deeply" in summary.bad_lines[1]
    assert len(summary.repaired_lines) == 2


def test_appender_never_fails_on_unencodable_text(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    appender = AtomicAppender(out)
    appender.append({"conversation_id": "x", "turns": [{"answer": "a\ud800b"}]})
    appender.close()
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["turns"][0]["answer"] == "a\ud800b"  # escaped, so the line stays valid JSON


def test_one_writer_per_output_file(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    first = AtomicAppender(out)
    with pytest.raises(UsageError, match="another replay"):
        AtomicAppender(out)
    first.close()
    AtomicAppender(out).close()


def test_stale_scratch_folders_of_dead_runs_are_removed(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{SCRATCH_PREFIX}{dead.pid}"
    (stale / "sub").mkdir(parents=True)
    alive = tmp_path / f"{SCRATCH_PREFIX}1"  # pid 1 is alive: not ours to remove
    alive.mkdir()
    scratch = make_scratch_dir(tmp_path / "out.jsonl")
    assert scratch.is_dir() and scratch.name.endswith(str(os.getpid()))
    assert not stale.exists() and alive.exists()


def test_replay_cli_on_hostile_lines_then_resume(index: Path, tmp_path: Path) -> None:
    logs, out = tmp_path / "logs.jsonl", tmp_path / "out" / "results.jsonl"
    logs.write_bytes(HOSTILE)
    env = cli_env(tmp_path / "data", index)
    first = run_cli("replay", str(logs), "--out", str(out), "--no-progress", env=env)
    err = first.stderr.decode("utf-8", errors="replace")
    assert first.returncode == 1, err
    assert "Traceback" not in err
    assert "line 3: not valid UTF-8" in err and "line 4: invalid JSON" in err
    assert "line 2: lone surrogates replaced" in err
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["conversation_id"] for r in records) == sorted(["ok-1", "sur", "\ufffd-id", "ok-2"])
    assert all(t["status"] != "error" for r in records for t in r["turns"])
    again = run_cli("replay", str(logs), "--out", str(out), "--no-progress", "--resume", env=env)
    assert again.returncode == 1 and b"Traceback" not in again.stderr
    assert b"skipped 4 conversations already in the output" in again.stdout
    assert len(out.read_text(encoding="utf-8").splitlines()) == 4
    assert not list(out.parent.glob(f"{SCRATCH_PREFIX}*"))


def test_killed_replay_leaves_no_scratch_folder(index: Path, tmp_path: Path) -> None:
    logs, out = tmp_path / "logs.jsonl", tmp_path / "res" / "out.jsonl"
    logs.write_bytes(b"".join(conv_line(f"c{i:03d}", "退货运费谁出") for i in range(40)))
    env = cli_env(tmp_path / "data", index)
    cmd = [sys.executable, "-m", "csagent.cli", "replay", str(logs), "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(cmd, env=env, cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None
    assert list(out.parent.glob(f"{SCRATCH_PREFIX}*")), "the run keeps its scratch beside --out"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert list(out.parent.glob(f"{SCRATCH_PREFIX}{proc.pid}"))  # what a kill leaves behind …
    done = run_cli("replay", str(logs), "--out", str(out), "--no-progress", "--resume", env=env)
    assert done.returncode == 0, done.stderr
    assert not list(out.parent.glob(f"{SCRATCH_PREFIX}*"))  # … is gone after the next run
    ids = [json.loads(line)["conversation_id"] for line in out.read_text("utf-8").splitlines()]
    assert sorted(ids) == [f"c{i:03d}" for i in range(40)]


def test_parse_conversation_rejects_what_it_cannot_replay() -> None:
    for raw, message in (("[]", "JSON object"), ('{"conversation_id": ""}', "conversation_id"),
                         ('{"conversation_id": "a", "turns": []}', "turns"),
                         ('{"conversation_id": "a", "turns": [{"role": "bot", "content": "x"}]}',
                          "turns[0]"),
                         ("[" * 100_000, "nested too deeply")):
        with pytest.raises(ValueError, match=message.replace("[", r"\[")):
            parse_conversation(1, raw)


def test_verify_on_deeply_nested_json_is_a_clear_error(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    for payload in (b"[" * 200_000 + b"\n", b'{"a":' * 200_000 + b"\n"):
        proc = run_cli("verify", "--offline", env=env, stdin=payload)
        assert proc.returncode == 1
        assert "nested too deeply" in one_line_error(proc)
    proc = run_cli("verify", "--offline", env=env, stdin=b"\xff\xfe{}\n")
    assert proc.returncode == 2 and "UTF-8" in one_line_error(proc)
    item = {"question": "q\ud800", "answer": "运费由买家承担。", "evidence": [{"id": "a", "text": "运费由买家承担"}]}
    proc = run_cli("verify", "--offline", env=env,
                   stdin=(json.dumps(item, ensure_ascii=True) + "\n").encode())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["overall"] in ("pass", "fail", "need_recheck")


def test_an_id_that_cleaning_empties_is_refused_with_a_reason() -> None:
    # A control character is removed by the text cleaning; an id made only of such characters
    # would leave a conversation without an id (found by the fuzz test).
    line = json.dumps({"conversation_id": "\x00", "turns": [{"role": "user", "content": "运费多少"}]})
    with pytest.raises(ValueError, match="conversation_id"):
        parse_conversation(3, line)
    line = json.dumps({"conversation_id": "c1", "user_id": "\x7f", "turns": [{"role": "user", "content": "运费多少"}]})
    with pytest.raises(ValueError, match="user_id"):
        parse_conversation(3, line)
