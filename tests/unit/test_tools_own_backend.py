"""A shop's own tools, without touching the graph: other names, a profile naming capabilities.

The backend below renames every demo tool (its own order system's names) and the profile's
actions name capabilities instead of tools; routing, planning, evidence and confirmation work
unchanged, and no demo tool name is ever called.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graph.builder import build_graph
from graph.context import Context
from graph.deps import Deps
from shop.tools import ShopToolbox
from tests.fakes import ChatSession, fixture_index
from tools.types import ToolResult, ToolSpec

REPO = Path(__file__).resolve().parents[2]
NAMES = {"order_lookup": "get_order", "logistics_tracking": "track_parcel",
         "after_sales_apply": "open_case", "order_cancel": "cancel", "product_recommend": "find_goods"}


class AcmeBackend:
    """Another order system: the same data under its own tool names."""

    def __init__(self, db: Path) -> None:
        self.inner = ShopToolbox(db)
        self.back = {new: old for old, new in NAMES.items()}
        self.called: list[str] = []

    def specs(self) -> list[ToolSpec]:
        return [replace(s, name=NAMES[s.name]) for s in self.inner.specs()]

    def call(self, name: str, args: dict[str, Any], *, user_id: str) -> ToolResult:
        self.called.append(name)
        result = self.inner.call(self.back.get(name, name), args, user_id=user_id)
        return ToolResult(**{**result, "source": name})


def capability_profile(tmp: Path) -> Path:
    profile = json.loads((REPO / "profiles" / "shop.json").read_text(encoding="utf-8"))
    capability = {"order_lookup": "order_query", "logistics_tracking": "logistics_query",
                  "product_recommend": "product_recommend", "order_cancel": "cancel_order"}
    for action in profile["actions"]:
        tool = action.pop("tool", None)
        if tool:
            action["capability"] = capability.get(tool) or action["args"]["kind"]
    path = tmp / "acme.json"
    path.write_text(json.dumps(profile, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def acme(tmp_path: Path) -> tuple[Any, AcmeBackend, Path]:
    backend = AcmeBackend(tmp_path / "shop.sqlite")
    graph = build_graph(Deps(retriever=fixture_index(), shop=backend)).compile(checkpointer=InMemorySaver())
    return graph, backend, capability_profile(tmp_path)


def chat(graph: Any, profile: Path, thread: str) -> ChatSession:
    return ChatSession(graph, thread_id=thread, context=Context(user_id="u1001", domain_profile=str(profile)))


def test_order_questions_run_the_shops_own_tools(acme: tuple[Any, AcmeBackend, Path]) -> None:
    graph, backend, profile = acme
    session = chat(graph, profile, "t1")
    session >> "订单2026112500103到哪了"
    assert session.status == "answered" and "中通快递" in session.answer
    assert "【来源:tool:track_parcel#1】" in session.answer
    session = chat(graph, profile, "t2")
    session >> "我买的降噪耳机到了没"
    assert "已签收" in session.answer
    assert backend.called and set(backend.called) <= set(NAMES.values())


def test_a_write_still_waits_for_confirmation(acme: tuple[Any, AcmeBackend, Path]) -> None:
    graph, backend, profile = acme
    session = chat(graph, profile, "t3")
    session >> "帮我取消订单SO2026112900105"
    assert session.interrupt is not None and session.interrupt["action"]["tool"] == "cancel"
    assert "cancel" not in backend.called  # nothing written before the customer confirms
    session.resume("确认")
    assert backend.called[-1] == "cancel" and "已取消" in session.answer
