"""The service's answer to a failure outside any turn: the JSON error shape, never a bare text page."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from langgraph.checkpoint.memory import InMemorySaver

from csagent.api import CSAgent
from csagent.runtime import build_deps
from csagent.service.app import ServiceConfig, create_app
from csagent.service.auth import TokenFileAuthenticator
from shop.tools import ShopToolbox
from tests.unit.test_api_agent import POLICY_Q, mini_kb_settings

AUTH = {"Authorization": "Bearer demo-u1001"}


def test_a_store_failing_while_a_stream_claims_its_thread_is_a_json_500(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    settings = mini_kb_settings(tmp_path)
    deps = dataclasses.replace(build_deps(settings), shop=ShopToolbox(tmp_path / "shop.sqlite"))
    agent = CSAgent(settings.with_overrides(data_dir=tmp_path / "data"), deps=deps,
                    checkpointer=InMemorySaver())

    def broken_claim(thread_id: str, user_id: str) -> str:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(agent.store, "claim", broken_claim)
    app = create_app(lambda: agent, TokenFileAuthenticator(), ServiceConfig(run_processes=0))
    with TestClient(app, raise_server_exceptions=False) as client:
        resp = client.post("/v1/threads/broken-1/messages", json={"message": POLICY_Q},
                           headers=AUTH | {"Accept": "text/event-stream"})
        assert resp.status_code == 500, resp.text
        assert resp.json()["error"]["code"] == "internal_error"  # no stream was started
        monkeypatch.undo()  # the store recovers: nothing was claimed, the thread starts afresh
        assert client.get("/v1/threads/broken-1/history", headers=AUTH).status_code == 404
        again = client.post("/v1/threads/broken-1/messages", json={"message": POLICY_Q}, headers=AUTH)
        assert again.status_code == 200 and again.json()["status"] == "answered", again.text
