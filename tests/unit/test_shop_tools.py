"""The business tools: success and failure paths, isolation between users, writes, the call path."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from shop import seed
from shop.db import connect
from shop.tools import (
    MSG_EMPTY,
    MSG_ERROR,
    MSG_NO_ORDERS,
    MSG_NOT_SHIPPED,
    MSG_ORDER_NOT_FOUND,
    MSG_TIMEOUT,
    ShopToolbox,
    ToolCall,
    ToolFailure,
    ToolOutput,
)
from tools.types import ToolSpec

U1_SIGNED_RECENT = "SO2026112000102"  # u1001, 已签收 2026-11-23, earphones (7天无理由)
U1_SIGNED_OLD = "SO2026101500101"  # u1001, 已签收 2026-10-18
U1_IN_TRANSIT = "SO2026112500103"  # u1001, 运输中
U1_TO_SHIP = "SO2026112800104"  # u1001, 待发货, 花呗 172.00
U1_UNPAID = "SO2026112900105"  # u1001, 待付款
U2_CRAB = "SO2026112300203"  # u1002, 已签收 2026-11-25, fresh food (not 7天无理由)
U5_OPEN_TICKET = "SO2026111700502"  # u1005, 已签收, open exchange ticket


@pytest.fixture
def box(tmp_path: Path) -> ShopToolbox:
    return ShopToolbox(tmp_path / "shop.sqlite")


def dump(box: ShopToolbox) -> str:
    conn = connect(box.db_path)
    try:
        return "\n".join(conn.iterdump())
    finally:
        conn.close()


def count(box: ShopToolbox, table: str) -> int:
    conn = connect(box.db_path)
    try:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


def assert_failure(result: dict[str, Any], code: int) -> None:
    assert result["code"] == code, result
    assert result["valid"] is False
    assert result["message"]


# --- specs --------------------------------------------------------------------------------


def test_specs_are_the_capability_boundary(box: ShopToolbox) -> None:
    specs = {s.name: s for s in box.specs()}
    assert set(specs) == {
        "order_lookup",
        "logistics_tracking",
        "after_sales_apply",
        "order_cancel",
        "product_recommend",
    }
    assert {n for n, s in specs.items() if s.write} == {"after_sales_apply", "order_cancel"}
    assert not any(
        "address" in n or "address" in " ".join(s.capabilities) for n, s in specs.items()
    )
    result = box.call("address_change", {"order_id": U1_TO_SHIP}, user_id="u1001")
    assert_failure(dict(result), 404)


# --- order_lookup -------------------------------------------------------------------------


def test_order_lookup_returns_the_callers_order(box: ShopToolbox) -> None:
    result = box.call("order_lookup", {"order_id": f"  {U1_SIGNED_OLD.lower()} "}, user_id="u1001")
    assert result["code"] == 0 and result["valid"] is True
    assert result["source"] == "order_lookup" and result["timestamp"] > 0
    data = result["data"]
    assert data["order_id"] == U1_SIGNED_OLD
    assert data["status"] == "已签收" and data["pay_method"] == "信用卡"
    assert [i["product_id"] for i in data["items"]] == ["P1001", "P6003"]
    assert data["amount"] == 2938.0 and data["discount"] == 100.0
    assert data["signed_at"] == "2026-10-18 11:24:00"


def test_order_lookup_without_id_lists_recent_orders_newest_first(box: ShopToolbox) -> None:
    result = box.call("order_lookup", {}, user_id="u1003")
    assert result["valid"] is True
    ids = [o["order_id"] for o in result["data"]["orders"]]
    own = sorted((o for o in seed.ORDERS if o["user_id"] == "u1003"), key=lambda o: o["created_at"])
    assert ids == [o["id"] for o in reversed(own)]
    assert result["data"]["count"] == len(own)


def test_order_lookup_for_a_user_without_orders(box: ShopToolbox) -> None:
    result = box.call("order_lookup", {}, user_id="u9999")
    assert_failure(dict(result), 404)
    assert result["message"] == MSG_NO_ORDERS and result["data"] is None


def test_another_users_order_is_denied_without_revealing_it(box: ShopToolbox) -> None:
    denied = box.call("order_lookup", {"order_id": U1_SIGNED_OLD}, user_id="u1002")
    missing = box.call("order_lookup", {"order_id": "SO2026101500999"}, user_id="u1002")
    assert_failure(dict(denied), 403)
    assert_failure(dict(missing), 404)
    assert denied["message"] == missing["message"] == MSG_ORDER_NOT_FOUND
    assert denied["data"] is None and missing["data"] is None
    for word in ("2938", "张伟", "已签收", "X20"):
        assert word not in denied["message"]
    tracking = box.call("logistics_tracking", {"order_id": U1_SIGNED_OLD}, user_id="u1002")
    assert_failure(dict(tracking), 403)
    assert tracking["message"] == MSG_ORDER_NOT_FOUND and tracking["data"] is None


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"order_id": "12345"}, "订单号格式不正确"),
        ({"order_id": 2026110100123}, "必须是字符串"),
        ({"order_id": U1_SIGNED_OLD, "verbose": True}, "不支持参数"),
        ({"order_id": U1_SIGNED_OLD, "user_id": "u1001"}, "user_id"),
        ({"user_id": "u1001"}, "user_id"),
    ],
)
def test_bad_arguments_are_rejected_with_400(
    box: ShopToolbox, args: dict[str, Any], fragment: str
) -> None:
    result = box.call("order_lookup", args, user_id="u1002")
    assert_failure(dict(result), 400)
    assert fragment in result["message"]


def test_args_that_are_not_a_dict_and_a_missing_user(box: ShopToolbox) -> None:
    assert_failure(dict(box.call("order_lookup", ["SO"], user_id="u1001")), 400)  # type: ignore[arg-type]
    assert_failure(dict(box.call("order_lookup", {}, user_id="  ")), 403)


# --- logistics_tracking -------------------------------------------------------------------


def test_logistics_tracking_returns_carrier_and_events(box: ShopToolbox) -> None:
    result = box.call("logistics_tracking", {"order_id": U1_IN_TRANSIT}, user_id="u1001")
    assert result["valid"] is True
    data = result["data"]
    assert data["carrier"] == "中通快递" and data["tracking_no"] == "ZT78230011456"
    assert len(data["events"]) == 3 and data["latest"] == data["events"][-1]
    assert data["latest"]["location"] == "上海"


def test_logistics_tracking_of_an_unshipped_order(box: ShopToolbox) -> None:
    result = box.call("logistics_tracking", {"order_id": U1_TO_SHIP}, user_id="u1001")
    assert_failure(dict(result), 404)
    assert result["message"] == MSG_NOT_SHIPPED


def test_logistics_tracking_requires_an_order_id(box: ShopToolbox) -> None:
    result = box.call("logistics_tracking", {}, user_id="u1001")
    assert_failure(dict(result), 400)
    assert "order_id" in result["message"]


# --- after_sales_apply --------------------------------------------------------------------


def test_after_sales_apply_creates_a_ticket_and_an_audit_row(box: ShopToolbox) -> None:
    tickets, audits = count(box, "after_sales_tickets"), count(box, "audit_log")
    args = {"order_id": U1_SIGNED_RECENT, "kind": "return", "reason": "不喜欢，七天无理由退货"}
    result = box.call("after_sales_apply", args, user_id="u1001")
    assert result["code"] == 0 and result["valid"] is True
    ticket = result["data"]
    assert ticket["ticket_id"] == "AS202611290001" and ticket["status"] == "待审核"
    assert count(box, "after_sales_tickets") == tickets + 1
    assert count(box, "audit_log") == audits + 1
    conn = connect(box.db_path)
    try:
        row = conn.execute(
            "SELECT * FROM after_sales_tickets WHERE id = ?", (ticket["ticket_id"],)
        ).fetchone()
        assert (row["order_id"], row["user_id"], row["kind"]) == (
            U1_SIGNED_RECENT,
            "u1001",
            "return",
        )
        audit = conn.execute("SELECT * FROM audit_log").fetchone()
        assert (audit["user_id"], audit["tool"]) == ("u1001", "after_sales_apply")
        assert U1_SIGNED_RECENT in audit["args"]
        status = conn.execute(
            "SELECT status FROM orders WHERE id = ?", (U1_SIGNED_RECENT,)
        ).fetchone()[0]
        assert status == "已签收"  # the ticket awaits review; the order itself is unchanged
    finally:
        conn.close()
    again = box.call("after_sales_apply", args, user_id="u1001")
    assert_failure(dict(again), 422)
    assert "AS202611290001" in again["message"]


@pytest.mark.parametrize(
    ("order_id", "user_id", "reason", "code", "fragment"),
    [
        (U1_SIGNED_OLD, "u1001", "不想要了", 422, "超过签收后 7 天"),
        (U1_IN_TRANSIT, "u1001", "不想要了", 422, "签收后再申请"),
        (U1_TO_SHIP, "u1001", "不想要了", 422, "取消订单"),
        (U1_UNPAID, "u1001", "不想要了", 422, "尚未付款"),
        (U2_CRAB, "u1002", "不想吃了", 422, "不支持7天无理由"),
        (U5_OPEN_TICKET, "u1005", "尺码不合适", 422, "AS202611250001"),
        ("SO2026110100123", "u1003", "不想要了", 422, "已退款"),
        (U1_SIGNED_RECENT, "u1002", "不想要了", 403, "未查询到该订单"),
    ],
)
def test_ineligible_after_sales_requests_change_nothing(
    box: ShopToolbox, order_id: str, user_id: str, reason: str, code: int, fragment: str
) -> None:
    before = dump(box)
    result = box.call(
        "after_sales_apply",
        {"order_id": order_id, "kind": "return", "reason": reason},
        user_id=user_id,
    )
    assert_failure(dict(result), code)
    assert fragment in result["message"]
    assert dump(box) == before


def test_quality_problems_lift_the_seven_day_exclusion(box: ShopToolbox) -> None:
    args = {"order_id": U2_CRAB, "kind": "refund", "reason": "收到时螃蟹已死，质量问题"}
    result = box.call("after_sales_apply", args, user_id="u1002")
    assert result["valid"] is True and result["data"]["kind_label"] == "仅退款"


@pytest.mark.parametrize(
    ("today", "ok"), [("2026-11-30 23:59:59", True), ("2026-12-01 00:00:01", False)]
)
def test_the_seven_day_window_boundary(tmp_path: Path, today: str, ok: bool) -> None:
    # U1_SIGNED_RECENT was signed on 2026-11-23: day 7 is 2026-11-30.
    box = ShopToolbox(tmp_path / "shop.sqlite", now=lambda: datetime.fromisoformat(today))
    args = {"order_id": U1_SIGNED_RECENT, "kind": "exchange", "reason": "换个颜色"}
    result = box.call("after_sales_apply", args, user_id="u1001")
    assert result["valid"] is ok
    assert result["code"] == (0 if ok else 422)


@pytest.mark.parametrize(
    "args",
    [
        {"order_id": U1_SIGNED_RECENT, "kind": "upgrade", "reason": "x"},
        {"order_id": U1_SIGNED_RECENT, "kind": "return", "reason": "   "},
        {"order_id": U1_SIGNED_RECENT, "kind": "return"},
        {"order_id": U1_SIGNED_RECENT, "kind": "return", "reason": "长" * 201},
    ],
)
def test_after_sales_bad_arguments(box: ShopToolbox, args: dict[str, Any]) -> None:
    before = dump(box)
    assert_failure(dict(box.call("after_sales_apply", args, user_id="u1001")), 400)
    assert dump(box) == before


# --- order_cancel -------------------------------------------------------------------------


def order_row(box: ShopToolbox, order_id: str) -> dict[str, Any]:
    conn = connect(box.db_path)
    try:
        return dict(conn.execute("SELECT * FROM orders WHERE id = ?", (order_id,)).fetchone())
    finally:
        conn.close()


def test_cancelling_a_paid_order_starts_the_refund(box: ShopToolbox) -> None:
    result = box.call("order_cancel", {"order_id": U1_TO_SHIP}, user_id="u1001")
    assert result["valid"] is True
    assert result["data"]["refund_amount"] == 172.0 and result["data"]["refund_status"] == "退款中"
    row = order_row(box, U1_TO_SHIP)
    assert (row["status"], row["refund_status"]) == ("已取消", "退款中")
    assert row["cancelled_at"] == seed.DEMO_NOW
    assert count(box, "audit_log") == 1
    again = box.call("order_cancel", {"order_id": U1_TO_SHIP}, user_id="u1001")
    assert_failure(dict(again), 422)
    assert count(box, "audit_log") == 1


def test_cancelling_an_unpaid_order(box: ShopToolbox) -> None:
    result = box.call("order_cancel", {"order_id": U1_UNPAID}, user_id="u1001")
    assert result["valid"] is True and result["data"]["refund_amount"] == 0.0
    row = order_row(box, U1_UNPAID)
    assert (row["status"], row["refund_status"]) == ("已取消", None)


@pytest.mark.parametrize(
    ("order_id", "user_id", "code"),
    [(U1_IN_TRANSIT, "u1001", 422), (U1_SIGNED_OLD, "u1001", 422), (U1_TO_SHIP, "u1003", 403)],
)
def test_orders_that_cannot_be_cancelled_are_untouched(
    box: ShopToolbox, order_id: str, user_id: str, code: int
) -> None:
    before = dump(box)
    assert_failure(dict(box.call("order_cancel", {"order_id": order_id}, user_id=user_id)), code)
    assert dump(box) == before


# --- product_recommend --------------------------------------------------------------------


def test_product_recommend_ranks_by_bigram_overlap(box: ShopToolbox) -> None:
    result = box.call("product_recommend", {"query": "想买一款拍照好的5G手机"}, user_id="u1001")
    assert result["valid"] is True
    products = result["data"]["products"]
    assert products[0]["category"] == "手机" and "手机" in products[0]["matched"]
    scores = [p["score"] for p in products]
    assert scores == sorted(scores, reverse=True)
    assert all(p["stock"] > 0 for p in products)


def test_product_recommend_filters(box: ShopToolbox) -> None:
    cheap = box.call("product_recommend", {"query": "手机", "max_price": "500"}, user_id="u1001")
    assert [p["product_id"] for p in cheap["data"]["products"]] == ["P6003", "P1003"]
    books = box.call(
        "product_recommend", {"query": "科幻小说", "category": "图书"}, user_id="u1001"
    )
    assert [p["product_id"] for p in books["data"]["products"]] == ["P7002"]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"query": "扫地机器人"}, 404),  # the only one is out of stock
        ({"query": "游艇"}, 404),
        ({"query": "手机", "category": "汽车"}, 404),
        ({"query": ""}, 400),
        ({"query": "手机", "max_price": -1}, 400),
        ({"query": "手机", "max_price": "便宜点"}, 400),
    ],
)
def test_product_recommend_failures(box: ShopToolbox, args: dict[str, Any], code: int) -> None:
    assert_failure(dict(box.call("product_recommend", args, user_id="u1001")), code)


# --- the call path for registered tools ---------------------------------------------------

ECHO_SPEC = ToolSpec(
    name="probe",
    description="测试用",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": []},
)


def test_a_tool_that_raises_becomes_500_without_leaking(
    box: ShopToolbox, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(call: ToolCall) -> Any:
        raise RuntimeError("secret connection string postgres://x")

    box.register(ECHO_SPEC, boom)
    result = box.call("probe", {}, user_id="u1001")
    assert_failure(dict(result), 500)
    assert result["message"] == MSG_ERROR and "secret" not in result["message"]
    assert "RuntimeError" in caplog.text and "secret" not in caplog.text


def test_even_base_exceptions_in_a_tool_do_not_escape(box: ShopToolbox) -> None:
    def bail(call: ToolCall) -> Any:
        raise SystemExit(3)

    box.register(ECHO_SPEC, bail)
    assert_failure(dict(box.call("probe", {}, user_id="u1001")), 500)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_a_tool_that_sleeps_past_the_timeout_becomes_408(
    tmp_path: Path, release: threading.Event
) -> None:
    box = ShopToolbox(tmp_path / "shop.sqlite", timeout=0.2)

    def stall(call: ToolCall) -> Any:
        release.wait(30)
        return {"late": True}

    box.register(ECHO_SPEC, stall)
    result = box.call("probe", {}, user_id="u1001")
    assert_failure(dict(result), 408)
    assert result["message"] == MSG_TIMEOUT


def test_a_tool_that_finishes_in_time_is_not_cut_off(tmp_path: Path) -> None:
    box = ShopToolbox(tmp_path / "shop.sqlite", timeout=5.0)

    def quick(call: ToolCall) -> Any:
        time.sleep(0.01)
        return {"q": call.args.get("q"), "user": call.user_id}

    box.register(ECHO_SPEC, quick)
    result = box.call("probe", {"q": " hi "}, user_id="u1004")
    assert result["valid"] is True and result["data"] == {"q": "hi", "user": "u1004"}


@pytest.mark.parametrize("empty", [None, [], {}, ""])
def test_a_tool_that_returns_nothing_becomes_404(box: ShopToolbox, empty: Any) -> None:
    box.register(ECHO_SPEC, lambda call: empty)
    result = box.call("probe", {}, user_id="u1001")
    assert_failure(dict(result), 404)
    assert result["message"] == MSG_EMPTY and result["data"] is None


def test_tool_output_and_tool_failure_pass_through(box: ShopToolbox) -> None:
    box.register(ECHO_SPEC, lambda call: ToolOutput({"n": 1}, "好了"))
    ok = box.call("probe", {}, user_id="u1001")
    assert (ok["code"], ok["valid"], ok["message"], ok["data"]) == (0, True, "好了", {"n": 1})

    def refuse(call: ToolCall) -> Any:
        raise ToolFailure(422, "不符合规则", {"why": "test"})

    box.register(ECHO_SPEC, refuse)
    bad = box.call("probe", {}, user_id="u1001")
    assert (bad["code"], bad["valid"], bad["message"], bad["data"]) == (
        422,
        False,
        "不符合规则",
        {"why": "test"},
    )


def test_a_write_that_outlives_its_timeout_is_rolled_back(tmp_path: Path) -> None:
    box = ShopToolbox(tmp_path / "shop.sqlite", timeout=0.2)
    before = dump(box)
    blocker = connect(box.db_path)
    blocker.execute("BEGIN IMMEDIATE")  # the tool's own write transaction waits behind this lock
    try:
        result = box.call("order_cancel", {"order_id": U1_TO_SHIP}, user_id="u1001")
        assert_failure(dict(result), 408)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    workers = [t for t in threading.enumerate() if t.name == "tool-order_cancel"]
    for worker in workers:
        worker.join(30)
    assert workers and not any(w.is_alive() for w in workers)
    assert dump(box) == before


def test_logs_do_not_reveal_whether_another_users_order_exists(box: ShopToolbox, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    def logged(order_id: str) -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="shop.tools"):
            box.call("order_lookup", {"order_id": order_id}, user_id="u1001")
        return [r.getMessage().replace(order_id, "ID") for r in caplog.records]

    assert logged(U2_CRAB) == logged("SO2099010100999")  # foreign vs missing: the same lines
    assert all(r.levelno < logging.WARNING for r in caplog.records)
