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
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import openai
from langchain_core.messages import SystemMessage
from langchain_openai import ChatOpenAI
from openai.lib._parsing._completions import type_to_response_format_param
from pydantic import BaseModel, ValidationError

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


class CompatChatOpenAI(ChatOpenAI):
    """ChatOpenAI that adapts to what an OpenAI-compatible server accepts (see the module doc)."""

    json_schema_supported: bool = True
    """False once the server rejected ``response_format`` json_schema (then json_object is used)."""

    json_object_schema: bool = False
    """True when the json_object fallback also carries ``"schema"`` (llama-cpp-python's grammar)."""

    def _without_logprobs(self, exc: BaseException) -> bool:
        if not (self.logprobs or self.top_logprobs) or not is_logprobs_rejection(exc):
            return False
        logger.warning("LLM endpoint rejects logprobs (%s); retrying without them", exc)
        self.logprobs = None
        self.top_logprobs = None
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

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """Generate a reply, adapting to rejected logprobs / json_schema and fenced JSON."""
        for attempt in range(_MAX_ADAPTATIONS + 1):
            sent, sent_kwargs, schema = self._prepare(messages, kwargs)
            try:
                result = super()._generate(sent, stop, run_manager, **sent_kwargs)
            except openai.APIStatusError as exc:
                if attempt < _MAX_ADAPTATIONS and self._adapt(exc, schema is not None):
                    continue
                raise
            return _attach_parsed(result, schema)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """Generate a reply asynchronously, with the same adaptations as :meth:`_generate`."""
        for attempt in range(_MAX_ADAPTATIONS + 1):
            sent, sent_kwargs, schema = self._prepare(messages, kwargs)
            try:
                result = await super()._agenerate(sent, stop, run_manager, **sent_kwargs)
            except openai.APIStatusError as exc:
                if attempt < _MAX_ADAPTATIONS and self._adapt(exc, schema is not None):
                    continue
                raise
            return _attach_parsed(result, schema)
        raise AssertionError("unreachable")  # pragma: no cover

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """Stream a reply; a logprobs rejection (raised before any chunk) is retried without."""
        try:
            yield from super()._stream(messages, stop, run_manager, **kwargs)
        except openai.APIStatusError as exc:
            if not self._without_logprobs(exc):
                raise
            yield from super()._stream(messages, stop, run_manager, **kwargs)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """Stream a reply asynchronously; retry without logprobs when they are rejected."""
        try:
            async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
                yield chunk
        except openai.APIStatusError as exc:
            if not self._without_logprobs(exc):
                raise
            async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
                yield chunk


def build_chat_model(settings: Settings, *, logprobs: bool = True) -> BaseChatModel | None:
    """Build the chat model for the configured OpenAI-compatible endpoint.

    Args:
        settings: Process settings; ``llm_base_url`` and ``llm_model`` must both be set.
        logprobs: Ask for token logprobs (dropped automatically if the endpoint rejects them).

    Returns:
        A temperature-0 ``ChatOpenAI`` (Chat Completions API), or None when no endpoint is
        configured, which selects the deterministic offline path everywhere.

    """
    if not settings.llm_configured:
        if settings.llm_base_url or settings.llm_model:
            logger.warning(
                "LLM half-configured (CSAGENT_LLM_BASE_URL and CSAGENT_LLM_MODEL are both "
                "needed); running offline"
            )
        return None
    model = CompatChatOpenAI(
        model=settings.llm_model or "",
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key or DEFAULT_API_KEY,  # type: ignore[arg-type]
        temperature=0.0,
        timeout=settings.llm_timeout,
        max_retries=settings.llm_max_retries,
        use_responses_api=False,
        logprobs=True if logprobs else None,
        stream_usage=True,
    )
    logger.info("LLM: %s at %s", settings.llm_model, settings.llm_base_url)
    return model
