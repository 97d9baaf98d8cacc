"""Risk and capability rules: which action a message asks for, how it is described, confirmations.

The capability boundary is the tool registry: an action whose tool is not registered is never
"done"; write tools (``ToolSpec.write``) always pass through the confirmation step.
"""

from __future__ import annotations

import re
from typing import Any

from contracts.profile import Profile, ProfileAction
from strategies.rules.normalize import full_to_half
from strategies.rules.tools import asked_fields
from tools.refs import clean_text

# 「SO2026…」「so 2026…」「SO-2026…」 (after invisible characters are removed and widths folded).
ORDER_ID_RE = re.compile(r"(?<![A-Za-z0-9])(SO)[\s-]?(\d{6,})(?!\d)", re.I)

_EXPLICIT_REQUEST = ("帮我", "我要", "给我", "请帮", "麻烦帮", "替我", "想要", "直接")
YES_WORDS = frozenset({"yes", "y", "ok", "确认", "确定", "是", "是的", "好", "好的", "对", "对的",
                       "同意", "可以", "没问题", "确认办理", "确认提交", "嗯", "行"})


def find_order_id(text: str) -> str | None:
    """Return the first order id (``SO…``) in ``text``, upper-cased, or None.

    Zero-width characters and full-width forms are removed first (:func:`tools.refs.clean_text`);
    a bare number is not an id here (the tool planner reads those against the declared id format).
    """
    match = ORDER_ID_RE.search(clean_text(full_to_half(text)))
    return (match.group(1) + match.group(2)).upper() if match else None


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


# 「给我发张X券」「帮我账户里加500积分」: a request to grant a quantity of something (form, not topic).
_GRANT_REQUEST_RE = re.compile(
    r"(?:帮我|给我|替我|麻烦你?|请你?)(?:在|往)?[^，。？！,.?!]{0,6}?(?P<verb>发|加|送|补|返|充|赠)"
    r"\s*(?P<what>(?:\d+(?:\.\d+)?|[一两几])?\s*(?:张|个|份|笔|点|些)[^，。？！,.?!]{0,12}|\d+(?:\.\d+)?[^，。？！,.?!]{0,12})")


def grant_request(question: str, asks: bool) -> dict[str, Any] | None:
    """Return a tool-less action for an imperative request to grant a quantity (「给我加500积分」).

    Only a statement counts (``asks`` False): 「能给我补多少钱」 asks a policy question. No
    registered tool grants anything the profile does not name, so the router refuses it as
    ``no_capability`` (with a human offered) instead of answering from policy text.
    """
    match = None if asks else _GRANT_REQUEST_RE.search(question)
    if not match:
        return None
    return {"intent": "grant_other", "label": f"{match.group('verb')}{match.group('what').strip()}", "tool": None}


_OWN_ORDERS_RE = re.compile(r"我(?!们)[^，,。？?！!]{0,12}订单(?!.*(?:规则|政策|怎么|如何|能不能|可以吗|能吗))")
_WHICH_RE = re.compile(r"哪些|哪个|哪笔|哪几|有没有|是哪|多少|几个|还没|在路上")


def asks_own_orders(question: str) -> bool:
    """Return True for a question about the customer's own order data, not about a policy.

    The customer's own order (「我…订单」) with a which-question or a record field asked
    (:func:`strategies.rules.tools.asked_fields`: a state, a parcel, a payment way):
    「列一下我还没寄出的单子」「我那台冰箱的订单到什么状态了」 ask for records (answered from
    the order tool), while 「付了款还能不能取消」 asks what the rules allow.
    """
    if not _OWN_ORDERS_RE.search(question):
        return False
    return bool(_WHICH_RE.search(question)) or bool(asked_fields(question))


def is_how_to(question: str, markers: list[str]) -> bool:
    """Return True for a question about how something works rather than a request to do it."""
    if any(w in question for w in _EXPLICIT_REQUEST):
        return False
    return any(m in question for m in markers)


def detect_action(question: str, profile: Profile) -> ProfileAction | None:
    """Return the profile action the customer asks for, or None.

    The highest ``priority`` wins (writes and missing capabilities over lookups), then the
    longest matching keyword.
    """
    best: tuple[tuple[int, int], ProfileAction] | None = None
    for action in profile.get("actions", []):
        for kw in action.get("keywords", []):
            rank = (int(action.get("priority", 0)), len(kw))
            if kw in question and (best is None or rank > best[0]):
                best = (rank, action)
    return best[1] if best else None


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
