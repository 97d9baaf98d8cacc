"""Helpers for the ``csagent serve`` integration tests: a real index, real service processes
on loopback ports, a throw-away Postgres database, and a small SSE client."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from csagent.config import REPO_ROOT

KB_DOCS = ("returns-7day.md", "order-changes.md")
START_TIMEOUT = 180.0
PG_ADMIN_URL = os.environ.get("CSAGENT_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
CUSTOMER = {"u1001": "demo-u1001", "u1002": "demo-u1002", "u1003": "demo-u1003"}
AGENT_TOKEN = "demo-agent-xiaoyou"
AGENT2_TOKEN = "demo-agent-xiaoming"
POLICY_Q = "七天无理由退货的运费谁承担？"
REFUND_Q = "订单 SO2026112000102 的耳机我不想要了，帮我申请退货退款"
REFUND_ORDER = "SO2026112000102"
HANDOFF_Q = "你们服务太差了，我要投诉，马上给我转人工！"


def build_index(root: Path) -> Path:
    """Ingest two demo KB documents into ``root/index``; return the index dir."""
    from knowledge.ingest import ingest_paths

    kb = root / "kb"
    kb.mkdir(parents=True, exist_ok=True)
    for name in KB_DOCS:
        shutil.copy(REPO_ROOT / "data" / "kb" / name, kb / name)
    ingest_paths([kb], root / "index", progress=False)
    return root / "index"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CSAGENT_")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", LANGSMITH_TRACING="false",
               LANGFUSE_TRACING_ENABLED="false", PYTHONUNBUFFERED="1")
    return env


@dataclass
class Service:
    """One ``csagent serve`` worker process."""

    data_dir: Path
    index_dir: Path
    database_url: str | None = None
    port: int = field(default_factory=free_port)
    extra_env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Service:
        env = base_env() | {"CSAGENT_DATA_DIR": str(self.data_dir),
                            "CSAGENT_INDEX_DIR": str(self.index_dir)} | self.extra_env
        if self.database_url:
            env["CSAGENT_DATABASE_URL"] = self.database_url
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log = self.data_dir / f"serve-{self.port}.log"
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "csagent.cli", "serve", "--port", str(self.port)],
                cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"csagent serve exited early:\n{self.logs()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.3)
        raise AssertionError(f"csagent serve not up after {START_TIMEOUT}s:\n{self.logs()}")

    def logs(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log else ""

    def kill(self) -> None:
        """SIGKILL the worker (no clean-up, no goodbye)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def send(url: str, token: str, thread: str, message: str, timeout: float = 120) -> httpx.Response:
    return httpx.post(f"{url}/v1/threads/{thread}/messages", json={"message": message},
                      headers=auth(token), timeout=timeout)


def confirm(url: str, token: str, thread: str, decision: str = "confirm") -> httpx.Response:
    return httpx.post(f"{url}/v1/threads/{thread}/confirm", json={"decision": decision},
                      headers=auth(token), timeout=120)


def parse_sse(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any], str | None]]:
    """Yield ``(event, data, id)`` from SSE text lines (comments and pings skipped)."""
    event, data, event_id = "message", [], None
    for line in lines:
        if line == "":
            if data:
                yield event, json.loads("\n".join(data)), event_id
            event, data, event_id = "message", [], None
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif line.startswith("id:"):
            event_id = line[3:].strip()


def stream_turn(url: str, token: str, thread: str, message: str | None = None,
                decision: str | None = None) -> list[tuple[str, dict[str, Any], float]]:
    """Run one turn over SSE; return ``(event, data, seconds since the request)`` in order."""
    path, body = ((f"/v1/threads/{thread}/messages", {"message": message}) if message is not None
                  else (f"/v1/threads/{thread}/confirm", {"decision": decision}))
    started = time.perf_counter()
    out: list[tuple[str, dict[str, Any], float]] = []
    headers = auth(token) | {"Accept": "text/event-stream"}
    with httpx.stream("POST", url + path, json=body, headers=headers, timeout=120) as resp:
        assert resp.status_code == 200, resp.read()
        for event, data, _ in parse_sse(resp.iter_lines()):
            out.append((event, data, time.perf_counter() - started))
            if event in ("result", "error"):
                break
    return out


def pg_available() -> str | None:
    """Return why Postgres cannot be used, or None when it can."""
    try:
        import psycopg
    except ImportError as exc:
        return f"psycopg not installed: {exc}"
    try:
        with psycopg.connect(PG_ADMIN_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - the reason is the skip message
        return f"no Postgres reachable at {PG_ADMIN_URL}: {exc}"
    return None


@contextlib.contextmanager
def temporary_database() -> Iterator[str]:
    """Create a uniquely named database, yield its URL, drop it afterwards."""
    import psycopg

    reason = pg_available()
    if reason is not None:
        pytest.skip(reason)
    name = f"csagent_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


_INDEX: dict[str, Path] = {}


def shared_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the mini index once per test session (embedding is the slow part)."""
    if "index" not in _INDEX:
        _INDEX["index"] = build_index(tmp_path_factory.mktemp("service-index"))
    return _INDEX["index"]


def shop_tickets(db: Path, order_id: str) -> list[tuple[str, str]]:
    import sqlite3

    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT id, user_id FROM after_sales_tickets WHERE order_id = ?",
                            (order_id,)).fetchall()
