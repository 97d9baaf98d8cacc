"""The business tools over the demo shop database (a :class:`tools.backend.ToolBackend`).

The tools are declared in :mod:`shop.decls` (names, generated schemas, what each answers);
this module implements them over SQLite. ``sqlite_backend(settings)`` is the default factory
of :mod:`tools.loader` (``CSAGENT_TOOLS=shop.tools:sqlite_backend``).

``ShopToolbox.call(name, args, *, user_id)`` never raises: it validates the arguments against
the tool's JSON schema (bad or missing → 400; an ``args`` dict naming ``user_id`` → 400, since
the caller's identity only ever comes from the run context), runs the tool in a worker thread
with a timeout (→ 408), turns an exception into 500 (the error type is logged, not leaked) and
an empty result into 404. Another user's order gives 403 with exactly the same message as a
missing one, so the reply never reveals that the order exists.

Rules the write tools apply (all against the shop clock, ``seed.DEMO_NOW`` unless ``now`` is
given, so that datasets do not rot):

* ``after_sales_apply`` (return/refund/exchange): the order must be signed (已签收) no more than
  ``seed.RETURN_WINDOW_DAYS`` days ago (calendar days), have no open ticket (待审核/处理中), and
  contain only 7天无理由 items unless the reason states a quality problem (质量/破损/错发…).
  Success creates a ticket (status 待审核) and an audit row in one transaction.
* ``order_cancel``: only 待付款 (→ 已取消) or 待发货 (→ 已取消 with refund_status 退款中).
  Success updates the order and writes an audit row in one transaction.

Rejected requests change nothing and come back with code 422 (``CODE_REJECTED``) and the reason.
A write tool that is still running when its call times out rolls back instead of committing.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from shop import seed
from shop.db import connect, ensure_db
from shop.decls import DECLS
from tools.backend import run_with_timeout
from tools.types import (
    CODE_BAD_ARGS,
    CODE_ERROR,
    CODE_FORBIDDEN,
    CODE_NOT_FOUND,
    CODE_OK,
    CODE_REJECTED,
    CODE_TIMEOUT,
    ToolResult,
    ToolSpec,
)

logger = logging.getLogger(__name__)

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
ORDER_ID_RE = re.compile(r"^SO\d{13}$")
RECENT_ORDERS_LIMIT = 10
RECOMMEND_LIMIT = 5

MSG_ORDER_NOT_FOUND = "未查询到该订单，请核对订单号（仅可查询您本人账户下的订单）"
MSG_NO_ORDERS = "未查询到您名下的订单"
MSG_NOT_SHIPPED = "该订单尚未发货，暂无物流信息"
MSG_TIMEOUT = "查询超时，请稍后再试"
MSG_ERROR = "系统暂时无法完成该操作，请稍后再试或转人工客服"
MSG_EMPTY = "未查询到相关结果"
MSG_NO_PRODUCTS = "暂未找到符合条件的在售商品"

KIND_LABELS = {"return": "退货退款", "refund": "仅退款", "exchange": "换货"}
QUALITY_WORDS = (
    "质量",
    "破损",
    "损坏",
    "坏了",
    "坏果",
    "变质",
    "腐烂",
    "错发",
    "漏发",
    "少发",
    "发错",
    "瑕疵",
    "故障",
    "无法使用",
    "不能用",
    "有问题",
)


class ToolFailure(Exception):
    """Raised inside a tool for an expected failure: becomes a ``valid=False`` result."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


@dataclass(frozen=True)
class ToolOutput:
    """What a tool returns on success: the data and a plain Chinese sentence about it."""

    data: Any
    message: str = ""


@dataclass(frozen=True)
class ToolCall:
    """One invocation, as a tool function sees it: validated args, the caller and the shop clock."""

    name: str
    args: dict[str, Any]
    user_id: str
    db_path: Path
    now: datetime
    cancelled: threading.Event = field(default_factory=threading.Event, compare=False)

    def connect(self) -> sqlite3.Connection:
        """Open a connection to the shop database (one per call; close it when done)."""
        return connect(self.db_path)


ToolFn = Callable[[ToolCall], Any]


@dataclass
class _Registered:
    spec: ToolSpec
    fn: ToolFn = field(repr=False)


def _now_text(now: datetime) -> str:
    return now.strftime(TIME_FORMAT)


def _parse_time(text: str) -> datetime:
    return datetime.strptime(text, TIME_FORMAT)


# ---------------------------------------------------------------------------------------------
# Argument validation (a small JSON-schema subset: object, properties, required, type, enum,
# minLength, maxLength, minimum, exclusiveMinimum, additionalProperties=False).
# ---------------------------------------------------------------------------------------------


def validate_args(spec: ToolSpec, args: Any) -> dict[str, Any]:
    """Return the cleaned arguments for ``spec`` or raise ``ToolFailure`` with code 400.

    Strings are stripped, ``order_id`` is upper-cased and must look like ``SO`` + 13 digits,
    numbers given as numeric strings are converted, ``None`` values count as absent.

    Args:
        spec: The tool's spec; its ``parameters`` is the JSON schema.
        args: The raw arguments (must be a dict).

    Returns:
        A new dict with only the declared, validated arguments.

    Raises:
        ToolFailure: With code 400 and a clear Chinese message.

    """
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise ToolFailure(
            CODE_BAD_ARGS, f"参数格式错误：{spec.name} 的参数必须是对象（JSON object）"
        )
    if "user_id" in args:
        raise ToolFailure(CODE_BAD_ARGS, "参数中不能包含 user_id：用户身份只取自当前登录会话")
    schema = spec.parameters or {}
    props: dict[str, Any] = schema.get("properties", {})
    unknown = sorted(str(k) for k in args if k not in props)
    if unknown and schema.get("additionalProperties", True) is False:
        raise ToolFailure(CODE_BAD_ARGS, f"{spec.name} 不支持参数：{', '.join(unknown)}")
    clean: dict[str, Any] = {}
    for key, rule in props.items():
        value = args.get(key)
        if isinstance(value, str):
            value = value.strip() or None
        if value is None:
            if key in schema.get("required", []):
                raise ToolFailure(
                    CODE_BAD_ARGS, f"缺少必填参数：{key}（{rule.get('description', '')}）"
                )
            continue
        clean[key] = _check_value(spec.name, key, rule, value)
    return clean


def _check_value(tool: str, key: str, rule: Mapping[str, Any], value: Any) -> Any:
    kind = rule.get("type")
    if kind == "string":
        if not isinstance(value, str):
            raise ToolFailure(CODE_BAD_ARGS, f"参数 {key} 必须是字符串")
        if key.endswith("_id"):
            value = value.upper()
        if key == "order_id" and not ORDER_ID_RE.match(value):
            raise ToolFailure(
                CODE_BAD_ARGS, "订单号格式不正确：应为 SO 加 13 位数字，例如 SO2026110100123"
            )
        if "pattern" in rule and not re.search(rule["pattern"], value):
            raise ToolFailure(CODE_BAD_ARGS, f"参数 {key} 格式不正确（{rule.get('description', '')}）")
        if len(value) < rule.get("minLength", 0):
            raise ToolFailure(CODE_BAD_ARGS, f"参数 {key} 不能为空")
        if "maxLength" in rule and len(value) > rule["maxLength"]:
            raise ToolFailure(CODE_BAD_ARGS, f"参数 {key} 过长（最多 {rule['maxLength']} 字）")
    elif kind in ("number", "integer"):
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ToolFailure(CODE_BAD_ARGS, f"参数 {key} 必须是数字") from None
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            raise ToolFailure(CODE_BAD_ARGS, f"参数 {key} 必须是数字")
        if "exclusiveMinimum" in rule and value <= rule["exclusiveMinimum"]:
            raise ToolFailure(CODE_BAD_ARGS, f"参数 {key} 必须大于 {rule['exclusiveMinimum']}")
        value = float(value) if kind == "number" else int(value)
    if "enum" in rule and value not in rule["enum"]:
        raise ToolFailure(
            CODE_BAD_ARGS, f"参数 {key} 只能是 {' / '.join(map(str, rule['enum']))} 之一"
        )
    return value


# ---------------------------------------------------------------------------------------------
# Row helpers
# ---------------------------------------------------------------------------------------------


def _load_order(conn: sqlite3.Connection, order_id: str, user_id: str) -> sqlite3.Row:
    """Return the order row if it belongs to ``user_id``; else 404/403 with the same message."""
    row = conn.execute("SELECT * FROM orders WHERE id = ?", (order_id,)).fetchone()
    if row is None or row["user_id"] != user_id:
        # One log line for both cases, so that no log reveals whether another user's order exists
        # (the audit of who asked for what is the caller's trace).
        logger.debug("order %s is not visible to user %s", order_id, user_id)
        raise ToolFailure(CODE_NOT_FOUND if row is None else CODE_FORBIDDEN, MSG_ORDER_NOT_FOUND)
    return row


def _order_detail(conn: sqlite3.Connection, row: sqlite3.Row) -> dict[str, Any]:
    items = [
        {
            "product_id": r["product_id"],
            "name": r["name"],
            "qty": r["qty"],
            "price": r["price"],
            "subtotal": round(r["qty"] * r["price"], 2),
        }
        for r in conn.execute(
            "SELECT * FROM order_items WHERE order_id = ? ORDER BY line_no", (row["id"],)
        )
    ]
    tickets = [
        {
            "ticket_id": t["id"],
            "kind": t["kind"],
            "kind_label": KIND_LABELS.get(t["kind"], t["kind"]),
            "status": t["status"],
            "created_at": t["created_at"],
        }
        for t in conn.execute(
            "SELECT * FROM after_sales_tickets WHERE order_id = ? ORDER BY created_at", (row["id"],)
        )
    ]
    return {
        "order_id": row["id"],
        "status": row["status"],
        "created_at": row["created_at"],
        "paid_at": row["paid_at"],
        "pay_method": row["pay_method"],
        "items": items,
        "goods_amount": row["goods_amount"],
        "shipping_fee": row["shipping_fee"],
        "discount": row["discount"],
        "amount": row["amount"],
        "shipping_region": row["shipping_region"],
        "signed_at": row["signed_at"],
        "cancelled_at": row["cancelled_at"],
        "refund_status": row["refund_status"],
        "after_sales": tickets,
    }


def _audit(conn: sqlite3.Connection, call: ToolCall, result: Mapping[str, Any]) -> None:
    conn.execute(
        "INSERT INTO audit_log (ts, user_id, tool, args, result) VALUES (?,?,?,?,?)",
        (
            _now_text(call.now),
            call.user_id,
            call.name,
            json.dumps(call.args, ensure_ascii=False, sort_keys=True),
            json.dumps(result, ensure_ascii=False, sort_keys=True),
        ),
    )


def _commit(conn: sqlite3.Connection, call: ToolCall) -> None:
    """Commit a write unless the call already timed out (then the caller rolls back)."""
    if call.cancelled.is_set():
        logger.warning("tool %s finished after its timeout; rolling back", call.name)
        raise ToolFailure(CODE_TIMEOUT, MSG_TIMEOUT)
    conn.execute("COMMIT")


def _money(value: float) -> str:
    return f"{value:.2f}"


# ---------------------------------------------------------------------------------------------
# The tools
# ---------------------------------------------------------------------------------------------


def order_lookup(call: ToolCall) -> ToolOutput:
    """Return one of the caller's orders, or their recent orders when no id is given."""
    conn = call.connect()
    try:
        order_id = call.args.get("order_id")
        if order_id:
            detail = _order_detail(conn, _load_order(conn, order_id, call.user_id))
            return ToolOutput(detail, f"已查询到订单 {order_id}，当前状态：{detail['status']}")
        rows = conn.execute(
            "SELECT * FROM orders WHERE user_id = ? ORDER BY created_at DESC LIMIT ?",
            (call.user_id, RECENT_ORDERS_LIMIT),
        ).fetchall()
        if not rows:
            raise ToolFailure(CODE_NOT_FOUND, MSG_NO_ORDERS)
        orders = []
        for row in rows:
            names = [
                r["name"]
                for r in conn.execute(
                    "SELECT name FROM order_items WHERE order_id = ? ORDER BY line_no", (row["id"],)
                )
            ]
            orders.append(
                {
                    "order_id": row["id"],
                    "created_at": row["created_at"],
                    "status": row["status"],
                    "amount": row["amount"],
                    "items": names,
                }
            )
        return ToolOutput(
            {"orders": orders, "count": len(orders)}, f"已查询到您最近的 {len(orders)} 笔订单"
        )
    finally:
        conn.close()


def logistics_tracking(call: ToolCall) -> ToolOutput:
    """Return the carrier, tracking number and events of one of the caller's orders."""
    conn = call.connect()
    try:
        order = _load_order(conn, call.args["order_id"], call.user_id)
        ship = conn.execute("SELECT * FROM shipments WHERE order_id = ?", (order["id"],)).fetchone()
        if ship is None:
            raise ToolFailure(
                CODE_NOT_FOUND,
                MSG_NOT_SHIPPED,
                {"order_id": order["id"], "status": order["status"]},
            )
        events = [
            {"time": e["time"], "location": e["location"], "description": e["description"]}
            for e in conn.execute(
                "SELECT * FROM shipment_events WHERE order_id = ? ORDER BY seq", (order["id"],)
            )
        ]
        latest = events[-1] if events else None
        data = {
            "order_id": order["id"],
            "status": order["status"],
            "carrier": ship["carrier"],
            "tracking_no": ship["tracking_no"],
            "shipped_at": ship["shipped_at"],
            "events": events,
            "latest": latest,
        }
        message = f"订单 {order['id']} 由{ship['carrier']}承运，运单号 {ship['tracking_no']}"
        if latest:
            message += f"；最新：{latest['time']} {latest['location']} {latest['description']}"
        return ToolOutput(data, message)
    finally:
        conn.close()


def _after_sales_block(conn: sqlite3.Connection, call: ToolCall, order: sqlite3.Row) -> str | None:
    """Return why the after-sales request is not allowed, or None when it is."""
    open_ticket = conn.execute(
        "SELECT id, status FROM after_sales_tickets WHERE order_id = ? AND status IN (?, ?)",
        (order["id"], *seed.OPEN_TICKET_STATUSES),
    ).fetchone()
    if open_ticket is not None:
        return (
            f"该订单已有处理中的售后申请（工单号 {open_ticket['id']}，状态：{open_ticket['status']}），"
            "请勿重复提交"
        )
    status = order["status"]
    if status == "待付款":
        return "该订单尚未付款，无需申请售后，可直接取消订单"
    if status == "待发货":
        return "该订单尚未发货，可直接取消订单，已付款项将原路退回"
    if status in ("已发货", "运输中"):
        return f"该订单尚在配送中（状态：{status}），请在签收后再申请售后"
    if status in ("已取消", "退款中", "已退款"):
        return f"该订单当前状态为「{status}」，不能再申请售后"
    if status != "已签收" or not order["signed_at"]:
        return f"该订单当前状态为「{status}」，暂不能申请售后"
    days = (call.now.date() - _parse_time(order["signed_at"]).date()).days
    if days > seed.RETURN_WINDOW_DAYS:
        return (
            f"该订单于 {order['signed_at'][:10]} 签收，已超过签收后 {seed.RETURN_WINDOW_DAYS} 天的"
            "售后申请期限"
        )
    quality = any(word in call.args["reason"] for word in QUALITY_WORDS)
    excluded = [
        r["name"]
        for r in conn.execute(
            "SELECT i.name FROM order_items i JOIN products p ON p.id = i.product_id "
            "WHERE i.order_id = ? AND p.seven_day_return = 0 ORDER BY i.line_no",
            (order["id"],),
        )
    ]
    if excluded and not quality:
        return (
            f"订单中的商品（{'、'.join(excluded)}）不支持7天无理由退换；"
            "如有质量问题，请在申请原因中说明"
        )
    return None


def after_sales_apply(call: ToolCall) -> ToolOutput:
    """Create an after-sales ticket (待审核) when the order is eligible; audit the write."""
    kind = call.args["kind"]
    conn = call.connect()
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            order = _load_order(conn, call.args["order_id"], call.user_id)
            blocked = _after_sales_block(conn, call, order)
            if blocked is not None:
                raise ToolFailure(
                    CODE_REJECTED, blocked, {"order_id": order["id"], "status": order["status"]}
                )
            prefix = "AS" + call.now.strftime("%Y%m%d")
            seq = (
                conn.execute(
                    "SELECT COUNT(*) FROM after_sales_tickets WHERE id LIKE ?", (prefix + "%",)
                ).fetchone()[0]
                + 1
            )
            ticket = {
                "ticket_id": f"{prefix}{seq:04d}",
                "order_id": order["id"],
                "kind": kind,
                "kind_label": KIND_LABELS[kind],
                "reason": call.args["reason"],
                "status": "待审核",
                "created_at": _now_text(call.now),
            }
            conn.execute(
                "INSERT INTO after_sales_tickets VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    ticket["ticket_id"],
                    order["id"],
                    call.user_id,
                    kind,
                    call.args["reason"],
                    "待审核",
                    ticket["created_at"],
                    ticket["created_at"],
                    "",
                ),
            )
            _audit(conn, call, ticket)
            _commit(conn, call)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()
    return ToolOutput(
        ticket,
        f"已为订单 {ticket['order_id']} 提交{ticket['kind_label']}申请，"
        f"工单号 {ticket['ticket_id']}，状态：待审核",
    )


def order_cancel(call: ToolCall) -> ToolOutput:
    """Cancel a 待付款/待发货 order of the caller (paid orders go to refund 退款中); audit it."""
    conn = call.connect()
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            order = _load_order(conn, call.args["order_id"], call.user_id)
            previous = order["status"]
            if previous not in ("待付款", "待发货"):
                hint = (
                    "已发货的订单可在签收后申请退货"
                    if previous in ("已发货", "运输中", "已签收")
                    else ""
                )
                raise ToolFailure(
                    CODE_REJECTED,
                    f"订单当前状态为「{previous}」，订单只有在待付款或待发货状态下可以取消"
                    + (f"；{hint}" if hint else ""),
                    {"order_id": order["id"], "status": previous},
                )
            paid = previous == "待发货"
            refund_status = "退款中" if paid else None
            stamp = _now_text(call.now)
            updated = conn.execute(
                "UPDATE orders SET status = '已取消', cancelled_at = ?, refund_status = ?, updated_at = ? "
                "WHERE id = ? AND status = ?",
                (stamp, refund_status, stamp, order["id"], previous),
            ).rowcount
            if updated != 1:
                raise ToolFailure(CODE_REJECTED, "订单状态刚刚发生变化，请重新查询后再操作")
            result = {
                "order_id": order["id"],
                "previous_status": previous,
                "status": "已取消",
                "refund_status": refund_status,
                "refund_amount": order["amount"] if paid else 0.0,
                "pay_method": order["pay_method"],
                "cancelled_at": stamp,
            }
            _audit(conn, call, result)
            _commit(conn, call)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()
    message = f"订单 {result['order_id']} 已取消"
    if paid:
        message += f"，实付 {_money(result['refund_amount'])} 元将原路退回（{result['pay_method']}），退款状态：退款中"
    return ToolOutput(result, message)


_PUNCT = re.compile(r"[\s\W_]+", re.UNICODE)


def grams(text: str) -> set[str]:
    """Return the character bigrams of ``text`` (lower-cased, punctuation removed).

    Each punctuation- or space-separated piece contributes its bigrams; a one-character piece
    contributes itself, so 「书」 still matches 「图书」's grams only through its own character.
    """
    out: set[str] = set()
    for piece in _PUNCT.split(text.lower()):
        if len(piece) == 1:
            out.add(piece)
        out.update(piece[i : i + 2] for i in range(len(piece) - 1))
    return out


def product_recommend(call: ToolCall) -> ToolOutput:
    """Rank in-stock products by char-bigram overlap of the query with name, tags and category."""
    query_grams = grams(call.args["query"])
    category = call.args.get("category")
    max_price = call.args.get("max_price")
    conn = call.connect()
    try:
        rows = conn.execute("SELECT * FROM products WHERE stock > 0 ORDER BY id").fetchall()
    finally:
        conn.close()
    scored = []
    for row in rows:
        if category and row["category"] != category:
            continue
        if max_price is not None and row["price"] > max_price:
            continue
        tags = json.loads(row["tags"])
        product_grams = grams(row["name"]) | grams(row["category"])
        for tag in tags:
            product_grams |= grams(tag)
        # single characters of the product count too, so a one-character query can match
        product_chars = set("".join([row["name"], row["category"], *tags]).lower())
        matched = sorted(
            g for g in query_grams if g in product_grams or (len(g) == 1 and g in product_chars)
        )
        if not matched:
            continue
        score = round(len(matched) / len(query_grams), 4)
        scored.append(
            {
                "product_id": row["id"],
                "name": row["name"],
                "category": row["category"],
                "price": row["price"],
                "stock": row["stock"],
                "tags": tags,
                "seven_day_return": bool(row["seven_day_return"]),
                "score": score,
                "matched": matched,
            }
        )
    if not scored:
        raise ToolFailure(CODE_NOT_FOUND, MSG_NO_PRODUCTS)
    scored.sort(key=lambda p: (-p["score"], p["price"], p["product_id"]))
    top = scored[:RECOMMEND_LIMIT]
    return ToolOutput(
        {"products": top, "count": len(top)},
        f"为您找到 {len(top)} 款在售商品：" + "、".join(p["name"] for p in top),
    )


DEFAULT_FUNCTIONS: dict[str, ToolFn] = {
    "order_lookup": order_lookup,
    "logistics_tracking": logistics_tracking,
    "after_sales_apply": after_sales_apply,
    "order_cancel": order_cancel,
    "product_recommend": product_recommend,
}
# The declared tools (``shop.decls``) with the functions that implement them over SQLite.
DEFAULT_TOOLS: tuple[tuple[ToolSpec, ToolFn], ...] = tuple(
    (decl.spec(), DEFAULT_FUNCTIONS[decl.name]) for decl in DECLS)


def _is_empty(data: Any) -> bool:
    if data is None:
        return True
    if isinstance(data, str | bytes | list | tuple | dict | set):
        return len(data) == 0
    return False


class ShopToolbox:
    """The registry of business tools that really exist, run with validation and a timeout."""

    def __init__(
        self,
        db_path: str | Path,
        *,
        timeout: float = 5.0,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        """Open (create and seed when absent) the shop database and register the default tools.

        Args:
            db_path: The SQLite file (see ``csagent.config.Settings.resolved_shop_db``).
            timeout: Seconds a tool may run before the call returns code 408.
            now: The shop clock for eligibility windows and new records; defaults to the
                frozen ``seed.DEMO_NOW`` so the demo data stays meaningful.

        """
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.db_path = ensure_db(db_path)
        self.timeout = timeout
        self._now = now or (lambda: _parse_time(seed.DEMO_NOW))
        self._tools: dict[str, _Registered] = {}
        for spec, fn in DEFAULT_TOOLS:
            self.register(spec, fn)

    def register(self, spec: ToolSpec, fn: ToolFn) -> None:
        """Add (or replace) a tool; it runs through the same validated, timed call path.

        Args:
            spec: Its spec (``parameters`` is the JSON schema the arguments are checked against).
            fn: Called with a ``ToolCall``; returns data or a ``ToolOutput``, or raises
                ``ToolFailure`` for an expected failure.

        """
        self._tools[spec.name] = _Registered(spec, fn)

    def specs(self) -> list[ToolSpec]:
        """Return every registered tool spec (the capability boundary)."""
        return [t.spec for t in self._tools.values()]

    def spec(self, name: str) -> ToolSpec | None:
        """Return the spec of ``name``, or None when no such tool exists."""
        tool = self._tools.get(name)
        return tool.spec if tool else None

    def call(self, name: str, args: dict[str, Any], *, user_id: str) -> ToolResult:
        """Run tool ``name`` for ``user_id``; never raises.

        Args:
            name: A registered tool name.
            args: Its arguments (from the LLM or the rules); must not contain ``user_id``.
            user_id: The authenticated customer, from the run context.

        Returns:
            The ToolResult: code 0 and ``valid=True`` on success, else ``valid=False`` with
            400/403/404/408/422/500 and a plain message.

        """
        try:
            tool = self._tools.get(name)
            if tool is None:
                available = "、".join(self._tools)
                return _result(
                    name, CODE_NOT_FOUND, None, f"没有名为 {name} 的功能，当前可用：{available}"
                )
            if not isinstance(user_id, str) or not user_id.strip():
                return _result(name, CODE_FORBIDDEN, None, "未获取到登录用户身份，无法办理")
            clean = validate_args(tool.spec, args)
            call = ToolCall(
                name=name,
                args=clean,
                user_id=user_id.strip(),
                db_path=self.db_path,
                now=self._now(),
            )
        except ToolFailure as failure:
            return _result(name, failure.code, failure.data, failure.message)
        except Exception as exc:  # defensive: a broken clock or spec must not crash the turn
            logger.error("tool %s failed before running: %s", name, type(exc).__name__)
            return _result(name, CODE_ERROR, None, MSG_ERROR)
        return self._run(tool, call)

    def _run(self, tool: _Registered, call: ToolCall) -> ToolResult:
        """Run ``tool`` in a worker with the timeout; a write still running then rolls back."""
        return run_with_timeout(call.name, lambda: _finish(tool, call), self.timeout,
                                on_timeout=call.cancelled.set)


def _finish(tool: _Registered, call: ToolCall) -> ToolResult:
    """Run the tool function; an expected failure or an empty result becomes an invalid result."""
    try:
        value = tool.fn(call)
    except ToolFailure as failure:
        return _result(call.name, failure.code, failure.data, failure.message)
    output = value if isinstance(value, ToolOutput) else ToolOutput(value)
    if _is_empty(output.data):
        return _result(call.name, CODE_NOT_FOUND, None, MSG_EMPTY)
    return ToolResult(code=CODE_OK, data=output.data, valid=True, source=call.name,
                      timestamp=time.time(), message=output.message or "查询成功")


def _result(name: str, code: int, data: Any, message: str) -> ToolResult:
    return ToolResult(
        code=code, data=data, valid=False, source=name, timestamp=time.time(), message=message
    )


def sqlite_backend(settings: Any) -> ShopToolbox:
    """Return the demo SQLite backend for ``settings`` (the default ``CSAGENT_TOOLS`` factory).

    Args:
        settings: A :class:`csagent.config.Settings` (``resolved_shop_db``, ``tool_timeout``).

    """
    return ShopToolbox(settings.resolved_shop_db, timeout=settings.tool_timeout)
