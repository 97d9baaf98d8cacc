"""The LLM boundary: a ChatOpenAI for any OpenAI-compatible endpoint, or None (offline mode).

Configured by ``CSAGENT_LLM_BASE_URL``, ``CSAGENT_LLM_MODEL`` and ``CSAGENT_LLM_API_KEY`` (default
``"not-needed"`` for local servers such as llama.cpp or vLLM). The model always runs at
temperature 0 with the Chat Completions API (never the Responses API), a timeout and bounded
retries, and asks for token logprobs so the boundary router can read its confidence.

Structured output: langchain-openai 1.7's ``with_structured_output`` defaults to
``method="json_schema"``: ``response_format={"type": "json_schema", "json_schema": {"name",
"schema", "strict"}}`` in a plain ``/chat/completions`` request whose message content is the JSON
document (``method="function_calling"`` sends ``tools`` + ``tool_choice`` instead; both work).
OpenAI-compatible servers differ, so :class:`CompatChatOpenAI` adapts, remembering what failed
for the life of the model object:

- ``logprobs`` rejected (HTTP 400/422 naming it): retried and then sent without logprobs.
- ``json_schema`` response format rejected (e.g. DeepSeek: "This response_format type is
  unavailable now"): retried with ``{"type": "json_object"}`` and the JSON schema stated in the
  system message.
- JSON content wrapped in code fences or prose: parsed leniently instead of failing; content that
  is still not a valid object is reported as a parsing error (``include_raw=True`` callers get
  ``parsing_error`` and the raw message).

What a server rejected is also written to ``<data_dir>/llm_endpoints.json`` (keyed by base URL and
model), so a new process does not pay the rejected requests again.

Failing fast (issue 9.10 / 10.7): a dead or hanging endpoint must cost seconds, not minutes.

- Every call has one deadline (``CSAGENT_LLM_TIMEOUT``); retries of connection errors and 5xx
  happen only inside it, and a timeout is never retried, so retries never multiply a timeout.
- Before the first call (and after the circuit breaker closes again) the endpoint is probed with
  one ``GET`` under ``CSAGENT_LLM_PROBE_TIMEOUT`` (any HTTP answer is alive): a server that
  accepts connections but never answers costs the probe timeout, not a call timeout.
- A circuit breaker per endpoint (process-wide): a timeout or connection failure opens it at
  once, ``BREAKER_5XX`` consecutive 5xx responses open it too; while open, calls fail at once
  with :class:`~contracts.errors.LLMUnavailableError` for ``BREAKER_COOLDOWN_S`` seconds.
- A per-turn budget (``CSAGENT_LLM_TURN_BUDGET``): inside :func:`llm_turn` no call may run past
  the turn's deadline (its timeout is cut to what is left; with nothing left it fails at once).
  :func:`llm_turn` also meters the turn: calls, failures (with the step that made them), prompt
  and completion tokens and LLM time per graph node.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import re
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import httpx2 as httpx  # the HTTP client the openai package uses
import openai
from langchain_core.messages import SystemMessage
from langchain_openai import ChatOpenAI
from openai.lib._parsing._completions import type_to_response_format_param
from pydantic import BaseModel, PrivateAttr, ValidationError

from contracts.errors import LLMUnavailableError

if TYPE_CHECKING:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForLLMRun,
        CallbackManagerForLLMRun,
    )
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage
    from langchain_core.outputs import ChatGenerationChunk, ChatResult

    from csagent.config import Settings

logger = logging.getLogger(__name__)

DEFAULT_API_KEY = "not-needed"
SCHEMA_INSTRUCTION = "只输出一个 JSON 对象（不要代码块或其他文字），它必须符合这个 JSON Schema：\n{schema}"
_FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)
_MAX_ADAPTATIONS = 2  # drop logprobs, drop json_schema: each at most once per call
CAPS_FILE = "llm_endpoints.json"
BREAKER_5XX = 3  # consecutive 5xx responses that open the circuit breaker
BREAKER_COOLDOWN_S = 30.0  # how long an open breaker skips the endpoint
_MIN_CALL_S = 0.5  # a call with less time than this left in its deadline is not started


def _rejects(exc: BaseException, word: str) -> bool:
    if isinstance(exc, openai.InternalServerError):
        # llama-cpp-python's server reports request validation errors as HTTP 500 with the
        # pydantic error in the message ("'loc': ('body', 'response_format', 'type'), ...").
        message = str(exc.message).lower()
        return "validation error" in message and word in message
    if not isinstance(exc, (openai.BadRequestError, openai.UnprocessableEntityError)):
        return False
    body = exc.body if isinstance(exc.body, dict) else {}
    param = str(body.get("param") or "")
    return word in param or word in str(exc.message).lower()


def _is_llama_cpp_rejection(exc: BaseException) -> bool:
    """Return True for llama-cpp-python's 500 "Input should be 'text' or 'json_object'" error."""
    return (isinstance(exc, openai.InternalServerError)
            and "'json_object'" in str(exc.message) and "validation error" in str(exc.message))


def is_logprobs_rejection(exc: BaseException) -> bool:
    """Return True when ``exc`` is an endpoint refusing the ``logprobs`` request parameter.

    Args:
        exc: The exception raised by the OpenAI client.

    """
    return _rejects(exc, "logprobs")


def is_json_schema_rejection(exc: BaseException) -> bool:
    """Return True when ``exc`` is an endpoint refusing a ``json_schema`` response format.

    Args:
        exc: The exception raised by the OpenAI client.

    """
    return _rejects(exc, "response_format") or _rejects(exc, "json_schema")


def loads_lenient(text: str) -> Any:
    """Parse the JSON object in ``text``, tolerating code fences and surrounding prose.

    Args:
        text: Model output.

    Raises:
        ValueError: No JSON object could be read.

    """
    for candidate in [m.group(1) for m in _FENCE_RE.finditer(text)] + [text]:
        start, end = candidate.find("{"), candidate.rfind("}")
        if start < 0 or end <= start:
            continue
        try:
            return json.loads(candidate[start:end + 1])
        except json.JSONDecodeError:
            continue
    raise ValueError(f"no JSON object in model output: {text[:120]!r}")


def _schema_class(kwargs: dict[str, Any]) -> type[BaseModel] | None:
    schema = kwargs.get("response_format")
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema
    return None


def _with_instruction(messages: list[BaseMessage], schema: type[BaseModel]) -> list[BaseMessage]:
    text = SCHEMA_INSTRUCTION.format(
        schema=json.dumps(schema.model_json_schema(), ensure_ascii=False))
    if messages and isinstance(messages[0], SystemMessage) and isinstance(messages[0].content, str):
        return [SystemMessage(f"{messages[0].content}\n\n{text}"), *messages[1:]]
    return [SystemMessage(text), *messages]


def _attach_parsed(result: ChatResult, schema: type[BaseModel] | None) -> ChatResult:
    """Parse each reply's JSON content into ``schema`` (leniently) as ChatOpenAI's ``parsed``."""
    if schema is None:
        return result
    for generation in result.generations:
        message = getattr(generation, "message", None)
        if message is None or message.additional_kwargs.get("parsed") is not None:
            continue
        if not isinstance(message.content, str) or not message.content.strip():
            continue
        try:
            message.additional_kwargs["parsed"] = schema.model_validate(
                loads_lenient(message.content))
        except (ValueError, ValidationError) as exc:
            logger.debug("structured output for %s unparsable: %s", schema.__name__, exc)
    return result


class LLMBudgetExceededError(LLMUnavailableError):
    """The turn's LLM budget is spent: the step takes its offline path (the endpoint is fine)."""


# --- per-turn metering and budget -----------------------------------------------------------


@dataclass
class LLMTurnMeter:
    """What the LLM cost in one turn, and the turn's LLM deadline.

    Attributes:
        budget_s: Seconds of LLM time the turn may spend in total (None: no budget).
        started: ``time.monotonic()`` when the turn started.
        calls: Requests started (a call that failed counts too; skipped calls do not).
        ok: Calls that returned a reply.
        failed: Calls that raised, including calls refused by the breaker or the budget.
        prompt_tokens: Prompt tokens the server reported.
        completion_tokens: Completion tokens the server reported.
        per_node: Graph node → ``{"calls", "ok", "failed", "ms", "prompt_tokens",
            "completion_tokens"}``.
        errors: ``"node: error"`` for every failed call, in order.

    """

    budget_s: float | None = None
    started: float = field(default_factory=time.monotonic)
    calls: int = 0
    ok: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    per_node: dict[str, dict[str, float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def remaining(self) -> float | None:
        """Return the seconds left in the turn's budget (None: no budget)."""
        if self.budget_s is None:
            return None
        return self.budget_s - (time.monotonic() - self.started)

    def record(self, node: str, *, ms: float, ok: bool, started: bool = True,
               prompt_tokens: int = 0, completion_tokens: int = 0,
               error: str | None = None) -> None:
        """Add one call (or one refused call, ``started=False``) to the turn's figures."""
        with self._lock:
            row = self.per_node.setdefault(node, {"calls": 0, "ok": 0, "failed": 0, "ms": 0.0,
                                                  "prompt_tokens": 0, "completion_tokens": 0})
            row["calls"] += int(started)
            row["ok" if ok else "failed"] += 1
            row["ms"] = round(row["ms"] + ms, 3)
            row["prompt_tokens"] += prompt_tokens
            row["completion_tokens"] += completion_tokens
            self.calls += int(started)
            self.ok += int(ok)
            self.failed += int(not ok)
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            if error is not None:
                self.errors.append(f"{node}: {error}"[:300])

    def summary(self) -> dict[str, Any]:
        """Return the JSON-serialisable figures (what results and traces carry as ``llm``)."""
        with self._lock:
            return {"calls": self.calls, "ok": self.ok, "failed": self.failed,
                    "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": self.completion_tokens,
                    "ms": round(sum(r["ms"] for r in self.per_node.values()), 3),
                    "budget_s": self.budget_s,
                    "per_node": {k: dict(v) for k, v in self.per_node.items()},
                    "errors": list(self.errors)}


_TURN: contextvars.ContextVar[LLMTurnMeter | None] = contextvars.ContextVar(
    "csagent_llm_turn", default=None)


@contextlib.contextmanager
def llm_turn(budget_s: float | None) -> Iterator[LLMTurnMeter]:
    """Meter the LLM calls made inside the block and hold them to ``budget_s`` seconds in total.

    LangGraph runs nodes in copies of the caller's context, so a graph invoked inside the block
    shares this one meter. Nested blocks use the outer meter.

    Args:
        budget_s: Seconds of LLM time for the turn (None or <= 0: no budget, metering only).

    """
    outer = _TURN.get()
    if outer is not None:
        yield outer
        return
    meter = LLMTurnMeter(budget_s=budget_s if budget_s and budget_s > 0 else None)
    token = _TURN.set(meter)
    try:
        yield meter
    finally:
        _TURN.reset(token)


def current_turn() -> LLMTurnMeter | None:
    """Return the meter of the turn being run, if any."""
    return _TURN.get()


def _node_name(run_manager: Any) -> str:
    """Return the graph node that made the call (from LangGraph's run metadata)."""
    metadata = getattr(run_manager, "metadata", None) or {}
    node = metadata.get("langgraph_node") if isinstance(metadata, dict) else None
    return str(node) if node else "direct"


def _usage(result: Any) -> tuple[int, int]:
    """Return (prompt, completion) tokens reported for a ChatResult."""
    usage = (getattr(result, "llm_output", None) or {}).get("token_usage") or {}
    if isinstance(usage, dict) and usage:
        return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    for generation in getattr(result, "generations", []) or []:
        meta = getattr(getattr(generation, "message", None), "usage_metadata", None) or {}
        if meta:
            return int(meta.get("input_tokens") or 0), int(meta.get("output_tokens") or 0)
    return 0, 0


# --- circuit breaker (process-wide, per endpoint) ---------------------------------------------


@dataclass
class _Endpoint:
    """Health of one endpoint (base URL + model) as this process has seen it."""

    fails_5xx: int = 0
    open_until: float = 0.0
    last_error: str = ""
    probed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


_ENDPOINTS: dict[str, _Endpoint] = {}
_ENDPOINTS_LOCK = threading.Lock()


def _endpoint(key: str) -> _Endpoint:
    with _ENDPOINTS_LOCK:
        return _ENDPOINTS.setdefault(key, _Endpoint())


def reset_endpoints() -> None:
    """Forget every endpoint's health (tests; a new deployment of the server)."""
    with _ENDPOINTS_LOCK:
        _ENDPOINTS.clear()


def _is_5xx(exc: BaseException) -> bool:
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


# --- what a server accepts, remembered across processes ---------------------------------------


def load_caps(path: Path | None, key: str) -> dict[str, Any]:
    """Return what was learnt about endpoint ``key`` (``{}`` when nothing or unreadable)."""
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    entry = data.get(key) if isinstance(data, dict) else None
    return dict(entry) if isinstance(entry, dict) else {}


def save_caps(path: Path | None, key: str, caps: dict[str, Any]) -> None:
    """Merge ``caps`` into the endpoint file (atomically; trouble is logged, never raised)."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        data = data if isinstance(data, dict) else {}
        data[key] = {**(data.get(key) or {}), **caps, "updated": int(time.time())}
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        logger.warning("could not remember LLM endpoint capabilities in %s: %s", path, exc)


class CompatChatOpenAI(ChatOpenAI):
    """ChatOpenAI that adapts to what an OpenAI-compatible server accepts and fails fast.

    See the module doc. The OpenAI client's own retries are off (``max_retries=0``): this class
    retries connection errors and 5xx itself, ``call_retries`` times, inside one call deadline.
    """

    json_schema_supported: bool = True
    """False once the server rejected ``response_format`` json_schema (then json_object is used)."""

    json_object_schema: bool = False
    """True when the json_object fallback also carries ``"schema"`` (llama-cpp-python's grammar)."""

    call_timeout: float = 30.0
    """Seconds one call may take in total, retries included."""

    call_retries: int = 1
    """Extra attempts after a connection error or a 5xx, inside the call's deadline."""

    probe_timeout: float = 3.0
    """Seconds the ``GET /models`` liveness probe may take (0: no probe)."""

    caps_path: str | None = None
    """File where rejected features are remembered across processes (None: not remembered)."""

    has_circuit_breaker: ClassVar[bool] = True
    """Callers need no breaker of their own (see :func:`strategies.llm.structured.structured_call`)."""

    _stats: LLMTurnMeter = PrivateAttr(default_factory=LLMTurnMeter)

    @property
    def endpoint_key(self) -> str:
        """Return ``base_url|model``: the key of the breaker and of the capability file."""
        return f"{self.openai_api_base or ''}|{self.model_name}"

    @property
    def stats(self) -> dict[str, Any]:
        """Return this model's figures since it was built (all turns; see :class:`LLMTurnMeter`)."""
        return self._stats.summary()

    # --- adaptation ---------------------------------------------------------------------------

    def _remember(self, **caps: Any) -> None:
        save_caps(Path(self.caps_path) if self.caps_path else None, self.endpoint_key, caps)

    def _without_logprobs(self, exc: BaseException) -> bool:
        if not (self.logprobs or self.top_logprobs) or not is_logprobs_rejection(exc):
            return False
        logger.warning("LLM endpoint rejects logprobs (%s); retrying without them", exc)
        self.logprobs = None
        self.top_logprobs = None
        self._remember(logprobs=False)
        return True

    def _adapt(self, exc: BaseException, structured: bool) -> bool:
        """Switch off what the server rejected; return True if the call should be retried."""
        if self._without_logprobs(exc):
            return True
        if structured and self.json_schema_supported and is_json_schema_rejection(exc):
            logger.warning("LLM endpoint rejects json_schema output (%s); using json_object", exc)
            self.json_schema_supported = False
            # llama-cpp-python accepts {"type": "json_object", "schema": ...} and compiles the
            # schema to a grammar, so small local models cannot return the wrong JSON shape.
            self.json_object_schema = _is_llama_cpp_rejection(exc)
            self._remember(json_schema=False, json_object_schema=self.json_object_schema)
            return True
        return False

    def _prepare(
        self, messages: list[BaseMessage], kwargs: dict[str, Any]
    ) -> tuple[list[BaseMessage], dict[str, Any], type[BaseModel] | None]:
        """Send a pydantic ``response_format`` as a plain dict so content is parsed leniently."""
        schema = _schema_class(kwargs)
        if schema is None:
            return messages, kwargs, None
        if self.json_schema_supported:
            return messages, {**kwargs, "response_format": type_to_response_format_param(schema)}, schema
        response_format: dict[str, Any] = {"type": "json_object"}
        if self.json_object_schema:
            response_format["schema"] = schema.model_json_schema()
        return _with_instruction(messages, schema), {
            **kwargs, "response_format": response_format}, schema

    # --- fail fast ----------------------------------------------------------------------------

    def _deadline(self) -> float:
        """Return the monotonic deadline of a new call (call timeout cut to the turn budget)."""
        timeout = self.call_timeout
        meter = _TURN.get()
        left = meter.remaining() if meter is not None else None
        if left is not None:
            if left < _MIN_CALL_S:
                raise LLMBudgetExceededError(
                    f"LLM turn budget of {meter.budget_s:g} s spent" if meter else "budget spent")
            timeout = min(timeout, left)
        return time.monotonic() + timeout

    def _check_breaker(self) -> None:
        health = _endpoint(self.endpoint_key)
        with health.lock:
            wait = health.open_until - time.monotonic()
            if wait > 0:
                raise LLMUnavailableError(
                    f"LLM endpoint skipped for {wait:.0f} s more after: {health.last_error}")
            probe = not health.probed and self.probe_timeout > 0
        if probe:
            self._probe(health)

    def _probe(self, health: _Endpoint) -> None:
        """Check that the HTTP server answers at all; a timeout or refusal opens the breaker.

        ``GET {base_url}/`` under the probe timeout: any HTTP status counts as alive (a 404 is
        the usual answer). Not ``/models``: llama-cpp-python serves that only between two
        inferences, so a busy server would look dead; its event loop answers other paths at once.
        """
        url = f"{str(self.openai_api_base or '').rstrip('/')}/"
        try:
            httpx.get(url, timeout=self.probe_timeout)
        except httpx.TimeoutException as exc:
            error: openai.APIConnectionError = openai.APITimeoutError(request=httpx.Request("GET", url))
            error.__cause__ = exc
        except httpx.HTTPError as exc:
            error = openai.APIConnectionError(message=f"probe failed: {exc}",
                                              request=httpx.Request("GET", url))
        else:
            with health.lock:
                health.probed = True
            return
        self._trip(health, error, at_once=True)
        raise error

    def _trip(self, health: _Endpoint, exc: BaseException, *, at_once: bool) -> None:
        """Count a server failure; open the breaker at once or after ``BREAKER_5XX`` in a row."""
        with health.lock:
            health.last_error = _error_text(exc)
            health.fails_5xx = 0 if at_once else health.fails_5xx + 1
            if at_once or health.fails_5xx >= BREAKER_5XX:
                health.open_until = time.monotonic() + BREAKER_COOLDOWN_S
                health.probed = False  # probe again before the next real call
                health.fails_5xx = 0
                logger.warning("LLM endpoint %s: circuit open for %.0f s after %s",
                               self.endpoint_key, BREAKER_COOLDOWN_S, health.last_error)

    def _healthy(self) -> None:
        health = _endpoint(self.endpoint_key)
        with health.lock:
            health.fails_5xx = 0

    def _transient(self, exc: BaseException, attempt: int, deadline: float) -> bool:
        """Record a failure; return True when the call should be tried again in its deadline."""
        health = _endpoint(self.endpoint_key)
        if isinstance(exc, openai.APITimeoutError):
            self._trip(health, exc, at_once=True)
            return False  # never retried: a retry would multiply the timeout
        if isinstance(exc, openai.APIConnectionError):
            self._trip(health, exc, at_once=True)
            return False
        if _is_5xx(exc):
            self._trip(health, exc, at_once=False)
            with health.lock:
                still_closed = health.open_until <= time.monotonic()
            return (still_closed and attempt < self.call_retries
                    and deadline - time.monotonic() >= _MIN_CALL_S)
        return False

    def _account(self, node: str, started: float, *, result: Any = None,
                 error: BaseException | None = None, ran: bool = True) -> None:
        prompt, completion = _usage(result) if result is not None else (0, 0)
        ms = (time.monotonic() - started) * 1000
        err = None if error is None else _error_text(error)
        for meter in (self._stats, _TURN.get()):
            if meter is not None:
                meter.record(node, ms=ms, ok=error is None, started=ran, prompt_tokens=prompt,
                             completion_tokens=completion, error=err)

    # --- calls --------------------------------------------------------------------------------

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """Generate a reply under the call deadline, adapting to what the server rejects."""
        node, started = _node_name(run_manager), time.monotonic()
        try:
            deadline = self._deadline()
            self._check_breaker()
        except (LLMUnavailableError, openai.APIError) as exc:
            self._account(node, started, error=exc, ran=False)
            raise
        adaptations = retries = 0
        while True:
            sent, sent_kwargs, schema = self._prepare(messages, kwargs)
            timeout = max(_MIN_CALL_S, deadline - time.monotonic())
            try:
                result = super()._generate(sent, stop, run_manager, **sent_kwargs, timeout=timeout)
            except openai.APIError as exc:
                if adaptations < _MAX_ADAPTATIONS and isinstance(exc, openai.APIStatusError) \
                        and self._adapt(exc, schema is not None):
                    adaptations += 1
                    continue
                if self._transient(exc, retries, deadline):
                    retries += 1
                    continue
                self._account(node, started, error=exc)
                raise
            except Exception as exc:
                self._account(node, started, error=exc)
                raise
            self._healthy()
            self._account(node, started, result=result)
            return _attach_parsed(result, schema)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """Generate a reply asynchronously, with the same rules as :meth:`_generate`."""
        node, started = _node_name(run_manager), time.monotonic()
        try:
            deadline = self._deadline()
            self._check_breaker()
        except (LLMUnavailableError, openai.APIError) as exc:
            self._account(node, started, error=exc, ran=False)
            raise
        adaptations = retries = 0
        while True:
            sent, sent_kwargs, schema = self._prepare(messages, kwargs)
            timeout = max(_MIN_CALL_S, deadline - time.monotonic())
            try:
                result = await super()._agenerate(sent, stop, run_manager, **sent_kwargs,
                                                  timeout=timeout)
            except openai.APIError as exc:
                if adaptations < _MAX_ADAPTATIONS and isinstance(exc, openai.APIStatusError) \
                        and self._adapt(exc, schema is not None):
                    adaptations += 1
                    continue
                if self._transient(exc, retries, deadline):
                    retries += 1
                    continue
                self._account(node, started, error=exc)
                raise
            except Exception as exc:
                self._account(node, started, error=exc)
                raise
            self._healthy()
            self._account(node, started, result=result)
            return _attach_parsed(result, schema)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """Stream a reply under the call deadline; a logprobs rejection is retried without."""
        deadline = self._deadline()
        self._check_breaker()
        timeout = max(_MIN_CALL_S, deadline - time.monotonic())
        try:
            yield from super()._stream(messages, stop, run_manager, **kwargs, timeout=timeout)
        except openai.APIStatusError as exc:
            if not self._without_logprobs(exc):
                self._transient(exc, self.call_retries, deadline)
                raise
            timeout = max(_MIN_CALL_S, deadline - time.monotonic())
            yield from super()._stream(messages, stop, run_manager, **kwargs, timeout=timeout)
        except openai.APIConnectionError as exc:
            self._transient(exc, self.call_retries, deadline)
            raise

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """Stream a reply asynchronously under the call deadline; retry without logprobs."""
        deadline = self._deadline()
        self._check_breaker()
        timeout = max(_MIN_CALL_S, deadline - time.monotonic())
        try:
            async for chunk in super()._astream(messages, stop, run_manager, **kwargs,
                                                timeout=timeout):
                yield chunk
        except openai.APIStatusError as exc:
            if not self._without_logprobs(exc):
                self._transient(exc, self.call_retries, deadline)
                raise
            timeout = max(_MIN_CALL_S, deadline - time.monotonic())
            async for chunk in super()._astream(messages, stop, run_manager, **kwargs,
                                                timeout=timeout):
                yield chunk
        except openai.APIConnectionError as exc:
            self._transient(exc, self.call_retries, deadline)
            raise


def build_chat_model(settings: Settings, *, logprobs: bool = True) -> BaseChatModel | None:
    """Build the chat model for the configured OpenAI-compatible endpoint.

    Args:
        settings: Process settings; ``llm_base_url`` and ``llm_model`` must both be set.
        logprobs: Ask for token logprobs (dropped automatically if the endpoint rejects them).

    Returns:
        A temperature-0 ``ChatOpenAI`` (Chat Completions API), or None when no endpoint is
        configured, which selects the deterministic offline path everywhere. What the endpoint
        was seen to reject (``<data_dir>/llm_endpoints.json``) is applied from the start.

    """
    if not settings.llm_configured:
        if settings.llm_base_url or settings.llm_model:
            logger.warning(
                "LLM half-configured (CSAGENT_LLM_BASE_URL and CSAGENT_LLM_MODEL are both "
                "needed); running offline"
            )
        return None
    caps_path = Path(settings.data_dir) / CAPS_FILE
    caps = load_caps(caps_path, f"{settings.llm_base_url}|{settings.llm_model}")
    want_logprobs = logprobs and bool(caps.get("logprobs", True))
    model = CompatChatOpenAI(
        model=settings.llm_model or "",
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key or DEFAULT_API_KEY,  # type: ignore[arg-type]
        temperature=0.0,
        timeout=settings.llm_timeout,
        max_retries=0,  # retries are ours, inside the call deadline (never after a timeout)
        use_responses_api=False,
        logprobs=True if want_logprobs else None,
        # llama-cpp-python's server returns "logprobs": null unless top_logprobs >= 1 is asked
        top_logprobs=1 if want_logprobs else None,
        stream_usage=True,
        max_tokens=int(getattr(settings, "llm_max_tokens", 512)),  # type: ignore[call-arg]
        call_timeout=settings.llm_timeout,
        call_retries=max(0, settings.llm_max_retries),
        probe_timeout=float(getattr(settings, "llm_probe_timeout", 3.0)),
        caps_path=str(caps_path),
        json_schema_supported=bool(caps.get("json_schema", True)),
        json_object_schema=bool(caps.get("json_object_schema", False)),
    )
    logger.info("LLM: %s at %s", settings.llm_model, settings.llm_base_url)
    return model


def summarize_turns(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum per-turn LLM figures (each row's ``"llm"``, as in :attr:`CSAgent` results) for a report.

    Args:
        rows: Dicts with ``"llm"`` (a :meth:`LLMTurnMeter.summary`, or ``{}``) and ``"status"``.

    Returns:
        ``turns``, ``turns_with_calls``, ``turns_with_ok`` (turns that really used the LLM),
        ``calls``, ``ok``, ``failed``, token totals, ``calls_per_answered_turn_p50`` and
        ``per_node`` (``turns_ok``: turns in which that step got an LLM reply).

    """
    out: dict[str, Any] = {"turns": len(rows), "turns_with_calls": 0, "turns_with_ok": 0,
                           "calls": 0, "ok": 0, "failed": 0, "prompt_tokens": 0,
                           "completion_tokens": 0, "per_node": {}}
    answered_calls: list[int] = []
    for row in rows:
        usage = row.get("llm") or {}
        out["turns_with_calls"] += int(bool(usage.get("calls")))
        out["turns_with_ok"] += int(bool(usage.get("ok")))
        for key in ("calls", "ok", "failed", "prompt_tokens", "completion_tokens"):
            out[key] += int(usage.get(key) or 0)
        if row.get("status") == "answered":
            answered_calls.append(int(usage.get("calls") or 0))
        for node, figures in (usage.get("per_node") or {}).items():
            agg = out["per_node"].setdefault(node, {"turns_ok": 0, "calls": 0, "ok": 0,
                                                    "failed": 0, "ms": 0.0})
            agg["turns_ok"] += int(bool(figures.get("ok")))
            for key in ("calls", "ok", "failed"):
                agg[key] += int(figures.get(key) or 0)
            agg["ms"] = round(agg["ms"] + float(figures.get("ms") or 0.0), 3)
    answered_calls.sort()
    out["calls_per_answered_turn_p50"] = (
        answered_calls[len(answered_calls) // 2] if answered_calls else None)
    return out
