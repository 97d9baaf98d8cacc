"""Structured LLM calls with bounded retries, defensive JSON parsing and logprob confidence.

Every node that may use an LLM calls :func:`structured_call`; on any failure it gets ``None`` and
a reason, records the reason in state (``llm_error``) and takes the offline path.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel, ValidationError

from contracts.errors import LLMUnavailableError

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

# Circuit breaker: once an endpoint is unreachable or timing out, the next calls to the same
# model skip it for this many seconds and take their offline path at once, instead of every
# node of every turn waiting out its own timeouts and retries.
ENDPOINT_COOLDOWN_S = 30.0
# id(model) -> (model, until, last error); the model is kept so that its id stays its own
_down_until: dict[int, tuple[BaseChatModel, float, str]] = {}
_down_lock = threading.Lock()


def _is_unreachable(exc: BaseException) -> bool:
    """Return True for connection failures and timeouts (not for a bad request or bad output)."""
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    name = type(exc).__name__
    return "Connection" in name or "Timeout" in name


def endpoint_down_reason(llm: BaseChatModel) -> str | None:
    """Return why ``llm``'s endpoint is skipped (its last failure), or None when it may be called."""
    with _down_lock:
        entry = _down_until.get(id(llm))
        if entry is None or entry[1] <= time.monotonic():
            return None
        return entry[2]


def _mark_down(llm: BaseChatModel, error: str = "unreachable") -> None:
    with _down_lock:
        _down_until[id(llm)] = (llm, time.monotonic() + ENDPOINT_COOLDOWN_S, error)
_FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


@dataclass
class LLMOutcome(Generic[T]):
    """The result of a structured call: ``value`` or ``error``, plus a logprob confidence."""

    value: T | None
    error: str | None = None
    confidence: float | None = None  # exp(mean token logprob) when the endpoint returns logprobs
    attempts: int = 0
    raw: BaseMessage | None = None  # the model's message (token logprobs in its metadata)


def parse_json_loosely(text: str) -> Any:
    """Parse JSON from model text: code fences, leading prose, trailing commas, single quotes.

    Raises:
        ValueError: when no JSON object can be recovered.

    """
    candidates = [m.group(1) for m in _FENCE_RE.finditer(text)] + [text]
    for candidate in candidates:
        start, end = candidate.find("{"), candidate.rfind("}")
        if start < 0 or end <= start:
            continue
        body = candidate[start:end + 1]
        for attempt in (body, re.sub(r",\s*([}\]])", r"\1", body)):
            try:
                return json.loads(attempt)
            except json.JSONDecodeError:
                continue
        try:
            return json.loads(re.sub(r",\s*([}\]])", r"\1", body.replace("'", '"')))
        except json.JSONDecodeError:
            continue
    raise ValueError(f"no JSON object in model output: {text[:120]!r}")


def logprob_confidence(message: BaseMessage | None) -> float | None:
    """Return exp(mean logprob) of the message's tokens, or None when there are no logprobs."""
    if message is None:
        return None
    meta = getattr(message, "response_metadata", None) or {}
    content = (meta.get("logprobs") or {}).get("content") if isinstance(meta, dict) else None
    if not content:
        return None
    values = [float(tok["logprob"]) for tok in content if isinstance(tok, dict) and "logprob" in tok]
    return math.exp(sum(values) / len(values)) if values else None


def _tokens(message: BaseMessage | None) -> list[dict[str, Any]]:
    meta = getattr(message, "response_metadata", None) or {}
    content = (meta.get("logprobs") or {}).get("content") if isinstance(meta, dict) else None
    return [t for t in content or [] if isinstance(t, dict) and "token" in t and "logprob" in t]


def value_probability(message: BaseMessage | None, key: str) -> float | None:
    """Return the probability the model gave the first token of string field ``key``'s value.

    That is the decision point of a ``Literal`` field (e.g. the route): exp(logprob) of the
    token where the value starts in the JSON the model wrote. None without logprobs or when
    the field cannot be located in the tokens.
    """
    tokens = _tokens(message)
    if not tokens:
        return None
    text = "".join(str(t["token"]) for t in tokens)
    match = re.search(rf'"{re.escape(key)}"\s*:\s*"', text)
    if match is None:
        return None
    position = 0
    for token in tokens:
        position += len(str(token["token"]))
        if position > match.end():
            return math.exp(float(token["logprob"]))
    return None


def _coerce(schema: type[T], raw: Any) -> T:
    if isinstance(raw, schema):
        return raw
    if isinstance(raw, dict):
        return schema.model_validate(raw)
    if isinstance(raw, BaseMessage):
        return schema.model_validate(parse_json_loosely(str(raw.content)))
    if isinstance(raw, str):
        return schema.model_validate(parse_json_loosely(raw))
    raise TypeError(f"unexpected structured output type {type(raw).__name__}")


def structured_call(
    llm: BaseChatModel, schema: type[T], messages: list[BaseMessage], *, retries: int = 1
) -> LLMOutcome[T]:
    """Call ``llm`` for a ``schema`` object at temperature 0, with bounded retries; never raise.

    Args:
        llm: The chat model (already configured for temperature 0 by the app).
        schema: The pydantic model the answer must fit.
        messages: The prompt messages.
        retries: Extra attempts after the first on errors or unparsable output.

    """
    down = endpoint_down_reason(llm)
    if down is not None:
        return LLMOutcome(None, f"endpoint skipped while cooling down after: {down}", None, 0)
    runnable = llm.with_structured_output(schema, include_raw=True)
    error = "not called"
    for attempt in range(1, retries + 2):
        try:
            out = runnable.invoke(messages)
        except AssertionError:
            raise  # a programming or test-script error, not an endpoint failure
        except Exception as exc:  # noqa: BLE001 - any endpoint failure falls back offline
            error = f"{type(exc).__name__}: {exc}"[:300]
            logger.warning("LLM call for %s failed (attempt %d): %s", schema.__name__, attempt, error)
            if _is_unreachable(exc):
                if not getattr(llm, "has_circuit_breaker", False):  # the app's model has its own
                    _mark_down(llm, error)
                return LLMOutcome(None, error, None, attempt)
            if isinstance(exc, LLMUnavailableError):  # breaker open or turn budget spent
                return LLMOutcome(None, error, None, attempt)
            continue
        raw_msg = out.get("raw") if isinstance(out, dict) else None
        parsed = out.get("parsed") if isinstance(out, dict) else out
        try:
            value = _coerce(schema, parsed if parsed is not None else raw_msg)
        except (ValidationError, ValueError, TypeError) as exc:
            error = f"unparsable output: {exc}"[:300]
            if isinstance(raw_msg, AIMessage) and raw_msg.tool_calls:
                try:
                    value = schema.model_validate(raw_msg.tool_calls[0]["args"])
                except ValidationError:
                    logger.warning("LLM output for %s unparsable: %s", schema.__name__, error)
                    continue
            else:
                logger.warning("LLM output for %s unparsable: %s", schema.__name__, error)
                continue
        return LLMOutcome(value, None, logprob_confidence(raw_msg), attempt,
                          raw_msg if isinstance(raw_msg, BaseMessage) else None)
    return LLMOutcome(None, error, None, retries + 1)
