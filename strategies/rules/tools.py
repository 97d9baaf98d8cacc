"""Rules tool planning and plan execution, read from the tools' declarations (no tool names here).

The rules :class:`RulesToolPlanner` (offline mode, and the LLM planner's fallback) turns a
profile action and the customer's message into planned calls (:class:`ToolCallPlan`), using
only what each tool declares (:class:`contracts.tools.Answers`): the fields it returns, the
question forms it serves (one named record, the caller's own records, a free-text search),
the states its data exists for, and where its arguments come from.

* A read action on records: the asked fields (:func:`asked_fields`, from ``ASKED_FIELD_CUES``)
  pick the record tools that return them (none asked: every record tool). The tool that also
  lists records comes first; a later tool that only has data in some states is marked
  ``when_status`` (skipped when this turn's first record shows another state).
* No id known: the listing tool, marked ``resolve``/``then`` so the caller can follow up on
  the one listed record the question names (by item name or state filter).
* A reference the customer wrote (:mod:`tools.refs`: 「订单2026…」「so 2026…」, full-width,
  zero-width characters) counts over any carried-forward id; a partial or malformed one is
  never completed from history: the listing is planned with ``ref`` and only the customer's
  OWN record matching it may be followed up (several or none: the customer is asked).
* Any other action: one call of its tool, arguments from ``arg_sources`` (the question, a
  budget such as 「200元以内」) and the action's fixed ``args``.

Word lists: ``ASKED_FIELD_CUES`` (field → cue words), ``_STATUS_FILTERS`` (listing filters),
``_SHIPPING_CUES`` (a shipping question also wants the latest shipment event).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from contracts.tools import FORM_LISTING, FORM_RECORD, ToolCallPlan, ToolResult, ToolSpec
from strategies.protocols import ToolRequest
from strategies.rules.normalize import full_to_half
from tools.refs import MIN_FRAGMENT_DIGITS, Ref, clean_text, find_refs, match_fragment

_PRICE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:元|块)?\s*(?:以内|以下|之内|左右)|预算\s*(\d+(?:\.\d+)?)")
# An id, a fragment of one, a date: a long number, optionally after a short letter prefix.
_ID_LIKE_RE = re.compile(r"(?<![A-Za-z])[A-Za-z]{0,4}[\s:#-]?\d(?:\d|[\s-](?=\d)){3,}")


def parse_max_price(question: str) -> float | None:
    """Return a budget such as 「200元以内」 → 200.0, or None."""
    match = _PRICE_RE.search(full_to_half(question))
    if not match:
        return None
    return float(match.group(1) or match.group(2))


# --- Which fields a question asks (the language side; fields are declared by the tools) ----------

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
# Fields a parcel question (「快递」 with nothing more specific) asks for.
_PARCEL_FIELDS = ["carrier", "tracking_no", "latest"]
# Statuses a listing question filters on (「还没寄出的单子」→ 待发货).
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


def asked_fields(question: str) -> list[str]:
    """Return the record fields ``question`` asks for, in a stable order (may be empty).

    「SO…是哪个快递公司送，运单号给我」→ ["carrier", "tracking_no"]; 「发货了吗」→ ["status", "latest"].
    """
    text = full_to_half(question)
    fields = [f for f, cues in ASKED_FIELD_CUES.items() if any(c in text for c in cues)]
    if "到哪一步" in text and "物流" not in text and "快递" not in text:
        fields = [f for f in fields if f != "latest"]  # 「退款进行到什么程度」 asks the order's state
    if "快递" in text and not fields:
        fields = list(_PARCEL_FIELDS)
    if any(c in text for c in _SHIPPING_CUES) and "latest" not in fields:
        fields.append("latest")  # 「发货了吗」: the state, plus the shipment when there is one
    return fields


def status_filter(question: str) -> tuple[str, ...]:
    """Return the record states a listing question asks about (「还没发货」→ 待发货), or ()."""
    text = full_to_half(question)
    for cues, statuses in _STATUS_FILTERS:
        if any(c in text for c in cues):
            return statuses
    return ()


# --- The declarations, read ----------------------------------------------------------------------


def _spec(tools: Iterable[ToolSpec], name: str) -> ToolSpec | None:
    return next((s for s in tools if s.name == name), None)


def action_tool(action: Mapping[str, Any], tools: Iterable[ToolSpec]) -> ToolSpec | None:
    """Return the registered tool serving a profile action: by ``tool`` name or ``capability``."""
    specs = list(tools)
    named = _spec(specs, str(action.get("tool") or ""))
    if named is not None:
        return named
    capability = action.get("capability")
    return next((s for s in specs if capability and capability in s.capabilities), None)


def is_record_read(spec: ToolSpec | None) -> bool:
    """Return True for a read tool about one kind of record (an order, a ticket …)."""
    return spec is not None and not spec.write and bool(spec.answers.subject) \
        and bool({FORM_RECORD, FORM_LISTING} & set(spec.answers.forms))


def record_readers(tools: Iterable[ToolSpec], subject: str) -> list[ToolSpec]:
    """Return the read tools answering questions about one named ``subject`` record."""
    return [s for s in tools if is_record_read(s) and s.answers.subject == subject
            and FORM_RECORD in s.answers.forms and s.id_arg]


def listing_tool(tools: Iterable[ToolSpec], subject: str) -> ToolSpec | None:
    """Return the tool that lists the caller's own ``subject`` records, if one is declared."""
    return next((s for s in tools if is_record_read(s) and s.answers.subject == subject
                 and FORM_LISTING in s.answers.forms), None)


def question_refs(question: str, tools: Iterable[ToolSpec], subject: str | None = None) -> list[Ref]:
    """Return the record references in ``question``, read against the declared id formats."""
    patterns = {s.id_pattern() for s in tools if s.id_pattern()
                and (subject is None or s.answers.subject == subject)}
    refs: list[Ref] = []
    for pattern in sorted(p for p in patterns if p):
        refs += [r for r in find_refs(question, pattern) if r not in refs]
    return refs


def needs_order_id(call: Mapping[str, Any], tools: Iterable[ToolSpec]) -> bool:
    """Return True when the planned call cannot run without a record id it does not have."""
    spec = _spec(tools, str(call.get("name")))
    return bool(spec and spec.needs_id and spec.id_arg and not (call.get("args") or {}).get(spec.id_arg))


# --- Planning ------------------------------------------------------------------------------------


def plan_tool_call(spec: ToolSpec, action: Mapping[str, Any], question: str,
                   record_id: str | None) -> ToolCallPlan:
    """Return the one call of ``spec`` for ``action`` (args never include the user id)."""
    args: dict[str, Any] = dict(action.get("args") or {})
    props = spec.parameters.get("properties", {})
    if spec.id_arg and record_id:
        args[spec.id_arg] = record_id
    for arg, source in spec.answers.arg_sources.items():
        if source == "question":
            args[arg] = question[: int(props.get(arg, {}).get("maxLength", len(question)))]
        elif source == "budget" and (budget := parse_max_price(question)) is not None:
            args[arg] = budget
    return {"name": spec.name, "args": args}


def plan_reads(question: str, record_id: str | None, fragment: Ref | None, action: ToolSpec,
               tools: Sequence[ToolSpec]) -> list[ToolCallPlan]:
    """Return the read calls answering a question about one record (see the module doc)."""
    subject = action.answers.subject
    readers, lister = record_readers(tools, subject), listing_tool(tools, subject)
    fields = set(asked_fields(question))
    needed = [r for r in readers if fields & set(r.answers.fields)] if fields else list(readers)
    if not needed:
        needed = [action] if action in readers else readers[:1]
    if not record_id:
        if lister is None:
            return []
        follow = [r for r in needed if r != lister] or ([action] if action != lister and action in readers else [])
        plan: ToolCallPlan = {"name": lister.name, "args": {}}
        if follow:
            plan["resolve"], plan["then"] = True, follow[0].name
        if fragment is not None:
            plan["ref"], plan["ref_suffix"] = fragment.value, fragment.suffix
        return [plan]
    ordered = sorted(needed, key=lambda r: r != lister)  # the listing (record) tool first
    out: list[ToolCallPlan] = []
    for reader in ordered:
        call: ToolCallPlan = {"name": reader.name, "args": {str(reader.id_arg): record_id}}
        if out and reader.answers.when_status:
            call["when_status"] = list(reader.answers.when_status)
        out.append(call)
    return out


class RulesToolPlanner:
    """The deterministic tool planner (offline mode and the LLM planner's fallback)."""

    def plan(self, request: ToolRequest) -> list[ToolCallPlan]:
        """Return the planned calls for the request's profile action (empty: no tool serves it)."""
        tools, question = list(request.turn.tools), request.turn.question["text"]
        spec = action_tool(request.action, tools)
        if spec is None:
            return []
        refs = question_refs(question, tools, spec.answers.subject or None)
        exact = next((r.value for r in refs if r.kind == "exact"), None)
        fragment = next((r for r in refs if r.kind == "partial"), None) if exact is None else None
        # What the customer wrote counts over history; a partial reference is never completed
        # from a carried-forward id.
        record_id = exact or (None if fragment else request.order_id)
        if is_record_read(spec) and spec.id_arg:
            return plan_reads(question, record_id, fragment, spec, tools)
        return [plan_tool_call(spec, request.action, question, record_id)]


# --- Executing a plan's follow-ups (used by the call_tools node) -----------------------------------


def listed_records(result: Mapping[str, Any], id_key: str) -> list[dict[str, Any]]:
    """Return the records of a valid listing result (the first list of dicts carrying ``id_key``)."""
    data = result.get("data") if result.get("valid") else None
    lists = data.values() if isinstance(data, dict) else []
    for value in lists:
        if isinstance(value, list) and value and all(isinstance(v, dict) and id_key in v for v in value):
            return value
    return []


def match_orders(question: str, orders: list[dict[str, Any]], id_key: str = "order_id") -> list[str]:
    """Return the ids of listed records whose item names the question names (best overlap only).

    「上回买的那个台灯送到没」 picks the order containing 「…台灯」; ties return every tied
    record. Long numbers (ids, parts of ids, dates) never count as a product's name.
    """
    grams = _bigrams(_ID_LIKE_RE.sub(" ", clean_text(question)))
    best, ids = 0, []  # at least one shared bigram (「空调」)
    for order in orders:
        names = " ".join(str(i.get("name", i)) if isinstance(i, dict) else str(i) for i in order.get("items") or [])
        score = len(grams & _bigrams(names))
        if score > best:
            best, ids = score, [str(order.get(id_key))]
        elif score == best and ids:
            ids.append(str(order.get(id_key)))
    return ids


def _bigrams(text: str) -> set[str]:
    chars = [c for c in full_to_half(text) if c.isalnum()]
    return {a + b for a, b in zip(chars, chars[1:], strict=False)}


def listing_focus(question: str, plan: Mapping[str, Any], records: list[dict[str, Any]],
                  id_key: str) -> list[str]:
    """Return the listed records the question is about.

    With a partial reference (``plan["ref"]``) only the customer's own records matching it count
    (never a product-name guess); otherwise records named by item, else by a state filter.
    """
    if plan.get("ref"):
        ref = Ref("partial", str(plan["ref"]), str(plan["ref"]), bool(plan.get("ref_suffix")))
        return match_fragment(ref, [str(r.get(id_key)) for r in records])
    named = match_orders(question, records, id_key)
    if named:
        return named
    statuses = status_filter(question)
    return [str(r.get(id_key)) for r in records if statuses and r.get("status") in statuses]


def known_status(calls: Sequence[Mapping[str, Any]], id_key: str, record_id: str) -> str | None:
    """Return the state this turn's first call on ``record_id`` reported ("" if it failed), or None."""
    for call in calls:
        if (call.get("args") or {}).get(id_key) != record_id:
            continue
        result = call.get("result") or {}
        data = result.get("data")
        return str(data.get("status") or "") if result.get("valid") and isinstance(data, dict) else ""
    return None


def skip_call(plan: Mapping[str, Any], calls: Sequence[Mapping[str, Any]], id_key: str | None) -> bool:
    """Return True when a ``when_status`` call is pointless: this turn's record shows another state."""
    record_id = (plan.get("args") or {}).get(id_key) if id_key else None
    if not plan.get("when_status") or not record_id:
        return False
    status = known_status(calls, str(id_key), str(record_id))
    return status is not None and status not in plan["when_status"]


def follow_up(plan: Mapping[str, Any], focus: list[str], records: list[dict[str, Any]],
              tools: Sequence[ToolSpec], id_key: str) -> ToolCallPlan | None:
    """Return the call on the one record a listing resolved, when the plan asks for one."""
    then = _spec(tools, str(plan.get("then") or ""))
    if not plan.get("resolve") or then is None or len(focus) != 1 or not then.id_arg:
        return None
    status = next((str(r.get("status") or "") for r in records if r.get(id_key) == focus[0]), "")
    if then.answers.when_status and status not in then.answers.when_status:
        return None
    return {"name": then.name, "args": {then.id_arg: focus[0]}, "resolved": True}


def ambiguous_ref_result(plan: Mapping[str, Any], focus: list[str], listing: ToolResult,
                         noun: str) -> ToolResult:
    """Return the observation for a partial reference that matches none or several own records.

    The customer is asked for the full id; only their own records are ever named.
    """
    written = str(plan.get("ref") or "")
    if len(written) < MIN_FRAGMENT_DIGITS:
        message = f"您提供的{noun}号「{written}」太短，无法确定是哪一笔{noun}，请提供完整的{noun}号"
    elif focus:
        message = (f"您提供的{noun}号「{written}」不完整，与您名下 {len(focus)} 笔{noun}相符："
                   f"{'、'.join(focus)}，请告诉我完整的{noun}号")
    else:
        message = f"在您名下没有找到与「{written}」相符的{noun}，请核对并提供完整的{noun}号"
    return ToolResult(code=404, data={"candidates": focus} if focus else None, valid=False,
                      source=listing["source"], timestamp=listing["timestamp"], message=message)
