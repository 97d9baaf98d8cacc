"""``langgraph dev`` serves the csagent graph; driven for real with ``langgraph_sdk``.

Builds a small index from two demo KB documents in a tmp data dir, starts
``langgraph dev --port <free> --no-browser`` offline, then: a cited policy answer; a refund that
stops at the confirmation interrupt and is resumed with ``command={"resume": "yes"}`` (the
after-sales ticket really lands in the server's shop database).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from csagent.config import REPO_ROOT

pytestmark = pytest.mark.integration

KB_DOCS = ("returns-7day.md", "order-changes.md")
START_TIMEOUT = 180.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert port != 2024
    return int(port)


def wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"langgraph dev exited early:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"langgraph dev not up after {START_TIMEOUT}s:\n{log.read_text()[-4000:]}")


def repo_config_in(folder: Path) -> Path:
    """Copy the repo's langgraph.json with its paths made absolute into ``folder``.

    ``langgraph dev`` resolves graph paths and keeps its state (``.langgraph_api/``) relative to
    its working directory; running it in a tmp folder keeps the repository clean.
    """
    from langgraph_cli.config import validate_config_file

    source = REPO_ROOT / "langgraph.json"
    config = validate_config_file(source)
    raw = json.loads(source.read_text(encoding="utf-8"))
    assert raw["graphs"] == {"csagent": "./csagent/langgraph_app.py:graph"}
    assert config["python_version"] == "3.11"
    raw["graphs"] = {name: str(REPO_ROOT / spec) for name, spec in raw["graphs"].items()}
    raw["dependencies"] = [str(REPO_ROOT / dep) for dep in raw["dependencies"]]
    raw.pop("env", None)  # the test passes its environment explicitly
    target = folder / "langgraph.json"
    target.write_text(json.dumps(raw), encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    from knowledge.ingest import ingest_paths

    root = tmp_path_factory.mktemp("lgdev")
    kb = root / "kb"
    kb.mkdir()
    for name in KB_DOCS:
        shutil.copy(REPO_ROOT / "data" / "kb" / name, kb / name)
    data_dir = root / "data"
    ingest_paths([kb], data_dir / "index", progress=False)

    config = repo_config_in(root)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CSAGENT_")}
    env.update({
        "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false", "LANGFUSE_TRACING_ENABLED": "false",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "CSAGENT_DATA_DIR": str(data_dir), "CSAGENT_INDEX_DIR": str(data_dir / "index"),
        "CSAGENT_SHOP_DB": str(data_dir / "shop.sqlite"),
    })
    langgraph = Path(sys.executable).with_name("langgraph")
    log = root / "langgraph-dev.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(langgraph), "dev", "--port", str(port), "--no-browser", "--no-reload",
             "--config", str(config)],
            cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, proc, log)
        yield {"url": url, "shop_db": data_dir / "shop.sqlite", "log": log}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


async def stream_turn(client: Any, thread_id: str, **kwargs: Any) -> list[tuple[str, Any]]:
    """Run one turn; return the (event, data) parts of the ``updates`` stream."""
    parts = []
    async for part in client.runs.stream(thread_id, "csagent", stream_mode="updates",
                                         context={"user_id": "u1001"}, **kwargs):
        parts.append((part.event, part.data))
    return parts


def nodes_of(parts: list[tuple[str, Any]]) -> list[str]:
    return [name for event, data in parts if event == "updates" and isinstance(data, dict)
            for name in data]


def test_cited_answer_over_the_sdk(server):
    from langgraph_sdk import get_client

    async def scenario() -> tuple[list[tuple[str, Any]], dict[str, Any]]:
        client = get_client(url=server["url"])
        thread = await client.threads.create()
        parts = await stream_turn(client, thread["thread_id"], input={
            "messages": [{"role": "user", "content": "七天无理由退货的运费谁承担？"}]})
        state = await client.threads.get_state(thread["thread_id"])
        return parts, state["values"]

    parts, values = asyncio.run(scenario())
    assert not [d for e, d in parts if e == "error"], parts
    assert "generate_answer" in nodes_of(parts)
    assert values["status"] == "answered"
    assert "【来源:returns-7day#" in values["answer"]
    assert any(c["id"].startswith("returns-7day#") for c in values["citations"])


def test_confirmation_interrupt_and_resume_over_the_sdk(server):
    from langgraph_sdk import get_client

    message = "订单 SO2026112000102 的耳机我不想要了，帮我申请退货退款"

    async def scenario() -> tuple[list[Any], list[Any], dict[str, Any]]:
        client = get_client(url=server["url"])
        thread = await client.threads.create()
        first = await stream_turn(client, thread["thread_id"], input={
            "messages": [{"role": "user", "content": message}]})
        waiting = await client.threads.get_state(thread["thread_id"])
        assert waiting["next"], waiting  # paused at the confirmation node
        second = await stream_turn(client, thread["thread_id"], command={"resume": "yes"})
        state = await client.threads.get_state(thread["thread_id"])
        return first, second, state["values"]

    first, second, values = asyncio.run(scenario())
    interrupts = [d["__interrupt__"] for e, d in first
                  if e == "updates" and isinstance(d, dict) and "__interrupt__" in d]
    assert interrupts, first
    payload = interrupts[0][0]["value"]
    assert payload["type"] == "confirm"
    assert payload["action"]["tool"] == "after_sales_apply"
    assert payload["action"]["args"]["order_id"] == "SO2026112000102"
    assert not [d for e, d in second if e == "error"], second
    assert values["status"] == "answered"
    with sqlite3.connect(server["shop_db"]) as conn:
        tickets = conn.execute("SELECT order_id, user_id FROM after_sales_tickets "
                               "WHERE order_id = 'SO2026112000102'").fetchall()
    assert tickets == [("SO2026112000102", "u1001")]
