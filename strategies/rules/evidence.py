"""Evidence items: built from search hits and tool results, rendered by one function for prompts.

An evidence item is a :class:`contracts.evidence.Evidence` dict: JSON-serialisable, keyed by
``id``. Tool results are rendered as plain Chinese fact lines (``_FIELD_LABELS``: data field →
label; ``_SKIP_FIELDS``: personal data never shown). What a tool's result means is read from its
declaration (``ToolSpec.answers``: the noun, per-tool field labels, default and summary fields)
and its ``write`` flag, never from its name.
"""

from __future__ import annotations

import re
from typing import Any, cast

from contracts.evidence import Evidence, Scores
from contracts.tools import CODE_FORBIDDEN, CODE_LOOP, CODE_NOT_FOUND, ToolResult, ToolSpec
from knowledge.types import Hit
from strategies.rules.hygiene import screen_tool_data, screen_tool_text
from strategies.rules.tools import asked_fields, status_filter

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
_SKIP_FIELDS = {"user_id", "phone", "receiver_phone", "receiver_name", "email", "kind", "count",
                "receiver", "address_detail"}


def hit_to_evidence(hit: Hit) -> Evidence:
    """Convert a knowledge-layer hit into an evidence item (scores kept for the trace)."""
    chunk = hit.chunk
    raw = {"score": hit.score, "bm25": hit.bm25, "dense": hit.dense, "fused": hit.fused,
           "rerank": hit.rerank}
    scores = cast(Scores, {k: round(float(v), 6) for k, v in raw.items() if v is not None})
    item: Evidence = {
        "id": chunk.chunk_id, "kind": "chunk", "doc_id": chunk.doc_id, "title": chunk.title,
        "text": chunk.text, "source": chunk.source, "version": chunk.version,
        "effective_date": chunk.effective_date,
        "superseded": bool(chunk.superseded_by) or chunk.metadata.get("status") == "superseded",
        "superseded_by": chunk.superseded_by, "conflict": False, "table": chunk.kind == "table",
        "heading_path": list(chunk.heading_path),
        "scores": scores,
    }
    category = chunk.metadata.get("category")
    if isinstance(category, str) and category.strip():
        item["category"] = category.strip()
    return item


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


_NOT_FOUND_CODES = (CODE_NOT_FOUND, CODE_FORBIDDEN)


def tool_noun(name: str, spec: ToolSpec | None = None) -> str:
    """Return what a tool's result is called for the customer (its declared noun, else its name)."""
    return spec.answers.noun if spec is not None and spec.answers.noun else name


def tool_observation(name: str, result: ToolResult, spec: ToolSpec | None = None) -> str:
    """Return the explicit observation for an invalid result: 「未查询到…」 or 「…失败：…」."""
    label = tool_noun(name, spec)
    message = str(result.get("message") or "").strip().rstrip("。")
    if result.get("code") in _NOT_FOUND_CODES:
        return f"未查询到{label}相关记录" + (f"（{message}）" if message else "")
    if result.get("code") == CODE_LOOP:
        return f"{label}查询已重复多次，系统已停止重复查询"
    verb = "办理" if spec is not None and spec.write else "查询"
    return f"{label}{verb}失败" + (f"：{message}" if message else "，暂时无法确认结果")


# Asked field (strategies.rules.tools.asked_fields) → data keys that answer it.
_ASKED_KEYS: dict[str, tuple[str, ...]] = {
    "status": ("status", "refund_status"), "carrier": ("carrier",), "tracking_no": ("tracking_no",),
    "latest": ("carrier", "latest"), "signed_by": ("latest",), "signed_at": ("signed_at",),
    "pay_method": ("pay_method",), "amount": ("amount",), "items": ("items",),
}


def _focus_keys(spec: ToolSpec, question: str, row: dict[str, Any]) -> list[str]:
    """Return the data keys the question asks for (the tool's default fields when it asks none we hold)."""
    keys = [k for f in asked_fields(question) for k in _ASKED_KEYS.get(f, ()) if row.get(k) not in (None, "", [])]
    if not keys:
        keys = [k for k in spec.answers.default_fields if row.get(k) not in (None, "", [])]
    return list(dict.fromkeys(keys))


def _render_record(spec: ToolSpec, row: dict[str, Any], question: str, labels: dict[str, str],
                   omit: tuple[str, ...] = (), *, brief: bool = False) -> list[str]:
    """Render one order/shipment record: the asked fields in one sentence, then the rest once.

    With ``brief`` the rest is cut to the record's key fields (``spec.answers.summary_fields``).
    """
    row = {k: v for k, v in row.items() if k not in omit}
    if row.get("refund_status") == row.get("status"):
        row.pop("refund_status", None)  # 「订单状态：已退款，退款状态：已退款」 says one thing twice
    focus = _focus_keys(spec, question, row)
    parts = [f"订单 {row['order_id']}"] if row.get("order_id") else []
    parts += [f"{labels[k]}：{_fmt_value(k, row[k], labels)}" for k in focus if k in labels]
    rest = {k: v for k, v in row.items() if k not in focus and k not in ("order_id", "events")
            and (not brief or k in spec.answers.summary_fields)}
    return [line for line in ("，".join(parts), _fmt_item(rest, labels)) if line]


def _render_listing(orders: list[Any], question: str, focus: list[str], labels: dict[str, str],
                    *, brief: bool = False) -> list[str]:
    """Render an order list: the orders the question is about first, the others briefly after.

    With ``brief`` and a focus, only the focused orders are rendered.
    """
    rows = [o for o in orders if isinstance(o, dict)]
    chosen = [o for o in rows if str(o.get("order_id")) in focus]
    others = [o for o in rows if o not in chosen]
    lines: list[str] = []
    statuses = status_filter(question)
    if chosen:
        lines.extend(_fmt_item(o, labels) for o in chosen)
        if others and not brief:
            lines.append("其他订单：" + "；".join(
                f"{o.get('order_id')}（{o.get('status', '')}）" for o in others))
        return lines
    if statuses:
        lines.append(f"您最近的 {len(rows)} 笔订单中没有{'/'.join(statuses)}的订单")
    lines.extend(_fmt_item(o, labels) for o in rows)
    return lines


def render_tool_facts(name: str, result: ToolResult, *, question: str = "",
                      focus: list[str] | None = None, omit: tuple[str, ...] = (),
                      brief: bool = False, spec: ToolSpec | None = None) -> list[str]:
    """Render a tool result as plain Chinese fact lines (what the answer states and the verifier reads).

    A single order or shipment renders as the fields the question asks for in one sentence
    (status, carrier, tracking number, latest event, sign-off, pay method, amount; the tool's
    defaults when it asks none), then every other field once. An order list renders the orders
    in ``focus`` (named by the question) first. Every data field appears exactly once, so the text
    is complete for the verifier without repeating the tool's summary message.

    Args:
        name: The tool name.
        result: The tool's result; invalid results render as the tool's own message only.
        question: The customer's question (decides which fields come first).
        focus: Order ids of a listing that the question is about.
        omit: Data keys another evidence item of this turn already states (e.g. ``status``).
        brief: Cut each record's other fields to its key ones (the evidence item's ``brief``,
            what a short answer states; ``text`` stays complete for the verifier).
        spec: The tool's spec: its declared noun, field labels, default and summary fields
            (without it the result renders generically).

    """
    if not result.get("valid"):
        return [tool_observation(name, result, spec)]
    data = result.get("data")
    rows = data if isinstance(data, list) else [data]
    labels = {**_FIELD_LABELS, **(spec.answers.labels if spec is not None else {})}
    lines: list[str] = []
    structured = False
    for row in rows:
        if isinstance(row, dict):
            if isinstance(row.get("orders"), list):
                structured = True
                lines.extend(_render_listing(row["orders"], question, focus or [], labels, brief=brief))
            if isinstance(row.get("products"), list):
                lines.extend(_fmt_item(o, labels) for o in row["products"])
            rest = {k: v for k, v in row.items() if k not in ("orders", "products", "events")}
            if spec is not None and spec.answers.default_fields and spec.id_arg and rest.get(spec.id_arg):
                structured = True
                lines.extend(_render_record(spec, rest, question, labels, omit, brief=brief))
                continue
            text = _fmt_item(rest, labels)
            if text:
                lines.append(text)
        elif row not in (None, ""):
            lines.append(str(row))
    message = str(result.get("message") or "").strip()
    if structured and lines:
        return lines  # the data says it all; the summary message would repeat it
    return ([message] if message else []) + lines if lines else [message or f"未查询到{tool_noun(name, spec)}相关记录"]


def tool_to_evidence(name: str, index: int, result: ToolResult, args: dict[str, Any], *,
                     question: str = "", focus: list[str] | None = None,
                     omit: tuple[str, ...] = (), spec: ToolSpec | None = None) -> Evidence:
    """Convert the ``index``-th call of tool ``name`` this turn into an evidence item.

    ``question``, ``focus``, ``omit`` and ``spec`` only shape the rendered facts (see
    ``render_tool_facts``).
    ``text`` holds every fact (what the verifier checks); ``brief`` holds the asked fields first
    and then only the record's key fields, each line a subset of ``text`` (what an answer states).
    """
    result = ToolResult(**{**result, "data": screen_tool_data(result.get("data"))})  # [rel] 9.7
    text = "\n".join(render_tool_facts(name, result, question=question, focus=focus, omit=omit, spec=spec))
    brief = "\n".join(render_tool_facts(name, result, question=question, focus=focus, omit=omit,
                                        brief=True, spec=spec))
    return {  # [rel] issue 9.5/9.7: tool data is data — no markup, no hostile spans
        "id": f"tool:{name}#{index}", "kind": "tool", "doc_id": f"tool:{name}", "title": name,
        "text": screen_tool_text(text), "brief": screen_tool_text(brief),
        "source": name, "version": "",
        "effective_date": "", "superseded": False, "conflict": False, "table": False,
        "scores": {}, "result": ToolResult(**result), "args": dict(args),
    }


_NUM_CONTEXT_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(天|工作日|元|%|小时)")


def mark_conflicts(evidence: list[Evidence]) -> list[Evidence]:
    """Mark current chunks of different documents that share a heading but state different figures.

    A cheap, conservative signal: two current chunks whose last heading is the same and whose
    number+unit sets differ are marked ``conflict`` (the prompt shows it; generation prefers
    the stronger one). Returns new dicts; the input is not modified.
    """
    out = [Evidence(**e) for e in evidence]
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


def evidence_sort_key(item: Evidence) -> tuple[int, float, float]:
    """Sort tools first, then current before superseded, then by rerank (else final) score."""
    scores = item.get("scores") or {}
    return (0 if item.get("kind") == "tool" else 1, 1 if item.get("superseded") else 0,
            -float(scores.get("rerank", scores.get("score", 0.0))))


def render_evidence(evidence: list[Evidence], *, max_chars: int = 6000) -> str:
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
        if item.get("version_frame") == "not_yet_in_force":
            flags.append("客户所述时间该版本尚未生效，不得引用")
        elif item.get("superseded"):
            flags.append("已失效的旧版本，不得作为现行规定引用")
        elif item.get("version_frame") == "in_force_old":
            flags.append("旧版本，但客户所述时间适用此版本；回答时须说明是按旧版规定")
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
