"""Fact carry-forward: what earlier turns established that may bear on the new question.

Only two sources are trusted: what the customer said (order ids, member tier, region, payment
method) and tool results that were valid. The assistant's own earlier prose is never carried
forward, so an unsupported statement in turn 1 cannot snowball into turn 5.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import AnyMessage, HumanMessage

from contracts.facts import Fact, FactKind
from contracts.tools import ToolCallRecord
from strategies.rules.claims import extract_facts
from strategies.rules.normalize import full_to_half
from strategies.rules.risk import ORDER_ID_RE, find_order_id

_ELLIPTICAL_RE = re.compile(r"^(那|那么|还有|如果|要是|换成|改成)|[呢吧]\s*[？?]?$|我(?:问|说)的是|^(?:哦|噢)?不对")
KIND_LABELS: dict[FactKind, str] = {"order_id": "订单号", "region": "地区", "payment": "支付方式",
                                   "tier": "会员等级", "previous_question": "上一个问题"}
# A carried fact bears on a question that mentions one of these (or on any elliptical follow-up).
_RELEVANT_WHEN: dict[FactKind, tuple[str, ...]] = {
    "order_id": ("订单", "物流", "快递", "到哪", "发货", "退", "换", "取消", "售后", "它", "这个", "那个",
                 "这单", "那单", "吧", "单号", "签收", "付的", "付款", "状态", "到了", "送到", "承运",
                 "哪家", "金额", "多少钱"),
    "region": ("配送", "几天", "多久", "运费", "包邮", "送达", "到货", "能到", "时效", "快递", "邮费"),
    "payment": ("退款", "到账", "支付", "付款", "退钱", "分期"),
    "tier": ("会员", "运费", "包邮", "价保", "积分", "权益", "邮费", "优惠"),
}


def message_text(message: AnyMessage) -> str:
    """Return a message's text content (joined text parts for list content)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)


def user_stated_facts(text: str) -> list[Fact]:
    """Return the facts a customer message states: order id, region, payment method, tier."""
    facts: list[Fact] = []
    order_id = find_order_id(text)
    if order_id:
        facts.append({"kind": "order_id", "value": order_id, "source": "user"})
    found = extract_facts(text)
    kinds: tuple[tuple[FactKind, list[str]], ...] = (
        ("region", found.regions), ("payment", found.payments), ("tier", found.tiers))
    for kind, values in kinds:
        facts.extend({"kind": kind, "value": v, "source": "user"} for v in values)
    return facts


def tool_facts(tool_calls: Sequence[ToolCallRecord]) -> list[Fact]:
    """Return order ids confirmed by valid tool results this turn.

    An order named in the call's args counts; so does the single order a listing was about
    (``focus``, set by ``nodes.tools.call_tools``: 「还有哪单没寄出」 → that one order), so
    「那单付款方式是啥」 next turn refers to it.
    """
    facts: list[Fact] = []
    for call in tool_calls:
        result = call["result"]
        order_id = call.get("args", {}).get("order_id")
        focus = call.get("focus") or []
        if not order_id and len(focus) == 1:
            order_id = focus[0]
        if result.get("valid") and order_id:
            facts.append({"kind": "order_id", "value": str(order_id), "source": f"tool:{call['name']}"})
    return facts


def merge_facts(known: list[Fact], new: list[Fact]) -> list[Fact]:
    """Merge fact lists; a newer value of the same kind and value moves to the end (most recent)."""
    out = [f for f in known if not any(f["kind"] == n["kind"] and f["value"] == n["value"] for n in new)]
    return out + new


def is_elliptical(question: str) -> bool:
    """Return True for a follow-up that leans on the previous question (「那新疆呢？」)."""
    bare = ORDER_ID_RE.sub("", full_to_half(question)).strip()  # 「那SO2026…呢」 is short too
    return len(bare) <= 14 and bool(_ELLIPTICAL_RE.search(question.strip()))


def relevant_facts(question: str, known: list[Fact], history: list[AnyMessage]) -> list[Fact]:
    """Return the carried-forward facts that bear on ``question``.

    A kind the question states itself (a new order id, another region) overrides history; the
    latest value of each other kind is kept. An elliptical follow-up also carries the previous
    customer question (the customer's own words, never the assistant's answer).
    """
    stated = {f["kind"] for f in user_stated_facts(question)}
    latest: dict[FactKind, Fact] = {}
    for fact in known:
        latest[fact["kind"]] = fact
    elliptical = is_elliptical(question)
    out = [f for k, f in latest.items() if k not in stated
           and (elliptical or any(w in question for w in _RELEVANT_WHEN.get(k, ())))]
    if elliptical:
        previous = [message_text(m) for m in history if isinstance(m, HumanMessage)]
        if previous:
            out.append({"kind": "previous_question", "value": previous[-1], "source": "user"})
    return out


def fact_value(facts: Sequence[Fact], kind: FactKind) -> str | None:
    """Return the value of the first fact of ``kind``, or None."""
    return next((f["value"] for f in facts if f["kind"] == kind), None)


def render_fact(fact: Fact) -> str:
    """Render one fact for a prompt or a handoff summary: 「订单号：SO…（客户陈述）」."""
    label = KIND_LABELS.get(fact["kind"], fact["kind"])
    if fact["kind"] == "previous_question":
        return f"{label}：{fact['value']}"
    origin = "客户陈述" if fact["source"] == "user" else "工具核实"
    return f"{label}：{fact['value']}（{origin}）"


def render_facts(facts: Sequence[Fact], empty: str = "无") -> str:
    """Render facts joined by 「；」 (``empty`` when there are none)."""
    return "；".join(render_fact(f) for f in facts) or empty
