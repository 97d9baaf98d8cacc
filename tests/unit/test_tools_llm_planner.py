"""The LLM tool planner: registry schemas offered via bind_tools, code checks, step budget, no write run."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from contracts.question import empty_question
from graph.context import Context
from graph.deps import Deps
from nodes.tools import MSG_NEEDS_CONFIRMATION, call_tools
from shop.decls import REGISTRY
from shop.tools import ShopToolbox
from strategies.llm.tools import FallbackToolPlanner, LLMToolPlanner, tool_schemas
from strategies.protocols import StepFailed, ToolRequest, Turn
from strategies.rules.router import action_route
from strategies.rules.tools import RulesToolPlanner
from tests.fakes import ScriptedChatModel

SPECS = tuple(REGISTRY.specs())
READ = {"intent": "logistics_query", "tool": "logistics_tracking", "label": "查询物流"}
CANCEL = {"intent": "cancel_order", "tool": "order_cancel", "label": "取消订单"}


def calls(*items: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": n, "args": a, "id": f"c{i}"} for i, (n, a) in enumerate(items)])


def request(question: str, action: dict[str, Any] = READ, facts: list[Any] | None = None,
            order_id: str | None = None) -> ToolRequest:
    turn = Turn(question=empty_question(question), facts=facts or [], tools=SPECS)
    return ToolRequest(turn=turn, action=action, order_id=order_id)


def observations(llm: ScriptedChatModel) -> list[str]:
    return [str(m.content) for p in llm.prompts for m in p if isinstance(m, ToolMessage)]


def test_schemas_come_from_the_registry_and_aliases_are_accepted() -> None:
    llm = ScriptedChatModel([calls(("logistics_tracking", {"orderId": "so2026112500103"}))])
    plans = LLMToolPlanner(llm).plan(request("订单2026112500103到哪了"))
    assert plans == [{"name": "logistics_tracking", "args": {"order_id": "SO2026112500103"}}]
    assert llm._tools == tool_schemas(list(SPECS))  # the fake records what bind_tools got
    offered = {t["function"]["name"]: t["function"]["parameters"] for t in llm._tools}
    assert offered == {s.name: s.parameters for s in SPECS}


def test_an_id_the_customer_did_not_give_goes_back_as_an_observation() -> None:
    llm = ScriptedChatModel([calls(("logistics_tracking", {"order_id": "SO2026112300203"})),
                             calls(("logistics_tracking", {"order_no": "SO2026112500103"}))])
    plans = LLMToolPlanner(llm).plan(request("so 2026112500103 到哪了"))
    assert plans == [{"name": "logistics_tracking", "args": {"order_id": "SO2026112500103"}}]
    assert any("SO2026112300203 was not given by the customer" in o for o in observations(llm))
    assert llm.remaining == 0


def test_a_carried_id_is_allowed() -> None:
    facts = [{"kind": "order_id", "value": "SO2026112000102", "source": "tool:order_lookup"}]
    llm = ScriptedChatModel([calls(("order_lookup", {"order_id": "SO2026112000102"}))])
    assert LLMToolPlanner(llm).plan(request("它签收了吗", facts=facts))[0]["args"] == {"order_id": "SO2026112000102"}


@pytest.mark.parametrize(("bad", "needle"), [
    (("logistics_tracking", {"order_id": "SO2026112500103", "user_id": "u1002"}), "user_id"),
    (("logistics_tracking", {}), "needs order_id"),
    (("order_cancel", {"order_id": "SO2026112500103"}), "changes data"),
    (("refund_everything", {}), "there is no tool"),
    (("product_recommend", {"query": "耳机", "max_price": -5}), "too small"),
])
def test_budget_then_step_failed_then_the_rules_plan(bad: tuple[str, dict[str, Any]], needle: str) -> None:
    llm = ScriptedChatModel([calls(bad)] * 2)
    with pytest.raises(StepFailed, match="within 2 steps"):
        LLMToolPlanner(llm, max_steps=2).plan(request("SO2026112500103到哪了"))
    assert any(needle in o for o in observations(llm)), observations(llm)
    fallback = FallbackToolPlanner(LLMToolPlanner(ScriptedChatModel([calls(bad)]), max_steps=1), RulesToolPlanner())
    assert fallback.plan(request("SO2026112500103到哪了")) == [
        {"name": "logistics_tracking", "args": {"order_id": "SO2026112500103"}}]


def test_model_errors_and_no_tool_call_fail_the_step() -> None:
    with pytest.raises(StepFailed, match="TimeoutError"):
        LLMToolPlanner(ScriptedChatModel([TimeoutError("slow")])).plan(request("SO2026112500103到哪了"))
    with pytest.raises(StepFailed, match="no tool call"):
        LLMToolPlanner(ScriptedChatModel(["好的"])).plan(request("SO2026112500103到哪了"))


def test_a_write_goes_to_the_confirmation_step_alone() -> None:
    llm = ScriptedChatModel([calls(("order_cancel", {"order_id": "SO2026112900105"}),
                                   ("order_lookup", {"order_id": "SO2026112900105"})),
                             calls(("order_cancel", {"order_id": "SO2026112900105"}))])
    planner = LLMToolPlanner(llm)
    turn = Turn(question=empty_question("帮我取消订单SO2026112900105"), tools=SPECS, profile={})
    decision = action_route(turn, CANCEL, planner)
    assert decision["route"] == "confirm" and decision["status"] == "needs_confirmation"
    assert decision["pending_action"]["tool"] == "order_cancel"
    assert decision["pending_action"]["args"] == {"order_id": "SO2026112900105"}
    assert any("alone" in str(m.content) for p in llm.prompts for m in p)


def test_call_tools_never_runs_a_write(tmp_path: Path) -> None:
    shop = ShopToolbox(tmp_path / "shop.sqlite")
    deps = Deps(retriever=None, shop=shop)  # type: ignore[arg-type]
    state = {"question": "取消", "tool_plan": [{"name": "order_cancel", "args": {"order_id": "SO2026112900105"}}]}
    update = call_tools(state, SimpleNamespace(context=Context(user_id="u1001")), deps)  # type: ignore[arg-type]
    assert update["tool_calls"][0]["result"]["message"] == MSG_NEEDS_CONFIRMATION
    after = shop.call("order_lookup", {"order_id": "SO2026112900105"}, user_id="u1001")
    assert after["data"]["status"] == "待付款"


def test_a_write_action_plans_that_write_not_a_read_instead() -> None:
    llm = ScriptedChatModel([calls(("order_lookup", {"order_id": "SO2026112900105"})),
                             calls(("order_cancel", {"order_id": "SO2026112900105"}))])
    plans = LLMToolPlanner(llm).plan(request("帮我取消订单SO2026112900105", action=CANCEL))
    assert plans == [{"name": "order_cancel", "args": {"order_id": "SO2026112900105"}}]
    assert any("asked for order_cancel" in str(m.content) for p in llm.prompts for m in p)


def test_through_the_graph_the_model_plans_and_the_node_runs_the_checked_call(tmp_path: Path) -> None:
    import json

    from langgraph.checkpoint.memory import InMemorySaver

    from graph.builder import build_graph
    from tests.fakes import ChatSession, fixture_index

    reply = json.dumps({"answer": "您的订单由中通快递承运【来源:tool:logistics_tracking#1】。", "cannot_answer": False},
                       ensure_ascii=False)
    # The LLM router decides first (tool); the named action's calls are planned by the LLM planner.
    route = json.dumps({"route": "tool", "domain": "orders", "intent": "logistics", "confidence": 0.95,
                        "reason": "order data"})
    llm = ScriptedChatModel([route,
                             calls(("logistics_tracking", {"order_id": "SO2026112300203"})),  # not the customer's words
                             calls(("logistics_tracking", {"orderNo": "so2026112500103"})),
                             reply])
    shop = ShopToolbox(tmp_path / "shop.sqlite")
    graph = build_graph(Deps(retriever=fixture_index(), shop=shop, llm=llm)).compile(checkpointer=InMemorySaver())
    chat = ChatSession(graph, context=Context(user_id="u1001", llm_verify=False))
    chat >> "订单2026112500103的快递到哪了"
    assert [c["args"] for c in chat.state["tool_calls"]] == [{"order_id": "SO2026112500103"}]
    assert chat.status == "answered" and "中通快递" in chat.answer
    assert any("was not given by the customer" in o for o in observations(llm))
    assert llm.remaining == 0


def test_deciding_whether_to_ask_the_router_spends_no_planner_call(tmp_path: Path) -> None:
    """A calibration whose only takeable route is the rules' own: the router is not asked, and
    the LLM planner is called once, for the turn's plan, not once more for the check."""
    import json

    from strategies.combined import GuardedRouter
    from strategies.llm.router import LLMRouter, RouterCalibration
    from strategies.rules.profiles import load_profile
    from strategies.rules.router import RulesRouter

    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"model": "m", "thresholds": {"tool": 0.5}}), encoding="utf-8")
    llm = ScriptedChatModel([calls(("logistics_tracking", {"order_id": "SO2026112500103"}))])
    planner = FallbackToolPlanner(LLMToolPlanner(llm), RulesToolPlanner())
    router = GuardedRouter(LLMRouter(llm, planner, calibration=RouterCalibration.load(path)),
                           RulesRouter(planner))
    turn = Turn(question=empty_question("订单SO2026112500103的快递到哪了"), profile=load_profile("shop"),
                tools=SPECS)
    decision = router.route(turn)
    assert decision["route"] == "tool" and "LLM router not asked" in decision["boundary_reason"]
    assert llm.remaining == 0 and len(llm.prompts) == 1  # one planner call; a second would raise
    # answer is takeable too: the router is asked, proposes tool, and the plan is made once
    path.write_text(json.dumps({"model": "m", "thresholds": {"tool": 0.5, "answer": 0.5}}), encoding="utf-8")
    route = json.dumps({"route": "tool", "domain": "orders", "intent": "logistics", "confidence": 0.95,
                        "reason": "order data"})
    llm = ScriptedChatModel([route, calls(("logistics_tracking", {"order_id": "SO2026112500103"}))])
    planner = FallbackToolPlanner(LLMToolPlanner(llm), RulesToolPlanner())
    router = GuardedRouter(LLMRouter(llm, planner, calibration=RouterCalibration.load(path)),
                           RulesRouter(planner))
    decision = router.route(turn)
    assert decision["route"] == "tool" and decision["tool_plan"][0]["name"] == "logistics_tracking"
    assert llm.remaining == 0 and len(llm.prompts) == 2  # the router's call and one planner call
