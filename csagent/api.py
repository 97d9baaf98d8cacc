"""The Python API for chat backends: one customer turn in, a typed :class:`TurnResult` out.

Example::

    from csagent.api import CSAgent

    with CSAgent() as agent:
        result = agent.ask("七天无理由退货运费谁出？", user_id="u1001", thread_id="chat-42")
        if result.status == "needs_confirmation":
            result = agent.resume("yes", user_id="u1001", thread_id="chat-42")

Conversation memory lives in a checkpointer keyed by ``thread_id`` (by default a SQLite file at
``data_dir/checkpoints.sqlite``, so a conversation survives a process restart). ``user_id`` is the
backend's authenticated user: it goes into the run context (the shop tools read it there, never
from the message) and a thread stays bound to the user who started it.

Input policy: an empty or whitespace-only message is a :class:`UsageError`; a message longer than
``max_message_chars`` (default 4,000) is rejected with :class:`MessageTooLongError` *before* the
graph runs, so the thread is untouched and the caller can ask again with a shorter message.
Nothing raised inside a run reaches the customer: the turn ends with status ``handoff``, a polite
reply, ``fail_reason`` set and the error logged; the thread stays usable for the next turn.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from langchain_core.messages import HumanMessage
from langgraph.types import Command

from csagent.config import Settings
from csagent.errors import LLMUnavailableError, UsageError

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.graph.state import CompiledStateGraph

    from graph.deps import Deps

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 4000
MAX_ID_CHARS = 200
STATUSES = ("answered", "refused", "handoff", "needs_confirmation")
ERROR_ANSWER = "抱歉，系统暂时无法可靠地处理您的问题。为避免给您错误的信息，已请人工客服稍后为您处理。"
HANDOFF_ANSWER = "您的问题已转交人工客服，请稍候，客服会尽快回复您。"
USER_KEY = "csagent_user_id"  # run metadata key recording which user owns a thread


class MessageTooLongError(UsageError):
    """The customer's message exceeds the length limit (nothing was run, the thread is intact)."""


@dataclass
class TurnResult:
    """The outcome of one turn, as a chat backend needs it.

    Attributes:
        status: ``answered | refused | handoff | needs_confirmation``.
        answer: The reply to show the customer (for a confirmation: the question to confirm).
        citations: ``[{"id", "title", "source", "version"}]`` behind the answer.
        trace_id: Id of the local trace record (and the Langfuse trace when enabled).
        thread_id: The conversation thread.
        interrupt: The interrupt payload when the run is waiting (confirm or handoff), else None.
        verification: The verifier's verdict (``overall``, ``claims``, ``checks``).
        fail_reason: Why the turn did not end in a verified answer, else None.
        node_latency_ms: Wall time per graph node (summed when a node ran more than once).

    """

    status: str
    answer: str
    citations: list[dict[str, Any]] = field(default_factory=list)
    trace_id: str = ""
    thread_id: str = ""
    interrupt: dict[str, Any] | None = None
    verification: dict[str, Any] = field(default_factory=dict)
    fail_reason: str | None = None
    node_latency_ms: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict with every field."""
        return asdict(self)

    @property
    def waiting(self) -> bool:
        """Return True when the thread waits for :meth:`CSAgent.resume` (confirm or handoff)."""
        return self.interrupt is not None


def _check_id(name: str, value: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{name} must be a non-empty string")
    if len(value) > MAX_ID_CHARS:
        raise UsageError(f"{name} is too long ({len(value)} chars, max {MAX_ID_CHARS})")
    return value.strip()


def _fail_reason_for(exc: BaseException) -> str:
    """Classify an exception raised inside a run (LLM endpoint trouble or anything else)."""
    import openai

    if isinstance(exc, (openai.APIError, LLMUnavailableError, TimeoutError)):
        return "llm_error"
    return "internal_error"


class CSAgent:
    """The customer-service agent: build once per process, call :meth:`ask` per customer turn.

    Args:
        settings: Settings (default: :meth:`Settings.from_env`).
        deps: Graph dependencies (default: :func:`csagent.runtime.build_deps` for ``settings``).
        checkpointer: A LangGraph checkpointer (default: SQLite at ``data_dir/checkpoints.sqlite``).
        max_message_chars: Longest accepted customer message.

    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        deps: Deps | None = None,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        max_message_chars: int = MAX_MESSAGE_CHARS,
    ) -> None:
        from graph.builder import build_graph

        self.settings = settings or Settings.from_env()
        if deps is None:
            from csagent.runtime import build_deps

            deps = build_deps(self.settings)
        self.deps = deps
        self.max_message_chars = max_message_chars
        self._conn: sqlite3.Connection | None = None
        if checkpointer is None:
            checkpointer = self._default_checkpointer(self.settings.data_dir)
        self.checkpointer = checkpointer
        self.graph: CompiledStateGraph[Any, Any, Any, Any] = build_graph(deps).compile(
            checkpointer=checkpointer
        )

    def _default_checkpointer(self, data_dir: Path) -> BaseCheckpointSaver[Any]:
        from langgraph.checkpoint.sqlite import SqliteSaver

        data_dir.mkdir(parents=True, exist_ok=True)
        # One connection shared by the threads of a backend: SqliteSaver serialises access.
        self._conn = sqlite3.connect(str(data_dir / "checkpoints.sqlite"), check_same_thread=False)
        return SqliteSaver(self._conn)

    # lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        """Flush tracing and close the checkpoint database this agent opened.

        A checkpointer passed in by the caller is left open.
        """
        tracing = _tracing()
        if tracing is not None:
            try:
                tracing.flush()
            except Exception as exc:  # noqa: BLE001
                logger.warning("tracing flush failed: %s", exc)
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> CSAgent:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # public API ------------------------------------------------------------------------------
    def ask(self, message: str, *, user_id: str, thread_id: str) -> TurnResult:
        """Run one customer turn.

        Args:
            message: The customer's message (1 to ``max_message_chars`` characters).
            user_id: The authenticated customer (goes into the run context, never the prompt).
            thread_id: The conversation; earlier turns of it are remembered.

        Returns:
            The turn's :class:`TurnResult`. If the thread was waiting for a confirmation, the new
            message replaces it (the pending action is dropped, nothing is executed).

        Raises:
            UsageError: Empty message, bad ids, or a thread that belongs to another user.
            MessageTooLongError: The message exceeds ``max_message_chars``.

        """
        text = self._check_message(message)
        user_id, thread_id = _check_id("user_id", user_id), _check_id("thread_id", thread_id)
        self._check_owner(user_id, thread_id)
        graph_input = {"messages": [HumanMessage(content=text)]}
        return self._run(graph_input, question=text, user_id=user_id, thread_id=thread_id)

    def resume(self, value: Any, *, user_id: str, thread_id: str) -> TurnResult:
        """Answer the question a waiting thread asked (a confirmation or a human agent's reply).

        Args:
            value: For a confirmation ``"yes"``/``"no"``/bool/``{"confirm": bool}`` (anything
                unclear counts as no); for a handoff the human agent's reply (str or
                ``{"reply": str}``).
            user_id: The authenticated customer who owns the thread.
            thread_id: The waiting thread.

        Returns:
            The :class:`TurnResult` of the resumed run.

        Raises:
            UsageError: The thread is not waiting for anything, or belongs to another user.

        """
        user_id, thread_id = _check_id("user_id", user_id), _check_id("thread_id", thread_id)
        self._check_owner(user_id, thread_id)
        try:
            snapshot = self.graph.get_state({"configurable": {"thread_id": thread_id}})
        except Exception as exc:  # noqa: BLE001 - a broken store: the run reports it as a handoff
            logger.error("cannot read thread %s: %s", thread_id, exc)
            snapshot = None
        if snapshot is not None and not snapshot.interrupts:
            raise UsageError(f"thread {thread_id!r} is not waiting for a confirmation or reply")
        question = str(snapshot.values.get("question") or "") if snapshot is not None else ""
        return self._run(Command(resume=value), question=question, user_id=user_id,
                         thread_id=thread_id, resumed=value)

    async def aask(self, message: str, *, user_id: str, thread_id: str) -> TurnResult:
        """Run :meth:`ask` in a worker thread (for asyncio chat backends)."""
        return await asyncio.to_thread(self.ask, message, user_id=user_id, thread_id=thread_id)

    async def aresume(self, value: Any, *, user_id: str, thread_id: str) -> TurnResult:
        """Run :meth:`resume` in a worker thread (for asyncio chat backends)."""
        return await asyncio.to_thread(self.resume, value, user_id=user_id, thread_id=thread_id)

    def pending(self, *, user_id: str, thread_id: str) -> dict[str, Any] | None:
        """Return the interrupt payload a thread is waiting on, or None."""
        self._check_owner(_check_id("user_id", user_id), _check_id("thread_id", thread_id))
        snapshot = self.graph.get_state({"configurable": {"thread_id": thread_id}})
        return _payload(snapshot.interrupts[0].value) if snapshot.interrupts else None

    # internals -------------------------------------------------------------------------------
    def _check_message(self, message: str) -> str:
        if not isinstance(message, str):
            raise UsageError(f"message must be a string, got {type(message).__name__}")
        text = message.strip()
        if not text:
            raise UsageError("message is empty: type a question")
        if len(text) > self.max_message_chars:
            raise MessageTooLongError(
                f"message is too long ({len(text)} characters, max {self.max_message_chars}); "
                "please shorten it or split it into several messages"
            )
        return text

    def _check_owner(self, user_id: str, thread_id: str) -> None:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        owner = None
        try:
            for checkpoint in self.checkpointer.list(config, limit=1):
                owner = (checkpoint.metadata or {}).get(USER_KEY)
        except Exception as exc:  # noqa: BLE001 - the run reports the broken store as a handoff
            logger.error("cannot read thread %s from the checkpointer: %s", thread_id, exc)
            return
        if owner is not None and owner != user_id:
            raise UsageError(f"thread {thread_id!r} belongs to another user")

    def _context(self, user_id: str) -> Any:
        from graph.context import Context

        s = self.settings
        return Context(user_id=user_id, domain_profile=s.domain_profile, top_k=s.top_k,
                       recall_k=s.recall_k, max_reflections=s.max_reflections)

    def _run(
        self,
        graph_input: Any,
        *,
        question: str,
        user_id: str,
        thread_id: str,
        resumed: Any = None,
    ) -> TurnResult:
        tracing = _tracing()
        trace_id = tracing.new_trace_id() if tracing else uuid.uuid4().hex
        callbacks: list[Any] = []
        if tracing is not None:
            try:
                callbacks = list(tracing.callbacks_for_turn(
                    user_id=user_id, thread_id=thread_id, trace_id=trace_id))
            except Exception as exc:  # noqa: BLE001 - tracing never fails a turn
                logger.warning("tracing callbacks unavailable: %s", exc)
        config: RunnableConfig = {
            "configurable": {"thread_id": thread_id},
            "callbacks": callbacks,
            "metadata": {USER_KEY: user_id, "trace_id": trace_id,
                         "langfuse_session_id": thread_id, "langfuse_user_id": user_id},
            "run_name": "csagent_turn",
        }
        updates: list[tuple[str, Any, float]] = []
        latency: dict[str, float] = {}
        interrupt: dict[str, Any] | None = None
        error: BaseException | None = None
        last = time.perf_counter()
        try:
            for chunk in self.graph.stream(graph_input, config, context=self._context(user_id),
                                           stream_mode="updates"):
                now = time.perf_counter()
                elapsed, last = (now - last) * 1000, now
                for node, update in chunk.items():
                    if node == "__interrupt__":
                        interrupt = _payload(update[0].value) if update else None
                        updates.append((node, update, 0.0))  # tracing reads the payload here
                        continue
                    latency[node] = round(latency.get(node, 0.0) + elapsed, 3)
                    updates.append((node, dict(update or {}), round(elapsed, 3)))
                    elapsed = 0.0  # nodes finishing in the same step share the step's time
        except Exception as exc:  # noqa: BLE001 - nothing may crash in front of a customer
            error = exc
        values = self._values(thread_id)
        result = self._result(values, interrupt, error, trace_id, thread_id, latency)
        if resumed is not None:
            question = question or str(resumed)
        self._trace(trace_id, thread_id, user_id, question, updates, values, result)
        return result

    def _values(self, thread_id: str) -> dict[str, Any]:
        try:
            return dict(self.graph.get_state({"configurable": {"thread_id": thread_id}}).values)
        except Exception as exc:  # noqa: BLE001 - the saver itself failed: report, don't crash
            logger.error("could not read state of thread %s: %s", thread_id, exc)
            return {}

    @staticmethod
    def _result(
        values: dict[str, Any],
        interrupt: dict[str, Any] | None,
        error: BaseException | None,
        trace_id: str,
        thread_id: str,
        latency: dict[str, float],
    ) -> TurnResult:
        common: dict[str, Any] = {"trace_id": trace_id, "thread_id": thread_id,
                                  "node_latency_ms": latency}
        if error is not None:
            reason = _fail_reason_for(error)
            logger.error("turn failed on thread %s (%s): %s: %s", thread_id, reason,
                         type(error).__name__, error, exc_info=logger.isEnabledFor(logging.DEBUG))
            return TurnResult(status="handoff", answer=ERROR_ANSWER, fail_reason=reason,
                              **common)
        if interrupt is not None:
            kind = interrupt.get("type")
            if kind == "confirm":
                answer = str(interrupt.get("prompt") or "请确认是否执行该操作（是/否）。")
                status = "needs_confirmation"
            else:
                answer = str(values.get("answer") or HANDOFF_ANSWER)
                status = "handoff"
            return TurnResult(status=status, answer=answer, interrupt=interrupt,
                              citations=list(values.get("citations") or []),
                              verification=dict(values.get("verification") or {}),
                              fail_reason=values.get("fail_reason") or interrupt.get("reason"),
                              **common)
        status = str(values.get("status") or "")
        if status not in STATUSES:
            logger.error("graph ended without a valid status (%r) on thread %s", status, thread_id)
            return TurnResult(status="handoff", answer=ERROR_ANSWER, fail_reason="internal_error",
                              **common)
        return TurnResult(
            status=status,
            answer=str(values.get("answer") or ""),
            citations=list(values.get("citations") or []),
            verification=dict(values.get("verification") or {}),
            fail_reason=values.get("fail_reason"),
            **common,
        )

    def _trace(
        self,
        trace_id: str,
        thread_id: str,
        user_id: str,
        question: str,
        updates: list[tuple[str, Any, float]],
        values: dict[str, Any],
        result: TurnResult,
    ) -> None:
        """Write the local trace; tracing trouble is logged and never fails the turn."""
        tracing = _tracing()
        if tracing is None:
            return
        final_state = {**values, "status": result.status, "answer": result.answer,
                       "fail_reason": result.fail_reason, "interrupt": result.interrupt,
                       "node_latency_ms": result.node_latency_ms}
        try:
            record = tracing.build_trace_record(
                trace_id=trace_id, thread_id=thread_id, user_id=user_id, question=question,
                updates=updates, final_state=final_state)
            tracing.write_trace(self.settings.traces_dir, record)
        except Exception as exc:  # noqa: BLE001
            logger.warning("could not write trace %s: %s", trace_id, exc)


def _payload(value: Any) -> dict[str, Any]:
    """Return an interrupt value as a dict (non-dict payloads are wrapped)."""
    return dict(value) if isinstance(value, dict) else {"type": "unknown", "value": value}


def _tracing() -> Any:
    """Return the :mod:`csagent.tracing` module, or None if it cannot be imported."""
    try:
        from csagent import tracing
    except ImportError as exc:
        logger.warning("tracing disabled: %s", exc)
        return None
    return tracing
