"""Test doubles at the LLM boundary only: a scripted chat model that fails loudly.

``ScriptedChatModel(["...json...", AIMessage(...), RuntimeError("boom")])`` answers each call
with the next item (an exception item is raised), records every prompt in ``.prompts``, and
raises :class:`ScriptExhausted` when a call arrives after the script ran out.
``with_structured_output(S, include_raw=True)`` parses the scripted text as JSON like
langchain-openai's ``json_schema`` method; ``bind_tools`` records the tools and returns the model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, PrivateAttr

ScriptItem = str | dict[str, Any] | BaseMessage | BaseException | Callable[[list[BaseMessage]], Any]


class ScriptExhausted(AssertionError):
    """The fake model was called more times than its script allows."""


class ScriptedChatModel(BaseChatModel):
    """A chat model that replays a script and records every prompt it receives."""

    script: list[Any]
    _prompts: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _tools: list[Any] = PrivateAttr(default_factory=list)
    _position: int = PrivateAttr(default=0)

    def __init__(self, script: Sequence[ScriptItem], **kwargs: Any) -> None:
        super().__init__(script=list(script), **kwargs)  # type: ignore[call-arg]

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    @property
    def prompts(self) -> list[list[BaseMessage]]:
        """Every prompt received, in order."""
        return self._prompts

    @property
    def remaining(self) -> int:
        """Script items not used yet."""
        return len(self.script) - self._position

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        self._prompts.append(list(messages))
        if self._position >= len(self.script):
            last = messages[-1].content if messages else ""
            raise ScriptExhausted(
                f"ScriptedChatModel script ran out after {len(self.script)} calls; "
                f"unexpected call #{self._position + 1} with last message: {str(last)[:200]!r}")
        item = self.script[self._position]
        self._position += 1
        if callable(item) and not isinstance(item, BaseMessage):
            item = item(messages)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, BaseMessage):
            return AIMessage(content=item.content, **{k: v for k, v in item.__dict__.items()
                                                      if k in ("tool_calls", "response_metadata")})
        if isinstance(item, dict):
            return AIMessage(content=json.dumps(item, ensure_ascii=False))
        return AIMessage(content=str(item))

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next(messages))])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        self._tools.extend(tools)
        return self

    def with_structured_output(self, schema: Any, *, include_raw: bool = False,
                               **kwargs: Any) -> Runnable[Any, Any]:
        def run(messages: Any) -> Any:
            raw = self.invoke(messages)
            parsed, error = None, None
            try:
                data = json.loads(str(raw.content))
                parsed = schema.model_validate(data) if isinstance(schema, type) and issubclass(schema, BaseModel) else data
            except Exception as exc:  # noqa: BLE001 - mirrors langchain's parsing_error
                error = exc
            if include_raw:
                return {"raw": raw, "parsed": parsed, "parsing_error": error}
            if error is not None:
                raise error
            return parsed

        return RunnableLambda(run)


# ---------------------------------------------------------------------------------------------
# Shared fixtures built once per test process (a real index and a real shop database)
# ---------------------------------------------------------------------------------------------

FIXTURE_KB = __import__("pathlib").Path(__file__).resolve().parent / "fixtures" / "kb"
_INDEX_CACHE: dict[str, Any] = {}


def fixture_index() -> Any:
    """Return a real ``KnowledgeIndex`` over ``tests/fixtures/kb`` (built once per process)."""
    if "index" not in _INDEX_CACHE:
        import atexit
        import shutil
        import tempfile

        from knowledge.index import KnowledgeIndex
        from knowledge.ingest import ingest_paths

        folder = tempfile.mkdtemp(prefix="csagent-fixture-index-")
        atexit.register(shutil.rmtree, folder, True)
        ingest_paths([FIXTURE_KB], folder, reset=True, progress=False)
        _INDEX_CACHE["index"] = KnowledgeIndex.open(folder)
    return _INDEX_CACHE["index"]


class ChatSession:
    """A conversation mini-language over a compiled graph (NeMo's TestChat style).

    ``chat >> "user says"`` runs one turn; ``chat.resume(value)`` answers an interrupt;
    ``chat << "text"`` asserts the last answer contains ``text``. After each call ``nodes`` holds
    the node sequence from ``stream_mode="updates"``, ``interrupt`` the pending payload (or
    None) and ``state`` the thread's values.
    """

    def __init__(self, graph: Any, *, user_id: str = "u1001", thread_id: str = "t1",
                 context: Any = None) -> None:
        from graph.context import Context

        self.graph = graph
        self.config = {"configurable": {"thread_id": thread_id}}
        self.context = context or Context(user_id=user_id)
        self.nodes: list[str] = []
        self.interrupt: Any = None
        self.state: dict[str, Any] = {}

    def _run(self, payload: Any) -> ChatSession:
        self.nodes, self.interrupt = [], None
        for update in self.graph.stream(payload, self.config, context=self.context,
                                        stream_mode="updates"):
            for name, value in update.items():
                if name == "__interrupt__":
                    self.interrupt = value[0].value
                else:
                    self.nodes.append(name)
        self.state = dict(self.graph.get_state(self.config).values)
        return self

    def __rshift__(self, text: str) -> ChatSession:
        from langchain_core.messages import HumanMessage

        return self._run({"messages": [HumanMessage(text)]})

    def resume(self, value: Any) -> ChatSession:
        """Resume the pending interrupt with ``value``."""
        from langgraph.types import Command

        return self._run(Command(resume=value))

    def __lshift__(self, expected: str) -> ChatSession:
        answer = self.state.get("answer", "")
        assert expected in answer, f"expected {expected!r} in answer {answer!r}"
        return self

    @property
    def answer(self) -> str:
        """The last answer."""
        return str(self.state.get("answer", ""))

    @property
    def status(self) -> str:
        """The last status."""
        return str(self.state.get("status", ""))


# A one-document policy KB for tests that build their own tiny index (eval runner, replay).
RETURNS = """---
id: returns
title: 七天无理由退货政策
version: v1
effective_date: 2026-01-01
status: current
category: 售后
tags: 退货, 七天无理由
---
# 七天无理由退货政策

## 申请期限
商品签收后7天内，支持7天无理由退货。7天无理由退货期限自签收次日零点起计算。

## 运费
7天无理由退货属于买家原因退货，寄回商品的运费由买家承担。
"""
