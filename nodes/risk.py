"""Pure risk and capability rules: action detection, tool planning, confirmation replies.

The capability boundary is the tool registry: an action whose tool is not registered is never
"done"; write tools (``ToolSpec.write``) always pass through the confirmation step.
"""

from __future__ import annotations

import re
from typing import Any

from nodes.normalize import full_to_half

ORDER_ID_RE = re.compile(r"(?<![A-Za-z0-9])(SO\d{6,})(?!\d)", re.I)
_PRICE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:元|块)?\s*(?:以内|以下|之内|左右)|预算\s*(\d+(?:\.\d+)?)")
_EXPLICIT_REQUEST = ("帮我", "我要", "给我", "请帮", "麻烦帮", "替我", "想要", "直接")
YES_WORDS = frozenset({"yes", "y", "ok", "确认", "确定", "是", "是的", "好", "好的", "对", "对的",
                       "同意", "可以", "没问题", "确认办理", "确认提交", "嗯", "行"})


def find_order_id(text: str) -> str | None:
    """Return the first order id (``SO…``) in ``text``, upper-cased, or None."""
    match = ORDER_ID_RE.search(full_to_half(text))
    return match.group(1).upper() if match else None


_CHANGE_REQUEST_RE = re.compile(
    r"(?:帮我|给我|替我|麻烦你?|请你?|你们?)(?:把|将)?(?P<what>[^，。？！,.?!]{1,10}?)"
    r"(?:改成|改为|换成|升级成|升级为|调成|调整为|改一下|修改一下)")


def generic_change_request(question: str) -> dict[str, Any] | None:
    """Return a tool-less action for 「帮我把X改成Y」-style requests no profile action names."""
    match = _CHANGE_REQUEST_RE.search(question)
    if not match:
        return None
    what = match.group("what").strip("的 ") or "该信息"
    return {"intent": "change_other", "label": f"修改{what}", "tool": None}


_OWN_ORDERS_RE = re.compile(r"我(?!们)[^，,。？?！!]{0,12}订单(?!.*(?:规则|政策|怎么|如何|能不能|可以吗|能吗))")
_WHICH_RE = re.compile(r"哪些|哪个|哪笔|哪几|有没有|是哪|多少|几个|还没|在路上")


def asks_own_orders(question: str) -> bool:
    """Return True for a question about the customer's own order data, not about a policy.

    「我最近有哪些订单还没发货」「我上个月买的空调订单号多少」 ask for records (answered from
    the order tool), while 「我的订单能取消吗」 asks what the rules allow.
    """
    return bool(_OWN_ORDERS_RE.search(question)) and bool(_WHICH_RE.search(question))


def is_how_to(question: str, markers: list[str]) -> bool:
    """Return True for a question about how something works rather than a request to do it."""
    if any(w in question for w in _EXPLICIT_REQUEST):
        return False
    return any(m in question for m in markers)


def detect_action(question: str, profile: dict[str, Any]) -> dict[str, Any] | None:
    """Return the profile action the customer asks for, or None.

    The highest ``priority`` wins (writes and missing capabilities over lookups), then the
    longest matching keyword.
    """
    best: tuple[tuple[int, int], dict[str, Any]] | None = None
    for action in profile.get("actions", []):
        for kw in action.get("keywords", []):
            rank = (int(action.get("priority", 0)), len(kw))
            if kw in question and (best is None or rank > best[0]):
                best = (rank, action)
    return best[1] if best else None


def parse_max_price(question: str) -> float | None:
    """Return a budget such as 「200元以内」 → 200.0, or None."""
    match = _PRICE_RE.search(full_to_half(question))
    if not match:
        return None
    return float(match.group(1) or match.group(2))


def plan_tool_call(action: dict[str, Any], question: str, order_id: str | None) -> dict[str, Any]:
    """Return ``{"name", "args"}`` for ``action`` (args never include the user id).

    Args:
        action: A profile action with a ``tool``.
        question: The customer's message.
        order_id: The order id from the message or the carried-forward facts.

    """
    name = str(action["tool"])
    args: dict[str, Any] = dict(action.get("args") or {})
    if name == "product_recommend":
        args["query"] = question
        budget = parse_max_price(question)
        if budget is not None:
            args["max_price"] = budget
    elif name == "order_lookup":
        if order_id:
            args["order_id"] = order_id
    else:
        if order_id:
            args["order_id"] = order_id
        if name == "after_sales_apply":
            args["reason"] = question[:200]
    return {"name": name, "args": args}


def needs_order_id(call: dict[str, Any]) -> bool:
    """Return True when the planned call cannot run without an order id it does not have."""
    return call["name"] in ("logistics_tracking", "after_sales_apply", "order_cancel") \
        and not call["args"].get("order_id")


def describe_action(call: dict[str, Any], label: str) -> str:
    """Return the exact action in plain Chinese, e.g. 「为订单 SO… 申请退款」."""
    order = call["args"].get("order_id")
    return f"为订单 {order} {label}" if order else label


def is_explicit_yes(value: Any) -> bool:
    """Return True only for an explicit yes (``"yes"``/``True``/``{"confirm": True}``/「确认」)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, dict):
        inner = value.get("confirm", value.get("reply"))
        return is_explicit_yes(inner) if inner is not None else False
    if isinstance(value, str):
        return full_to_half(value).strip().strip("。.!！ ").lower() in YES_WORDS
    return False


# --- Order questions: which fields are asked, which tools answer them --------------------------

# Field → cue words. Logistics fields come only from logistics_tracking; the others from the order.
ASKED_FIELD_CUES: dict[str, tuple[str, ...]] = {
    "carrier": ("哪家快递", "什么快递", "哪个快递", "快递公司", "承运", "走的哪家", "哪家物流", "走的什么",
                "哪家送", "谁送", "快递送"),
    "tracking_no": ("单号", "运单", "物流号", "快递号"),
    "latest": ("到哪", "物流", "进度", "送到哪", "在哪", "怎么这么慢", "到哪一步了", "动态", "派送"),
    "signed_by": ("谁签收", "谁收的", "签收人", "谁签的"),
    "signed_at": ("哪天签收", "什么时候签收", "几号签收", "签收时间", "哪天到的", "什么时候到的"),
    "status": ("状态", "发货", "发了没", "发了吗", "到了没", "到了吗", "签收了", "付款了", "付钱了", "付了没",
               "取消了", "退了吗", "退款到", "退款了", "到账", "钱退", "怎么样了", "到哪一步", "还没付"),
    "pay_method": ("付款方式", "支付方式", "用什么付", "用啥付", "啥付款", "什么付款", "怎么付的", "用的什么付",
                   "用什么支付", "用什么付的", "啥付的"),
    "amount": ("多少钱", "金额", "实付", "付了多少", "花了多少", "总价"),
    "items": ("买了什么", "买的什么", "什么商品", "哪些商品"),
}
LOGISTICS_FIELDS = frozenset({"carrier", "tracking_no", "latest", "signed_by"})
# Statuses a listing question filters on (「哪些订单还没发货」→ 待发货).
_STATUS_FILTERS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("没付款", "未付款", "待付款", "没付钱", "还没付", "没支付", "未支付"), ("待付款",)),
    (("没发货", "未发货", "待发货", "还没发"), ("待发货",)),
    (("在路上", "运输中", "还没到", "已经发货", "已发货"), ("已发货", "运输中")),
    (("退款中", "在退款", "退款的"), ("退款中",)),
    (("已退款", "退了款"), ("已退款",)),
    (("取消的", "已取消"), ("已取消",)),
    (("签收的", "已签收", "收到的", "到了的"), ("已签收",)),
)
_SHIPPING_CUES = ("发货了", "发货没", "发了没", "发了吗", "签收了", "到了没", "到了吗", "到没到", "收到了吗")
_SHIPPED = ("已发货", "运输中", "已签收", "退款中", "已退款")


def asked_fields(question: str) -> list[str]:
    """Return the order fields ``question`` asks for, in a stable order (may be empty).

    「SO…走的哪家快递，单号多少」→ ["carrier", "tracking_no"]; 「发货了吗」→ ["status"].
    """
    text = full_to_half(question)
    fields = [f for f, cues in ASKED_FIELD_CUES.items() if any(c in text for c in cues)]
    if "到哪一步" in text and "物流" not in text and "快递" not in text:
        fields = [f for f in fields if f != "latest"]  # 「退款到哪一步了」 asks the order's state
    if "快递" in text and not fields:
        fields = ["carrier", "tracking_no", "latest"]
    if any(c in text for c in _SHIPPING_CUES) and "latest" not in fields:
        fields.append("latest")  # 「发货了吗」: the state, plus the shipment when there is one
    return fields


def status_filter(question: str) -> tuple[str, ...]:
    """Return the order statuses a listing question asks about (「还没发货」→ 待发货), or ()."""
    text = full_to_half(question)
    for cues, statuses in _STATUS_FILTERS:
        if any(c in text for c in cues):
            return statuses
    return ()


def is_shipped_status(status: str) -> bool:
    """Return True when an order in ``status`` has (had) a shipment to track."""
    return status in _SHIPPED


def plan_order_tools(question: str, order_id: str | None, default_tool: str) -> list[dict[str, Any]]:
    """Return the read-tool calls that answer an order question (args never include the user id).

    Logistics fields (carrier, tracking number, latest event, signed-by) need
    ``logistics_tracking``; status, pay method and amounts need ``order_lookup``. When both are
    asked (or nothing in particular is), the order comes first and the logistics call is marked ``if_shipped`` (an unshipped
    order's status already answers 「发货了吗」). Without an order id the customer's order list is
    looked up and marked ``resolve`` so the caller may pick the one order the question names.

    Args:
        question: The customer's message.
        order_id: The order id from the message or the carried-forward facts.
        default_tool: The tool the matched profile action names (a logistics action without an
            order id follows the listing up with ``logistics_tracking``).

    """
    fields = set(asked_fields(question))
    wants_logistics = bool(fields & LOGISTICS_FIELDS)
    wants_order = bool(fields - LOGISTICS_FIELDS)
    if not fields:  # 「查一下SO…」「那SO…呢」: the order, and its shipment when it has one
        wants_logistics = wants_order = True
    if not order_id:
        lookup: dict[str, Any] = {"name": "order_lookup", "args": {}}
        follow = wants_logistics or default_tool == "logistics_tracking"
        return [{**lookup, "resolve": True, "then": "logistics_tracking"} if follow else lookup]
    args = {"order_id": order_id}
    if wants_logistics and wants_order:
        return [{"name": "order_lookup", "args": dict(args)},
                {"name": "logistics_tracking", "args": dict(args), "if_shipped": True}]
    if wants_logistics:
        return [{"name": "logistics_tracking", "args": dict(args)}]
    return [{"name": "order_lookup", "args": dict(args)}]


def _bigrams(text: str) -> set[str]:
    chars = [c for c in full_to_half(text) if c.isalnum()]
    return {a + b for a, b in zip(chars, chars[1:], strict=False)}


def match_orders(question: str, orders: list[dict[str, Any]]) -> list[str]:
    """Return the ids of listed orders whose item names the question names (best overlap only).

    「我买的那个降噪耳机到了没」 picks the order containing 「…降噪耳机」; ties return every tied
    order (the caller then asks nothing further of any of them).
    """
    grams = _bigrams(re.sub(r"SO\d+", "", question, flags=re.I))
    best, ids = 0, []  # at least one shared bigram (「空调」)
    for order in orders:
        names = " ".join(str(i.get("name", i)) if isinstance(i, dict) else str(i) for i in order.get("items") or [])
        score = len(grams & _bigrams(names))
        if score > best:
            best, ids = score, [str(order.get("order_id"))]
        elif score == best and ids:
            ids.append(str(order.get("order_id")))
    return ids
