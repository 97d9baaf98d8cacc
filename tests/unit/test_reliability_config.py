"""Issue 9 item 8: every setting validated at start-up (exit 2), every CLI error one line + a documented code."""

from __future__ import annotations

from pathlib import Path

import pytest

from csagent.cli import EXIT_CODES, main
from csagent.config import Settings, SettingsError, validate_settings
from csagent.errors import UsageError
from tests.reliability_support import cli_env, one_line_error, run_cli

BAD_SETTINGS = [
    ("CSAGENT_TOOL_TIMEOUT", "0", "tool_timeout"),
    ("CSAGENT_TOOL_TIMEOUT", "-1", "tool_timeout"),
    ("CSAGENT_TOOL_TIMEOUT", "abc", "CSAGENT_TOOL_TIMEOUT"),
    ("CSAGENT_TOP_K", "0", "top_k"),
    ("CSAGENT_TOP_K", "-3", "top_k"),
    ("CSAGENT_RECALL_K", "0", "recall_k"),
    ("CSAGENT_DOMAIN_PROFILE", "no-such-profile", "domain_profile"),
    ("CSAGENT_DOMAIN_PROFILE", "/nowhere/profile.json", "domain_profile"),
    ("CSAGENT_RERANKER", "bogus", "reranker"),
    ("CSAGENT_RERANKER", "nobody/no-such-reranker", "reranker"),
    ("CSAGENT_EMBEDDING_MODEL", "not-a-model", "embedding_model"),
    ("CSAGENT_FUSION", "max", "fusion"),
    ("CSAGENT_FUSION_ALPHA", "1.5", "fusion_alpha"),
    ("CSAGENT_FUSION_ALPHA", "nan", "CSAGENT_FUSION_ALPHA"),
    ("CSAGENT_CHUNK_OVERLAP", "600", "chunk_overlap"),
    ("CSAGENT_LLM_TIMEOUT", "0", "llm_timeout"),
    ("CSAGENT_LLM_MAX_RETRIES", "-1", "llm_max_retries"),
    ("CSAGENT_MAX_REFLECTIONS", "-1", "max_reflections"),
    ("CSAGENT_LOG_LEVEL", "LOUD", "log_level"),
    ("CSAGENT_CHROMA_URL", "ftp://host", "chroma_url"),
]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    import os

    for name in list(os.environ):
        if name.startswith("CSAGENT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CSAGENT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


@pytest.mark.parametrize(("name", "value", "named"), BAD_SETTINGS)
def test_bad_setting_is_refused_at_start_up(clean_env: Path, monkeypatch: pytest.MonkeyPatch,
                                            name: str, value: str, named: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as info:
        Settings.from_env()
    assert named in str(info.value)
    assert isinstance(info.value, UsageError) and info.value.exit_code == 2


def test_defaults_and_good_values_pass(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings.from_env()
    validate_settings(settings)
    monkeypatch.setenv("CSAGENT_TOP_K", "8")
    monkeypatch.setenv("CSAGENT_RERANKER", "lexical")
    monkeypatch.setenv("CSAGENT_DOMAIN_PROFILE", "kb-only")
    monkeypatch.setenv("CSAGENT_CHROMA_URL", "http://127.0.0.1:8000")
    assert Settings.from_env().top_k == 8
    local_model = clean_env / "my-reranker"
    local_model.mkdir()
    assert Settings(reranker=str(local_model)).reranker == str(local_model)


def test_overrides_are_validated_too() -> None:
    with pytest.raises(SettingsError, match="top_k"):
        Settings().with_overrides(top_k=0)
    with pytest.raises(SettingsError, match="tool_timeout"):
        Settings(tool_timeout=0)


def test_api_refuses_a_bad_setting_before_any_turn(clean_env: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from csagent.api import CSAgent

    monkeypatch.setenv("CSAGENT_TOP_K", "0")
    with pytest.raises(SettingsError):
        CSAgent()


@pytest.mark.parametrize("command", [["ask", "退货运费谁出"], ["search", "退货运费"],
                                     ["verify", "--offline"]])
def test_cli_bad_setting_exits_2_with_one_line(tmp_path: Path, command: list[str]) -> None:
    proc = run_cli(*command, env=cli_env(tmp_path, CSAGENT_TOOL_TIMEOUT="0"), stdin=b"{}\n")
    assert proc.returncode == 2
    assert "CSAGENT_TOOL_TIMEOUT" in one_line_error(proc)


def test_cli_unknown_profile_and_reranker_exit_2(tmp_path: Path) -> None:
    for extra in ({"CSAGENT_DOMAIN_PROFILE": "nope"}, {"CSAGENT_RERANKER": "bogus"},
                  {"CSAGENT_TOP_K": "0"}):
        proc = run_cli("ask", "退货运费谁出", env=cli_env(tmp_path, **extra))
        assert proc.returncode == 2, proc.stderr
        assert next(iter(extra)) in one_line_error(proc)


def test_help_documents_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--help"], ["ask", "--help"], ["replay", "--help"], ["search", "--help"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 0
        out = capsys.readouterr().out
        assert "exit status:" in out
        for code, _ in EXIT_CODES:
            assert f"  {code} " in out


def test_argument_errors_are_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["search", "-k", "x", "q"], ["ask", "--bogus"], ["search", "--mode", "fuzzy", "q"],
                 ["no-such-command"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "--help" in err


def test_usage_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   clean_env: Path) -> None:
    assert main(["search", "   "]) == 2
    assert main(["search", "q", "-k", "0"]) == 2
    assert main(["ask"]) == 2
    assert main(["ask", "--resume", "yes"]) == 2
    assert main(["replay", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert main(["search", "退货", "--index", str(tmp_path / "no-index")]) == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert all(line.startswith("csagent ") for line in err.strip().splitlines())


def test_unexpected_exception_is_one_line_exit_70(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import csagent.commands.trace as trace_cmd

    def boom(args: object) -> int:
        raise RuntimeError("something broke\nsecond line")

    monkeypatch.setattr(trace_cmd, "run", boom)
    assert main(["trace", "abc"]) == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: RuntimeError: something broke" in err
    assert "-vv" in err


def test_undecodable_argv_does_not_crash(clean_env: Path) -> None:
    from csagent.cli import clean_argv

    assert clean_argv(["a\udcff\ud800b"]) == ["a\ufffd\ufffdb"]


def test_unusable_paths_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            clean_env: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    logs = tmp_path / "logs.jsonl"
    logs.write_text('{"conversation_id": "a", "turns": [{"role": "user", "content": "hi"}]}\n',
                    encoding="utf-8")
    kb = Path(__file__).resolve().parents[1] / "fixtures" / "kb"
    assert main(["ingest", str(kb), "--index", str(blocker), "--no-progress"]) == 2
    assert main(["replay", str(logs), "--out", str(blocker / "out.jsonl")]) == 2
    assert main(["replay", str(logs), "--out", str(logs)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 3
    assert "must not be the input file" in err
