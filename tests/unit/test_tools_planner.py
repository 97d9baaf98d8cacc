"""The rules tool planner plans from the tools' declarations: any names, same plans."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from contracts.question import empty_question
from shop.decls import REGISTRY
from strategies.protocols import ToolRequest, Turn
from strategies.rules.tools import (
    RulesToolPlanner,
    action_tool,
    asked_fields,
    is_record_read,
    match_orders,
    needs_order_id,
    question_refs,
    status_filter,
)
from tools.types import ToolSpec

SPECS = REGISTRY.specs()
OID = "SO2026112500103"
# The same declarations under other names: a shop's own order system.
RENAMED = {"order_lookup": "get_order", "logistics_tracking": "track_parcel",
           "after_sales_apply": "open_case", "order_cancel": "cancel", "product_recommend": "find_goods"}


def renamed_specs() -> list[ToolSpec]:
    return [replace(s, name=RENAMED[s.name]) for s in SPECS]


def plan(question: str, tool: str, order_id: str | None = None, specs: list[ToolSpec] | None = None,
         action_args: dict | None = None) -> list[dict]:
    turn = Turn(question=empty_question(question), tools=tuple(specs or SPECS))
    action = {"intent": "x", "tool": tool, "label": "x", "args": action_args or {}}
    return [dict(p) for p in RulesToolPlanner().plan(ToolRequest(turn=turn, action=action, order_id=order_id))]


def names(plans: list[dict]) -> list[str]:
    return [p["name"] for p in plans]


@pytest.mark.parametrize(("question", "fields"), [
    ("SO2026112500103走的哪家快递，单号多少", ["carrier", "tracking_no"]),
    ("发货了吗", ["status", "latest"]),
    ("用什么付的款", ["pay_method"]),
    ("退款到哪一步了", ["status"]),
    ("查一下", []),
])
def test_asked_fields(question: str, fields: list[str]) -> None:
    assert asked_fields(question) == fields


def test_plan_follows_the_asked_fields() -> None:
    assert names(plan("用什么付的款", "order_lookup", OID)) == ["order_lookup"]
    assert names(plan("走的哪家快递", "order_lookup", OID)) == ["logistics_tracking"]
    both = plan("发货了吗", "order_lookup", OID)
    assert names(both) == ["order_lookup", "logistics_tracking"]
    assert both[1]["when_status"] and "待发货" not in both[1]["when_status"]
    assert "when_status" not in both[0]
    assert names(plan("查一下", "order_lookup", OID)) == ["order_lookup", "logistics_tracking"]


def test_without_an_id_the_own_orders_are_listed_and_followed_up() -> None:
    assert plan("老人手机那单走的什么快递", "order_lookup") == [
        {"name": "order_lookup", "args": {}, "resolve": True, "then": "logistics_tracking"}]
    assert plan("我有哪些订单还没付款", "order_lookup") == [{"name": "order_lookup", "args": {}}]
    assert plan("我的快递呢", "logistics_tracking")[0]["then"] == "logistics_tracking"


def test_renamed_tools_get_the_same_plans() -> None:
    cases = [("用什么付的款", "order_lookup", OID), ("走的哪家快递", "order_lookup", OID),
             ("发货了吗", "order_lookup", OID), ("老人手机那单走的什么快递", "order_lookup", None),
             ("帮我取消订单", "order_cancel", OID), ("推荐200元以内的耳机", "product_recommend", None)]
    for question, tool, oid in cases:
        ours = plan(question, tool, oid)
        theirs = plan(question, RENAMED[tool], oid, renamed_specs())
        for p in ours:
            p["name"] = RENAMED[p["name"]]
            if "then" in p:
                p["then"] = RENAMED[p["then"]]
        assert theirs == ours, question


def test_action_can_name_a_capability_instead_of_a_tool() -> None:
    found = action_tool({"capability": "cancel_order"}, renamed_specs())
    assert found is not None and found.name == "cancel"
    assert action_tool({"tool": "nope"}, SPECS) is None
    assert plan("x", "nope") == []


def test_arguments_come_from_the_declared_sources() -> None:
    assert plan("推荐200元以内的降噪耳机", "product_recommend") == [
        {"name": "product_recommend", "args": {"query": "推荐200元以内的降噪耳机", "max_price": 200.0}}]
    long = "质量问题" * 80
    apply = plan(long, "after_sales_apply", OID, action_args={"kind": "return"})[0]
    assert apply["args"] == {"kind": "return", "order_id": OID, "reason": long[:200]}


def test_writes_without_an_id_need_one() -> None:
    call = plan("帮我取消订单", "order_cancel")[0]
    assert needs_order_id(call, SPECS)
    assert not needs_order_id(plan("帮我取消订单", "order_cancel", OID)[0], SPECS)
    assert not needs_order_id(plan("我的订单", "order_lookup")[0], SPECS)


@pytest.mark.parametrize("question", ["订单2026112800104到哪了", "so 2026112800104到哪了",
                                      "订单20261128\u200b00104到哪了", "订单２０２６１１２８００１０４到哪了"])
def test_what_the_customer_wrote_counts_over_a_carried_id(question: str) -> None:
    calls = plan(question, "logistics_tracking", order_id="SO2026112000102")  # carried from history
    assert [c["args"] for c in calls] == [{"order_id": "SO2026112800104"}]


def test_a_partial_reference_is_never_completed_from_history() -> None:
    calls = plan("尾号0104的订单到哪了", "logistics_tracking", order_id="SO2026112000102")
    assert calls == [{"name": "order_lookup", "args": {}, "resolve": True, "then": "logistics_tracking",
                      "ref": "0104", "ref_suffix": True}]
    cancel = plan("取消尾号0104的订单", "order_cancel", order_id="SO2026112000102")[0]
    assert needs_order_id(cancel, SPECS)  # a write with a partial reference: the customer is asked


def test_record_reads_and_refs_are_read_from_the_declarations() -> None:
    specs = {s.name: s for s in SPECS}
    assert is_record_read(specs["order_lookup"]) and is_record_read(specs["logistics_tracking"])
    assert not is_record_read(specs["order_cancel"]) and not is_record_read(specs["product_recommend"])
    assert [r.value for r in question_refs("so 2026112800104", SPECS)] == ["SO2026112800104"]
    assert question_refs("推荐耳机", SPECS) == []


def test_listing_filters_and_item_matching_ignore_numbers() -> None:
    assert status_filter("我有个订单还没付钱，是哪个") == ("待付款",)
    assert status_filter("订单列表") == ()
    orders: list[dict[str, Any]] = [{"order_id": "A", "items": ["静享 Pro 主动降噪蓝牙耳机"]},
              {"order_id": "B", "items": [{"name": "老人手机 4G 全网通", "qty": 1}]},
              {"order_id": "C", "items": ["2026 新款 1128 型 0104 充电宝"]}]
    assert match_orders("我买的那个降噪耳机到了没", orders) == ["A"]
    assert match_orders("老人手机那单走的什么快递", orders) == ["B"]
    assert match_orders("我的订单呢", orders) == []
    # digits of an id (or of a fragment) never match a product name that contains them
    assert match_orders("订单2026112800104到哪了", orders) == []
    assert match_orders("so 2026 1128 00104", orders) == []
