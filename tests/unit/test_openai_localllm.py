"""Assembling a local model from its parts (csagent.localllm) and the `csagent llm` command."""

from __future__ import annotations

import hashlib
import os
import sys
import types
from pathlib import Path

import pytest

from csagent import localllm
from csagent.cli import main
from csagent.localllm import LocalModelError, ModelSpec, assemble, part_paths, serve_command


def make_parts(tmp_path: Path, chunks: list[bytes]) -> tuple[list[Path], str]:
    paths = []
    for i, chunk in enumerate(chunks, 1):
        path = tmp_path / f"part{i:02d}.bin"
        path.write_bytes(chunk)
        paths.append(path)
    return paths, hashlib.sha256(b"".join(chunks)).hexdigest()


def spec(sha: str, modules: tuple[str, ...] = ()) -> ModelSpec:
    return ModelSpec(size="test", file_name="tiny.gguf", modules=modules, sha256=sha,
                     extra="local-llm")


def test_parts_are_concatenated_in_order_verified_and_cached(tmp_path: Path) -> None:
    parts, sha = make_parts(tmp_path, [b"GGUF" + b"a" * 1000, b"b" * 999, b"c"])
    model = assemble("test", tmp_path / "data", parts=parts, spec=spec(sha))
    assert model == tmp_path / "data" / "models" / "tiny.gguf"
    assert model.read_bytes() == b"GGUF" + b"a" * 1000 + b"b" * 999 + b"c"
    mtime = model.stat().st_mtime_ns
    # cached: the parts are not read again (they may even be gone)
    for part in parts:
        part.unlink()
    assert assemble("test", tmp_path / "data", parts=[], spec=spec(sha)) == model
    assert model.stat().st_mtime_ns == mtime


def test_wrong_sha256_is_refused_and_nothing_is_left_behind(tmp_path: Path) -> None:
    parts, sha = make_parts(tmp_path, [b"one", b"two"])
    with pytest.raises(LocalModelError, match="refusing") as info:
        assemble("test", tmp_path / "data", parts=list(reversed(parts)), spec=spec(sha))
    assert info.value.exit_code == 2
    assert sha in str(info.value)
    assert list((tmp_path / "data" / "models").iterdir()) == []


def test_a_tampered_cached_model_is_rebuilt(tmp_path: Path) -> None:
    parts, sha = make_parts(tmp_path, [b"x" * 100, b"y" * 100])
    model = assemble("test", tmp_path / "data", parts=parts, spec=spec(sha))
    model.write_bytes(b"evil")
    os.utime(model, ns=(1, 1))
    assert assemble("test", tmp_path / "data", parts=parts, spec=spec(sha)).read_bytes() == \
        b"x" * 100 + b"y" * 100


def test_part_modules_are_asked_for_their_paths(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    parts, sha = make_parts(tmp_path, [b"p1", b"p2"])
    names = ("csagent_test_part_a", "csagent_test_part_b")
    for name, path in zip(names, parts, strict=True):
        module = types.ModuleType(name)
        module.get_part_path = lambda p=path: str(p)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, name, module)
    assert part_paths(spec(sha, names)) == parts
    with pytest.raises(LocalModelError, match="pip install 'csagent\\[local-llm\\]'"):
        part_paths(spec(sha, ("csagent_no_such_part_module",)))


def test_serve_command_binds_loopback_with_two_threads() -> None:
    cmd = serve_command(Path("/m.gguf"), 8123)
    assert cmd[1:3] == ["-m", "llama_cpp.server"]
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--n_threads") + 1] == "2"
    assert cmd[cmd.index("--port") + 1] == "8123"


def test_builtin_specs_pin_the_published_hashes() -> None:
    assert localllm.MODELS["0.5b"].sha256.startswith("1d9614638d18")
    assert len(localllm.MODELS["0.5b"].modules) == 6
    assert len(localllm.MODELS["1.5b"].modules) == 22


def test_cli_bad_hash_exits_2_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    parts, _ = make_parts(tmp_path, [b"bad"])
    monkeypatch.setenv("CSAGENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(localllm, "part_paths", lambda s: parts)
    assert main(["llm", "fetch", "--size", "0.5b"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("csagent llm: refusing the 0.5b model") and "\n" not in err


def test_cli_without_action_or_with_bad_port_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["llm"]) == 2
    assert main(["llm", "serve", "--port", "0"]) == 2
    assert "--port" in capsys.readouterr().err
