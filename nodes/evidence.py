"""Evidence items: built from search hits and tool results, rendered by one function for prompts.

An evidence item is a plain dict (see ``graph.state``): JSON-serialisable, keyed by ``id``.
"""

from __future__ import annotations

import re
from typing import Any

from knowledge.types import Hit
from shop.types import CODE_FORBIDDEN, CODE_LOOP, CODE_NOT_FOUND, ToolResult

_FIELD_LABELS = {
    "order_id": "订单号", "status": "订单状态", "amount": "金额", "total": "金额",
    "total_amount": "订单金额", "pay_amount": "实付金额", "payment_method": "支付方式",
    "created_at": "下单时间", "paid_at": "付款时间", "shipped_at": "发货时间",
    "delivered_at": "签收时间", "carrier": "承运快递", "tracking_no": "运单号",
    "tracking_number": "运单号", "eta": "预计送达", "latest": "最新动态", "items": "商品",
    "name": "名称",
    "price": "价格", "category": "类目", "ticket_id": "工单号", "kind": "类型",
    "reason": "原因", "region": "地区", "city": "城市",
    "stock": "库存", "rating": "评分", "seven_day_return": "支持7天无理由退货",
    "refund_amount": "退款金额", "pay_method": "支付方式",
    "goods_amount": "商品金额", "shipping_fee": "运费", "discount": "优惠", "subtotal": "小计",
    "shipping_region": "收货地区", "signed_at": "签收时间", "cancelled_at": "取消时间",
    "refund_status": "退款状态", "after_sales": "售后记录", "kind_label": "类型",
    "previous_status": "原状态", "updated_at": "更新时间", "product_name": "商品",
}
# Fields whose meaning depends on the tool: an after-sales ticket's status is not the order's.
_TOOL_FIELD_LABELS: dict[str, dict[str, str]] = {
    "after_sales_apply": {"status": "工单状态", "created_at": "申请时间"},
    "order_cancel": {"status": "当前订单状态"},
}
_SKIP_FIELDS = {"user_id", "phone", "receiver_phone", "receiver_name", "email", "kind", "count",
                "receiver", "address_detail"}


def hit_to_evidence(hit: Hit) -> dict[str, Any]:
    """Convert a knowledge-layer hit into an evidence item (scores kept for the trace)."""
    chunk = hit.chunk
    scores = {"score": hit.score, "bm25": hit.bm25, "dense": hit.dense, "fused": hit.fused,
              "rerank": hit.rerank}
    return {
        "id": chunk.chunk_id, "kind": "chunk", "doc_id": chunk.doc_id, "title": chunk.title,
        "text": chunk.text, "source": chunk.source, "version": chunk.version,
        "effective_date": chunk.effective_date,
        "superseded": bool(chunk.superseded_by) or chunk.metadata.get("status") == "superseded",
        "superseded_by": chunk.superseded_by, "conflict": False, "table": chunk.kind == "table",
        "heading_path": list(chunk.heading_path),
        "scores": {k: round(float(v), 6) for k, v in scores.items() if v is not None},
    }


_MONEY_FIELDS = {"amount", "total", "total_amount", "pay_amount", "price", "goods_amount",
                 "shipping_fee", "discount", "subtotal", "refund_amount"}


def _fmt_value(key: str, value: Any, labels: dict[str, str] = _FIELD_LABELS) -> str:
    if isinstance(value, bool):
        return "是" if value else "否"
    if isinstance(value, float | int):
        text = str(int(value)) if float(value).is_integer() else f"{value:.2f}".rstrip("0").rstrip(".")
        return f"{text}元" if key in _MONEY_FIELDS else text
    if isinstance(value, list):
        return "；".join(_fmt_item(v, labels) for v in value)
    if isinstance(value, dict):
        return _fmt_item(value, labels)
    return str(value)


def _fmt_item(value: Any, labels: dict[str, str] = _FIELD_LABELS) -> str:
    """Render one dict (labelled fields only, in a stable order) or a scalar."""
    if not isinstance(value, dict):
        return str(value)
    if "name" in value and ("qty" in value or "quantity" in value):
        return f"{value['name']}×{value.get('qty', value.get('quantity'))}"
    if "description" in value and "time" in value:
        return f"{value['time']} {value.get('location', '')} {value['description']}".replace("  ", " ")
    parts = [f"{labels[k]}：{_fmt_value(k, v, labels)}" for k, v in value.items()
             if k in labels and k not in _SKIP_FIELDS and v not in (None, "", [])]
    return "，".join(parts)


TOOL_LABELS = {"order_lookup": "订单", "logistics_tracking": "物流信息", "after_sales_apply": "售后申请",
               "order_cancel": "订单取消", "product_recommend": "推荐商品"}
_NOT_FOUND_CODES = (CODE_NOT_FOUND, CODE_FORBIDDEN)


def tool_observation(name: str, result: ToolResult) -> str:
    """Return the explicit observation for an invalid result: 「未查询到…」 or 「…失败：…」."""
    label = TOOL_LABELS.get(name, name)
    message = str(result.get("message") or "").strip().rstrip("。")
    if result.get("code") in _NOT_FOUND_CODES:
        return f"未查询到{label}相关记录" + (f"（{message}）" if message else "")
    if result.get("code") == CODE_LOOP:
        return f"{label}查询已重复多次，系统已停止重复查询"
    verb = "查询" if name in ("order_lookup", "logistics_tracking", "product_recommend") else "办理"
    return f"{label}{verb}失败" + (f"：{message}" if message else "，暂时无法确认结果")


def render_tool_facts(name: str, result: ToolResult) -> list[str]:
    """Render a tool result as plain Chinese fact lines (what the answer states and the verifier reads).

    Args:
        name: The tool name.
        result: The tool's result; invalid results render as the tool's own message only.

    """
    if not result.get("valid"):
        return [tool_observation(name, result)]
    data = result.get("data")
    rows = data if isinstance(data, list) else [data]
    labels = {**_FIELD_LABELS, **_TOOL_FIELD_LABELS.get(name, {})}
    lines: list[str] = []
    for row in rows:
        if isinstance(row, dict):
            for key in ("orders", "products"):
                if isinstance(row.get(key), list):
                    lines.extend(_fmt_item(o, labels) for o in row[key])
            rest = {k: v for k, v in row.items() if k not in ("orders", "products", "events")}
            text = _fmt_item(rest, labels)
            if text:
                lines.append(text)
        elif row not in (None, ""):
            lines.append(str(row))
    message = str(result.get("message") or "").strip()
    return ([message] if message else []) + lines if lines else [message or f"未查询到{TOOL_LABELS.get(name, name)}相关记录"]


def tool_to_evidence(name: str, index: int, result: ToolResult, args: dict[str, Any]) -> dict[str, Any]:
    """Convert the ``index``-th call of tool ``name`` this turn into an evidence item."""
    return {
        "id": f"tool:{name}#{index}", "kind": "tool", "doc_id": f"tool:{name}", "title": name,
        "text": "\n".join(render_tool_facts(name, result)), "source": name, "version": "",
        "effective_date": "", "superseded": False, "conflict": False, "table": False,
        "scores": {}, "result": dict(result), "args": dict(args),
    }


_NUM_CONTEXT_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(天|工作日|元|%|小时)")


def mark_conflicts(evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mark current chunks of different documents that share a heading but state different figures.

    A cheap, conservative signal: two current chunks whose last heading is the same and whose
    number+unit sets differ are marked ``conflict`` (the prompt shows it; generation prefers
    the stronger one). Returns new dicts; the input is not modified.
    """
    out = [dict(e) for e in evidence]
    chunks = [e for e in out if e.get("kind") == "chunk" and not e.get("superseded")]
    for i, a in enumerate(chunks):
        for b in chunks[i + 1:]:
            if a.get("doc_id") == b.get("doc_id"):
                continue
            ha, hb = (a.get("heading_path") or [""])[-1], (b.get("heading_path") or [""])[-1]
            if not ha or ha != hb:
                continue
            na = set(_NUM_CONTEXT_RE.findall(a.get("text", "")))
            nb = set(_NUM_CONTEXT_RE.findall(b.get("text", "")))
            if na and nb and na != nb:
                a["conflict"] = b["conflict"] = True
    return out


def render_evidence(evidence: list[dict[str, Any]], *, max_chars: int = 6000) -> str:
    """Render evidence, strongest first, as tagged blocks for a prompt (the only renderer).

    Tool results come first, then chunks in the given (ranked) order. Superseded versions are
    marked 「已失效，不得作为现行规定引用」 and conflicting chunks 「与其他资料存在冲突」.
    """
    ordered = [e for e in evidence if e.get("kind") == "tool"] + \
              [e for e in evidence if e.get("kind") != "tool"]
    blocks: list[str] = []
    used = 0
    for item in ordered:
        flags = []
        if item.get("superseded"):
            flags.append("已失效的旧版本，不得作为现行规定引用")
        if item.get("conflict"):
            flags.append("与其他资料存在冲突，请以最新生效版本为准")
        meta = " ".join(p for p in (f"标题:{item.get('title', '')}",
                                    f"版本:{item['version']}" if item.get("version") else "",
                                    f"生效:{item['effective_date']}" if item.get("effective_date") else "",
                                    f"注意:{'；'.join(flags)}" if flags else "") if p)
        block = f"<evidence id=\"{item['id']}\" {meta}>\n{item.get('text', '').strip()}\n</evidence>"
        if used + len(block) > max_chars and blocks:
            break
        blocks.append(block)
        used += len(block)
    return "\n".join(blocks) if blocks else "（没有检索到任何资料）"
