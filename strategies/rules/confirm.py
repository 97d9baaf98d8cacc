"""What counts as a confirmation of a pending write action, how it is asked, and when it expires.

The confirmation prompt tells the customer to reply 「确认」. Only what the prompt asks for
confirms: 「确认」 itself (or its plain equivalents 「确定」, ``yes``, ``confirm``, ``True``,
``{"confirm": True}``), or a short reply that *names the action* with an affirmative and no
negation (「确认退款」, 「是的，取消这个订单」). Everything else — 「嗯」「行」「好」「对」「可以」
「好的」, a question, a reply that names another order — changes nothing.

A pending action carries ``requested_at`` (seconds since the epoch, set by :func:`stamp` when
the action is proposed); after ``ttl`` seconds (``CSAGENT_CONFIRM_TTL``, default
:data:`DEFAULT_TTL_SECONDS`) a confirmation no longer executes it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Literal

Decision = Literal["confirm", "decline", "expired"]

DEFAULT_TTL_SECONDS = 900.0
TTL_ENV = "CSAGENT_CONFIRM_TTL"
MAX_REPLY_CHARS = 30  # a longer message is a new request, not an answer to the prompt
# Replies that confirm whatever the prompt asked (the prompt names the action).
CONFIRM_WORDS = frozenset({"确认", "确定", "确认办理", "确认提交", "确认执行", "确认无误", "yes",
                           "confirm", "confirmed"})
_AFFIRM_RE = re.compile(r"确认|确定|同意|是的|没错|对的|要|好的|可以|请|帮我|麻烦|yes|confirm|please",
                        re.I)
_NEGATION_RE = re.compile(r"不|别|没|勿|算了|先等|等等|再想|取消操作|撤销|\bno\b|\bnot\b|n't|\bstop\b|"
                          r"\bwait\b|\bcancel (?:it|that|this)\b", re.I)
_ORDER_ID_RE = re.compile(r"SO\d{6,}", re.I)
_PUNCT = " \t\r\n。.!！,，~～、:：;；\"'“”‘’「」【】()（）"
_ACTION_PREFIX_RE = re.compile(r"^(?:申请|办理|提交|发起)")


def _normalise(text: str) -> str:
    out = []
    for ch in text:
        code = ord(ch)
        out.append(chr(code - 0xFEE0) if 0xFF01 <= code <= 0xFF5E else ch)
    return "".join(out).strip(_PUNCT).lower()


def action_terms(action: Mapping[str, Any]) -> list[str]:
    """Return the phrases that name ``action`` (「申请退款」 → 「申请退款」, 「退款」).

    Read from the action's description (「为订单 SO… 申请退款」: the words after the order id)
    or label; a term shorter than two characters is never enough to name an action.
    """
    description = str(action.get("description") or "")
    tail = _ORDER_ID_RE.split(description)[-1] if _ORDER_ID_RE.search(description) else description
    base = re.sub(r"^为", "", tail.strip()).strip()
    terms = {base, _ACTION_PREFIX_RE.sub("", base), str(action.get("label") or "")}
    if base.endswith("订单") and len(base) > 2:  # 「取消订单」 is also named by 「取消这个订单」
        verb = base[:-2]
        terms.update(f"{verb}{d}订单" for d in ("这个", "该", "此", "这笔", "我的"))
    return sorted((t for t in terms if len(t) >= 2), key=len, reverse=True)


def _order_of(action: Mapping[str, Any]) -> str:
    args = action.get("args") or {}
    return str(args.get("order_id") or "").upper() if isinstance(args, Mapping) else ""


def is_confirmation(value: Any, action: Mapping[str, Any] | None = None) -> bool:
    """Return True only for a reply that confirms ``action`` as the prompt asked.

    Args:
        value: The resume value: a string, a bool, or ``{"confirm": bool}`` / ``{"reply": str}``.
        action: The pending action (``tool``, ``args``, ``description``); needed to accept a
            reply that names the action instead of saying 「确认」.

    """
    if isinstance(value, bool):
        return value
    if isinstance(value, Mapping):
        inner = value.get("confirm", value.get("reply"))
        return is_confirmation(inner, action) if inner is not None else False
    if not isinstance(value, str):
        return False
    text = _normalise(value)
    if not text or len(text) > MAX_REPLY_CHARS:
        return False
    if text in CONFIRM_WORDS:
        return True
    if action is None or _NEGATION_RE.search(text):
        return False
    named = {m.upper() for m in _ORDER_ID_RE.findall(text)}
    if named and named != {_order_of(action)}:
        return False  # the reply is about another order
    compact = re.sub(r"[\s,，。.!！]", "", text)
    names_action = any(term.lower() in compact for term in action_terms(action))
    return names_action and bool(_AFFIRM_RE.search(compact))


def is_bare_reply(text: str) -> bool:
    """Return True for a short yes-like reply with nothing else in it (「确认」「好的」「嗯」「ok」).

    With no action pending, such a message asks nothing: it must not be answered with an
    unrelated policy quote.
    """
    norm = _normalise(text)
    return bool(norm) and bool(re.fullmatch(
        r"(?:确认|确定|好的?|嗯+|行|对的?|是的?|可以|没问题|同意|ok(?:ay)?|yes|y|confirm(?:ed)?)"
        r"(?:了|的|吧|啊|呀|哦)?", norm))


def confirm_ttl(default: float = DEFAULT_TTL_SECONDS) -> float:
    """Return the confirmation lifetime in seconds (``CSAGENT_CONFIRM_TTL``; 0 = never expires)."""
    raw = os.environ.get(TTL_ENV, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        return default  # Settings validates the variable at start-up
    return value if value >= 0 else default


def stamp(action: Mapping[str, Any], now: float) -> dict[str, Any]:
    """Return ``action`` with ``requested_at`` set (kept when already present)."""
    out = dict(action)
    out.setdefault("requested_at", float(now))
    return out


def is_expired(action: Mapping[str, Any], now: float, ttl: float | None = None) -> bool:
    """Return True when the action was requested more than ``ttl`` seconds before ``now``."""
    ttl = confirm_ttl() if ttl is None else ttl
    requested = action.get("requested_at")
    if not ttl or not isinstance(requested, int | float):
        return False
    return now - float(requested) > ttl


def decide(value: Any, action: Mapping[str, Any], now: float, ttl: float | None = None) -> Decision:
    """Return what to do with the customer's reply: ``confirm``, ``decline`` or ``expired``."""
    if not is_confirmation(value, action):
        return "decline"
    return "expired" if is_expired(action, now, ttl) else "confirm"


def _minutes(ttl: float) -> str:
    return f"{max(1, round(ttl / 60))}分钟"


def confirmation_prompt(action: Mapping[str, Any], ttl: float | None = None) -> str:
    """Return the question put to the customer: the action, its order, its consequence, the reply.

    The consequence is stated from what the system knows for certain: the write runs at once
    and cannot be undone from the conversation.
    """
    ttl = confirm_ttl() if ttl is None else ttl
    description = str(action.get("description") or "办理该操作")
    order = _order_of(action)
    where = f"（订单 {order}）" if order and order not in description else ""
    valid = f"本确认{_minutes(ttl)}内有效。" if ttl else ""
    return (f"请确认：是否{description}{where}？确认后将立即提交办理，提交后无法在对话中撤回。"
            f"回复「确认」立即办理，回复其他内容将不做任何更改。{valid}")


def declined_reply(action: Mapping[str, Any]) -> str:
    """Return the reply when the customer did not confirm (nothing was changed)."""
    description = str(action.get("description") or "办理该操作")
    return f"好的，本次没有{description}，您的订单未做任何更改。如需办理，可以随时告诉我。"


def expired_reply(action: Mapping[str, Any]) -> str:
    """Return the reply when the confirmation came after the action expired (nothing changed)."""
    description = str(action.get("description") or "办理该操作")
    return (f"这次确认已超时，为保障您的账户安全，没有{description}，您的订单未做任何更改。"
            "如仍需办理，请重新告诉我。")
