"""The LLM boundary: a ChatOpenAI for any OpenAI-compatible endpoint, or None (offline mode).

Configured by ``CSAGENT_LLM_BASE_URL``, ``CSAGENT_LLM_MODEL`` and ``CSAGENT_LLM_API_KEY`` (default
``"not-needed"`` for local servers such as llama.cpp or vLLM). The model always runs at
temperature 0 with the Chat Completions API (never the Responses API), a timeout and bounded
retries, and asks for token logprobs so the boundary router can read its confidence. Some servers
reject ``logprobs``: the first such rejection switches logprobs off for the process and the call is
retried without them.

Structured output: langchain-openai 1.7's ``with_structured_output`` defaults to
``method="json_schema"``, i.e. ``response_format={"type": "json_schema", ...}`` in a plain
``/chat/completions`` request whose message content is the JSON document;
``method="function_calling"`` sends ``tools`` + ``tool_choice`` instead. Both work through this model.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import openai
from langchain_openai import ChatOpenAI

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


def is_logprobs_rejection(exc: BaseException) -> bool:
    """Return True when ``exc`` is an endpoint refusing the ``logprobs`` request parameter.

    Args:
        exc: The exception raised by the OpenAI client.

    """
    if not isinstance(exc, (openai.BadRequestError, openai.UnprocessableEntityError)):
        return False
    body = exc.body if isinstance(exc.body, dict) else {}
    param = str(body.get("param") or "")
    return "logprobs" in param or "logprobs" in str(exc.message).lower()


class CompatChatOpenAI(ChatOpenAI):
    """ChatOpenAI that drops ``logprobs`` (once, for the process) when the server rejects them."""

    def _without_logprobs(self, exc: BaseException) -> bool:
        if not (self.logprobs or self.top_logprobs) or not is_logprobs_rejection(exc):
            return False
        logger.warning("LLM endpoint rejects logprobs (%s); retrying without them", exc)
        self.logprobs = None
        self.top_logprobs = None
        return True

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """Generate a reply, retrying once without logprobs if the endpoint rejects them."""
        try:
            return super()._generate(messages, stop, run_manager, **kwargs)
        except openai.APIStatusError as exc:
            if not self._without_logprobs(exc):
                raise
            return super()._generate(messages, stop, run_manager, **kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """Generate a reply asynchronously, retrying once without rejected logprobs."""
        try:
            return await super()._agenerate(messages, stop, run_manager, **kwargs)
        except openai.APIStatusError as exc:
            if not self._without_logprobs(exc):
                raise
            return await super()._agenerate(messages, stop, run_manager, **kwargs)

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
