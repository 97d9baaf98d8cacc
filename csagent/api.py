"""The Python API for chat backends: one customer turn in, a typed :class:`TurnResult` out.

Example::

    from csagent.api import CSAgent

    with CSAgent() as agent:
        result = agent.ask("退货的邮费要自己付吗？", user_id="u1001", thread_id="chat-42")
        if result.status == "needs_confirmation":
            result = agent.resume("yes", user_id="u1001", thread_id="chat-42")

Conversation memory lives in a checkpointer keyed by ``thread_id`` (by default a SQLite file at
``data_dir/checkpoints.sqlite``; with ``CSAGENT_DATABASE_URL=postgresql://…`` in Postgres, see
:func:`csagent.runtime.open_backend`). ``user_id`` is the backend's authenticated user: it goes
into the run context (the shop tools read it there, never from the message) and a thread stays
bound to the user who started it.

Concurrency and recovery (issue 9):

* One run at a time per thread, in every process that shares the store: each call holds the
  thread's lock (:mod:`csagent.locks`) from the ownership check to the end of the run, and its
  :class:`TurnResult` is built from that run's own output. Two users racing for a new thread id:
  the first claims it, the other gets :class:`ForeignThreadError`.
* Confirmations are idempotent: the resumed confirmation and every write tool it calls are
  journalled (:mod:`csagent.store`); a second confirmation of the same action gets the first
  one's result, and a write runs at most once.
* A run killed mid-way (``kill -9`` after a write, before the reply) is finished by the next call
  on the thread: the write's result comes from the journalled tool result, and is returned in
  :attr:`TurnResult.recovered`.
* A handed-off thread is answered only by a human agent through :meth:`CSAgent.reply_as_agent`
  (the desk, or ``csagent chat --as-agent``); the customer's :meth:`CSAgent.resume` cannot
  author the human's reply.

Input policy: an empty or whitespace-only message is a :class:`UsageError`; a message longer than
``max_message_chars`` (default 4,000) is rejected with :class:`MessageTooLongError` *before* the
graph runs, so the thread is untouched and the caller can ask again with a shorter message.
Nothing raised inside a run reaches the customer: the turn ends with status ``handoff``, a polite
reply, ``fail_reason`` set and the error logged; the thread stays usable for the next turn.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from types import TracebackType
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import Command

from csagent.config import Settings
from csagent.errors import LLMUnavailableError, UsageError
from csagent.llm import llm_turn
from csagent.locks import DEFAULT_LOCK_TIMEOUT, ThreadBusyError
from strategies.rules.confirm import is_confirmation
from strategies.rules.hygiene import clean_text

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.graph.state import CompiledStateGraph

    from csagent.runtime import Backend
    from csagent.store import ThreadStore
    from graph.deps import Deps

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 4000
MAX_ID_CHARS = 200
STATUSES = ("answered", "refused", "handoff", "needs_confirmation")
ERROR_ANSWER = "抱歉，系统暂时无法可靠地处理您的问题。为避免给您错误的信息，已请人工客服稍后为您处理。"
HANDOFF_ANSWER = "您的问题已转交人工客服，请稍候，客服会尽快回复您。"
USER_KEY = "csagent_user_id"  # run metadata key recording which user owns a thread


HUMAN_NODE = "handoff_to_human"  # the graph node whose update carries a human agent's reply
EventSink = Callable[[dict[str, Any]], None]

__all__ = ["CSAgent", "ForeignThreadError", "HandoffPendingError", "MessageTooLongError",
           "NotHandedOffError", "NothingPendingError", "ThreadBusyError", "TurnResult",
           "UnknownThreadError"]


class MessageTooLongError(UsageError):
    """The customer's message exceeds the length limit (nothing was run, the thread is intact)."""


class UnknownThreadError(UsageError):
    """No conversation with this thread id exists."""


class ForeignThreadError(UsageError):
    """The thread belongs to another user."""


class NothingPendingError(UsageError):
    """A confirmation was sent but the thread is not waiting for one."""


class HandoffPendingError(UsageError):
    """The thread waits for a human agent: only an agent can answer it."""


class NotHandedOffError(UsageError):
    """An agent reply to a thread that is not handed off to a human."""


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
        llm: What the LLM cost this turn (``calls``, ``ok``, ``failed``, tokens, ``per_node``,
            ``errors``; see :class:`csagent.llm.LLMTurnMeter`); ``{}`` when no LLM is configured.
        answered_by: ``agent`` (the verified pipeline) or ``human`` (a human agent's reply).
        recovered: The result of an earlier turn that a killed process never finished and this
            call completed first (e.g. the report of a write that ran), else None.

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
    llm: dict[str, Any] = field(default_factory=dict)
    answered_by: str = "agent"
    recovered: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict with every field."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnResult:
        """Rebuild a result from :meth:`to_json` output (unknown keys are ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def waiting(self) -> bool:
        """Return True when the thread waits for :meth:`CSAgent.resume` (confirm or handoff)."""
        return self.interrupt is not None


def _check_id(name: str, value: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{name} must be a non-empty string")
    value = clean_text(value)  # [rel] 9.11
    if len(value) > MAX_ID_CHARS:
        raise UsageError(f"{name} is too long ({len(value)} chars, max {MAX_ID_CHARS})")
    return value.strip()


def _fail_reason_for(exc: BaseException) -> str:
    """Classify an exception raised inside a run (LLM endpoint trouble or anything else)."""
    import openai

    if isinstance(exc, (openai.APIError, LLMUnavailableError, TimeoutError)):
        return "llm_error"
    return "internal_error"


# The confirmation a run resumes (its interrupt id) and the store that journals its writes:
# set around each run, read by :class:`_JournaledTools` inside the graph's worker threads.
_ACTION_SCOPE: contextvars.ContextVar[tuple[ThreadStore, str, str] | None] = (
    contextvars.ContextVar("csagent_action_scope", default=None))


class _JournaledTools:
    """Wrap the shop tools so a confirmed write runs at most once per confirmation.

    Inside a resumed confirmation, a write tool's call is journalled under the confirmation's
    interrupt id, tool name and arguments: a second run of the same confirmation (a double
    click, or a retry after a crash) gets the journalled result instead of writing again.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._writes = {spec.name for spec in inner.specs() if getattr(spec, "write", False)}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def specs(self) -> Any:
        """Return the wrapped backend's tool specs."""
        return self._inner.specs()

    def call(self, name: str, args: dict[str, Any], *, user_id: str) -> Any:
        """Call a tool; a write inside a confirmation is journalled and never repeated."""
        scope = _ACTION_SCOPE.get()
        if scope is None or name not in self._writes:
            return self._inner.call(name, args, user_id=user_id)
        store, thread_id, interrupt_id = scope
        digest = hashlib.sha256(json.dumps(args, sort_keys=True, ensure_ascii=False,
                                           default=str).encode()).hexdigest()[:16]
        key = f"write:{interrupt_id}:{name}:{digest}"
        entry = store.action(key)
        if entry is not None and entry["status"] == "done":
            logger.warning("write %s of confirmation %s already ran: reporting its result",
                           name, interrupt_id)
            return entry["result"]
        if entry is not None:
            logger.error("write %s of confirmation %s may have been interrupted; running it "
                         "again (the tool's own checks reject a duplicate)", name, interrupt_id)
        store.begin_action(key, thread_id, {"tool": name, "args": args, "user_id": user_id})
        result = self._inner.call(name, args, user_id=user_id)
        store.finish_action(key, dict(result))
        return result


class CSAgent:
    """The customer-service agent: build once per process, call :meth:`ask` per customer turn.

    Args:
        settings: Settings (default: :meth:`Settings.from_env`).
        deps: Graph dependencies (default: :func:`csagent.runtime.build_deps` for ``settings``).
        checkpointer: A LangGraph checkpointer (default: the backend's, see ``backend``).
        max_message_chars: Longest accepted customer message.
        backend: The conversation backend (checkpointer, thread store, locks); default
            :func:`csagent.runtime.open_backend` (SQLite files in ``data_dir``, or Postgres when
            ``CSAGENT_DATABASE_URL`` is set), closed by :meth:`close`.
        lock_timeout: Seconds a call waits for a busy thread before :class:`ThreadBusyError`.
        db_connections: Postgres only: the most connections per pool of the backend this agent
            opens (see :func:`csagent.runtime.open_backend`); default: sized for many turns.

    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        deps: Deps | None = None,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        max_message_chars: int = MAX_MESSAGE_CHARS,
        backend: Backend | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        db_connections: int | None = None,
    ) -> None:
        from csagent.runtime import open_backend
        from graph.builder import build_graph

        self.settings = settings or Settings.from_env()
        if deps is None:
            from csagent.runtime import build_deps

            deps = build_deps(self.settings)
        self.deps = dataclasses.replace(deps, shop=_JournaledTools(deps.shop))
        self.max_message_chars = max_message_chars
        self.lock_timeout = lock_timeout
        self._own_backend = backend is None
        self.backend = backend or open_backend(self.settings, checkpointer,
                                               connections=db_connections)
        self.checkpointer = checkpointer or self.backend.checkpointer
        self.store = self.backend.store
        self.locks = self.backend.locks
        self.graph: CompiledStateGraph[Any, Any, Any, Any] = build_graph(self.deps).compile(
            checkpointer=self.checkpointer
        )

    # lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        """Flush tracing and close the conversation backend this agent opened.

        A backend or checkpointer passed in by the caller is left open.
        """
        tracing = _tracing()
        if tracing is not None:
            try:
                tracing.flush()
            except Exception as exc:  # noqa: BLE001
                logger.warning("tracing flush failed: %s", exc)
        if self._own_backend:
            self.backend.close()
            self._own_backend = False

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
    def ask(self, message: str, *, user_id: str, thread_id: str,
            on_event: EventSink | None = None) -> TurnResult:
        """Run one customer turn.

        Args:
            message: The customer's message (1 to ``max_message_chars`` characters).
            user_id: The authenticated customer (goes into the run context, never the prompt).
            thread_id: The conversation; earlier turns of it are remembered. A new id starts a
                conversation owned by ``user_id``.
            on_event: Called with ``{"node": name}`` as each graph step finishes (progress
                only: never any answer text before it is verified).

        Returns:
            The turn's :class:`TurnResult`. If the thread was waiting for a confirmation, the new
            message replaces it (the pending action is dropped, nothing is executed).

        Raises:
            UsageError: Empty message or bad ids.
            ForeignThreadError: The thread belongs to another user.
            MessageTooLongError: The message exceeds ``max_message_chars``.
            ThreadBusyError: Another turn on the thread did not finish within ``lock_timeout``.

        """
        text = self._check_message(message)
        user_id, thread_id = _check_id("user_id", user_id), _check_id("thread_id", thread_id)
        if self._confirms_pending(thread_id, text):  # [rel] 9.11: 「确认」 sent with ask()
            return self.resume(text, user_id=user_id, thread_id=thread_id, on_event=on_event)
        with self.locks.hold(thread_id, self.lock_timeout):
            self._own(user_id, thread_id, create=True)
            recovered = self._recover(user_id, thread_id, on_event)
            self.store.append_event(thread_id, "customer", {"text": text})
            result = self._run({"messages": [HumanMessage(content=text)]}, question=text,
                               user_id=user_id, thread_id=thread_id, on_event=on_event)
            if recovered is not None:
                result.recovered = recovered.to_json()
            self._after(result, user_id=user_id, question=text, kind="ask")
            return result

    def resume(self, value: Any, *, user_id: str, thread_id: str,
               on_event: EventSink | None = None) -> TurnResult:
        """Answer the confirmation a waiting thread asked for.

        Args:
            value: ``"确认"``/``"yes"``/bool/``{"confirm": bool}`` (anything unclear counts as
                no, and nothing is changed).
            user_id: The authenticated customer who owns the thread.
            thread_id: The waiting thread.
            on_event: Progress callback, as for :meth:`ask`.

        Returns:
            The :class:`TurnResult` of the resumed run. A repeated confirmation (double click,
            client retry) returns the first confirmation's result; the write runs once.

        Raises:
            UnknownThreadError: No such thread.
            ForeignThreadError: The thread belongs to another user.
            HandoffPendingError: The thread waits for a human agent (only
                :meth:`reply_as_agent` answers it; the customer sends a new message with ask).
            NothingPendingError: The thread is not waiting for a confirmation.

        """
        user_id, thread_id = _check_id("user_id", user_id), _check_id("thread_id", thread_id)
        with self.locks.hold(thread_id, self.lock_timeout):
            self._own(user_id, thread_id, create=False)
            snapshot = self._snapshot(thread_id)
            if snapshot is not None and snapshot.interrupts:
                pending = snapshot.interrupts[0]
                if _payload(pending.value).get("type") == "handoff":
                    raise HandoffPendingError(
                        f"thread {thread_id!r} is waiting for a human agent; only an agent can "
                        "answer it (send a new message to ask something else)")
                question = str(snapshot.values.get("question") or "") or str(value)
                result = self._run(Command(resume=value), question=question, user_id=user_id,
                                   thread_id=thread_id, on_event=on_event,
                                   resume_of=pending.id, resume_value=value)
                self._after(result, user_id=user_id, question=question, kind="resume",
                            resume_of=pending.id)
                return result
            recovered = self._recover(user_id, thread_id, on_event)
            if recovered is not None:
                return recovered
            last = self.store.latest_event(thread_id, "turn")
            if last is not None and last["payload"].get("resume_of"):
                logger.info("repeated confirmation on thread %s: returning the first result",
                            thread_id)
                return TurnResult.from_json(last["payload"]["result"])
            raise NothingPendingError(f"thread {thread_id!r} is not waiting for a confirmation")

    def reply_as_agent(self, text: str, *, agent_id: str, thread_id: str,
                       on_event: EventSink | None = None) -> TurnResult:
        """Deliver a human agent's reply to a handed-off thread (``answered_by="human"``).

        This is the only way a human reply enters a conversation; the service's desk calls it
        for an authenticated agent, and ``csagent chat --as-agent`` from a terminal.

        Args:
            text: The agent's reply (1 to ``max_message_chars`` characters).
            agent_id: The human agent's identity (recorded with the reply).
            thread_id: The handed-off thread.
            on_event: Progress callback, as for :meth:`ask`.

        Returns:
            The :class:`TurnResult` the customer sees (status ``answered``, answered_by human).

        Raises:
            UnknownThreadError: No such thread.
            NotHandedOffError: The thread is neither waiting for a human nor in the desk's queue.

        """
        text = self._check_message(text)
        agent_id, thread_id = _check_id("agent_id", agent_id), _check_id("thread_id", thread_id)
        with self.locks.hold(thread_id, self.lock_timeout):
            owner = self._owner(thread_id)
            if owner is None:
                raise UnknownThreadError(f"thread {thread_id!r} does not exist")
            snapshot = self._snapshot(thread_id)
            waiting = (snapshot is not None and bool(snapshot.interrupts)
                       and _payload(snapshot.interrupts[0].value).get("type") == "handoff")
            if not waiting and self.store.active_handoff(thread_id) is None:
                raise NotHandedOffError(f"thread {thread_id!r} is not handed off to a human agent")
            question = str((snapshot.values if snapshot else {}).get("question") or "")
            if waiting:
                result = self._run(Command(resume={"reply": text, "agent_id": agent_id}),
                                   question=question, user_id=owner, thread_id=thread_id,
                                   on_event=on_event)
            else:  # the customer moved on (or the turn failed): add the reply to the thread
                result = self._append_human_reply(text, thread_id)
            if result.answered_by == "human":
                self.store.append_event(thread_id, "turn", {
                    "result": result.to_json(), "kind": "agent", "agent_id": agent_id,
                    "question": question, "resume_of": None})
            else:
                self._after(result, user_id=owner, question=question, kind="agent")
            return result

    def finish_interrupted(self, *, thread_id: str, since: float,
                           on_event: EventSink | None = None) -> TurnResult | None:
        """Return the outcome of a call whose process died before it could answer.

        For a service that runs turns in separate processes: when one dies mid-call, the caller
        still waiting for the reply asks another process for it. Under the thread's lock this
        finishes the run the dead process left unfinished (as the next call on the thread would)
        and returns its result; a customer message whose run died before its first checkpoint
        was saved is run again; a run that had finished returns the thread's last result when
        it was recorded at or after ``since``.

        Args:
            thread_id: The thread of the lost call.
            since: When the lost call was sent (``time.time()``).
            on_event: Progress callback, as for :meth:`ask`.

        Returns:
            The lost call's result, or None when nothing of it can be finished (a confirmation
            that died before it was applied: the question is still pending, the thread is
            unchanged, and the caller may send it again).

        """
        thread_id = _check_id("thread_id", thread_id)
        with self.locks.hold(thread_id, self.lock_timeout):
            owner = self._owner(thread_id)
            if owner is None:
                return None
            result = self._recover(owner, thread_id, on_event)
            if result is not None:
                return result
            last = self.store.latest_event(thread_id, "turn")
            if last is not None and float(last["created_at"]) >= since:
                return TurnResult.from_json(last["payload"]["result"])
            return None

    async def aask(self, message: str, *, user_id: str, thread_id: str) -> TurnResult:
        """Run :meth:`ask` in a worker thread (for asyncio chat backends)."""
        return await asyncio.to_thread(self.ask, message, user_id=user_id, thread_id=thread_id)

    async def aresume(self, value: Any, *, user_id: str, thread_id: str) -> TurnResult:
        """Run :meth:`resume` in a worker thread (for asyncio chat backends)."""
        return await asyncio.to_thread(self.resume, value, user_id=user_id, thread_id=thread_id)

    async def areply_as_agent(self, text: str, *, agent_id: str, thread_id: str) -> TurnResult:
        """Run :meth:`reply_as_agent` in a worker thread."""
        return await asyncio.to_thread(self.reply_as_agent, text, agent_id=agent_id,
                                       thread_id=thread_id)

    def pending(self, *, user_id: str, thread_id: str) -> dict[str, Any] | None:
        """Return the interrupt payload a thread is waiting on, or None (also for a new thread)."""
        user_id, thread_id = _check_id("user_id", user_id), _check_id("thread_id", thread_id)
        owner = self._owner(thread_id)
        if owner is None:
            return None
        if owner != user_id:
            raise ForeignThreadError(f"thread {thread_id!r} belongs to another user")
        snapshot = self._snapshot(thread_id)
        return _payload(snapshot.interrupts[0].value) if snapshot and snapshot.interrupts else None

    def history(self, *, user_id: str, thread_id: str, after: int = 0) -> list[dict[str, Any]]:
        """Return the customer-visible events of a thread (messages and results), oldest first.

        Raises:
            UnknownThreadError: No such thread.
            ForeignThreadError: The thread belongs to another user.

        """
        user_id, thread_id = _check_id("user_id", user_id), _check_id("thread_id", thread_id)
        self._own(user_id, thread_id, create=False)
        return self.store.events(thread_id, after=after)

    def open_thread(self, message: str, *, user_id: str, thread_id: str) -> None:
        """Check a message and make ``user_id`` the owner of its thread before the turn runs.

        For a server that acknowledges a turn before running it: from the acknowledgement on,
        the thread exists (its history reads, another user is refused), even while the turn
        still waits for the thread's lock. :meth:`ask` checks the same again under the lock.

        Raises:
            UsageError: Empty message or bad ids.
            ForeignThreadError: The thread belongs to another user.
            MessageTooLongError: The message exceeds ``max_message_chars``.

        """
        self._check_message(message)
        user_id, thread_id = _check_id("user_id", user_id), _check_id("thread_id", thread_id)
        self._own(user_id, thread_id, create=True)  # the claim is atomic: the first one wins

    def owner_of(self, thread_id: str) -> str | None:
        """Return the user who owns ``thread_id`` (None for an unknown thread)."""
        return self._owner(_check_id("thread_id", thread_id))

    # internals -------------------------------------------------------------------------------
    def _confirms_pending(self, thread_id: str, text: str) -> bool:
        """Return True when ``text`` confirms the action the thread is waiting on."""
        snapshot = self._snapshot(thread_id)
        if snapshot is None or not snapshot.interrupts:
            return False
        payload = _payload(snapshot.interrupts[0].value)
        action = payload.get("action")
        return payload.get("type") == "confirm" and isinstance(action, dict) \
            and is_confirmation(text, action)

    def _check_message(self, message: str) -> str:
        if not isinstance(message, str):
            raise UsageError(f"message must be a string, got {type(message).__name__}")
        text = clean_text(message).strip()  # [rel] 9.11: lone surrogates/controls → traceable
        if not text:
            raise UsageError("message is empty: type a question")
        if len(text) > self.max_message_chars:
            raise MessageTooLongError(
                f"message is too long ({len(text)} characters, max {self.max_message_chars}); "
                "please shorten it or split it into several messages"
            )
        return text

    def _snapshot(self, thread_id: str) -> Any:
        try:
            return self.graph.get_state({"configurable": {"thread_id": thread_id}})
        except Exception as exc:  # noqa: BLE001 - a broken store: the run reports it as a handoff
            logger.error("cannot read thread %s: %s", thread_id, exc)
            return None

    def _owner(self, thread_id: str) -> str | None:
        """Return the thread's owner: the store's record, else a legacy checkpoint's metadata."""
        owner = self.store.owner(thread_id)
        if owner is not None:
            return owner
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        try:
            for checkpoint in self.checkpointer.list(config, limit=1):
                legacy = (checkpoint.metadata or {}).get(USER_KEY)
                if legacy:
                    return self.store.claim(thread_id, str(legacy))
        except Exception as exc:  # noqa: BLE001 - the run reports the broken store as a handoff
            logger.error("cannot read thread %s from the checkpointer: %s", thread_id, exc)
        return None

    def _own(self, user_id: str, thread_id: str, *, create: bool) -> None:
        """Check (and for a new thread claim) ownership.

        A turn calls it with the thread's lock held; the claim itself is atomic (the first one
        wins), so :meth:`open_thread` may claim before the lock.
        """
        owner = self._owner(thread_id)
        if owner is None:
            if not create:
                raise UnknownThreadError(f"thread {thread_id!r} does not exist")
            owner = self.store.claim(thread_id, user_id)
        if owner != user_id:
            raise ForeignThreadError(f"thread {thread_id!r} belongs to another user")

    def _recover(self, user_id: str, thread_id: str, on_event: EventSink | None) -> TurnResult | None:
        """Finish the thread's last run if its process died before replying; else None."""
        flight = self.store.action(f"inflight:{thread_id}")
        if flight is None or flight["status"] != "started":
            return None
        info = dict(flight["value"] or {})
        snapshot = self._snapshot(thread_id)
        resume_of = info.get("resume_of")
        graph_input: Any = None
        if snapshot is not None and snapshot.interrupts:
            pending = snapshot.interrupts[0]
            if resume_of != pending.id or not self.store.done_actions(f"write:{pending.id}:"):
                # died before anything was executed: the pending question simply stays
                self.store.set_action(f"inflight:{thread_id}", thread_id, "done", info)
                return None
            graph_input = Command(resume=info.get("value"))
        elif snapshot is None or not (snapshot.next or snapshot.tasks):
            # (a step whose writes were saved but whose successors were not is a task with
            # writes: not in ``next``, still in ``tasks``)
            if not _never_checkpointed(info, snapshot):
                self.store.set_action(f"inflight:{thread_id}", thread_id, "done", info)
                return None
            # a customer message whose run died before its first checkpoint was saved (they are
            # saved while the next step runs): the thread is as it was, so run the message again
            graph_input = {"messages": [HumanMessage(content=str(info["question"]))]}
        logger.warning("thread %s: finishing a run a dead process left unfinished", thread_id)
        question = str(info.get("question") or "")
        result = self._run(graph_input, question=question, user_id=user_id, thread_id=thread_id,
                           on_event=on_event, resume_of=resume_of, resume_value=info.get("value"))
        self._after(result, user_id=user_id, question=question, kind="recovered",
                    resume_of=resume_of)
        return result

    def _append_human_reply(self, text: str, thread_id: str) -> TurnResult:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        update = {"answer": text, "status": "answered", "answered_by": "human", "citations": [],
                  "messages": [AIMessage(content=text)]}
        self.graph.update_state(config, update, as_node=HUMAN_NODE)
        return TurnResult(status="answered", answer=text, answered_by="human",
                          trace_id=uuid.uuid4().hex, thread_id=thread_id)

    def _after(self, result: TurnResult, *, user_id: str, question: str, kind: str,
               resume_of: str | None = None) -> None:
        """Record the turn in the thread's history; queue a handoff for the desk."""
        self.store.append_event(result.thread_id, "turn", {
            "result": result.to_json(), "kind": kind, "question": question,
            "resume_of": resume_of})
        if result.status != "handoff":
            return
        snapshot = self._snapshot(result.thread_id)
        values = dict(snapshot.values) if snapshot is not None else {}
        entry = _desk_entry(result, values, question)
        self.store.open_handoff(result.thread_id, user_id, entry["question"], entry["reason"],
                                entry)

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
        on_event: EventSink | None = None,
        resume_of: str | None = None,
        resume_value: Any = None,
    ) -> TurnResult:
        """Run the graph once (thread lock held) and build the result from this run's output."""
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
        flight = {"resume_of": resume_of, "value": resume_value, "question": question,
                  "trace_id": trace_id, "message": isinstance(graph_input, dict)}
        self.store.set_action(f"inflight:{thread_id}", thread_id, "started", flight)
        if resume_of is not None:
            self.store.begin_action(f"resume:{resume_of}", thread_id, resume_value)
        token = _ACTION_SCOPE.set((self.store, thread_id, resume_of) if resume_of else None)
        try:
            with llm_turn(getattr(self.settings, "llm_turn_budget", None)) as meter:
                out, updates, latency, interrupt, error = self._stream(graph_input, config,
                                                                       user_id, on_event)
        finally:
            _ACTION_SCOPE.reset(token)
        result = self._result(out, interrupt, error, trace_id, thread_id, latency)
        result.llm = meter.summary() if meter.calls or meter.failed else {}
        if resume_of is not None:
            self.store.finish_action(f"resume:{resume_of}", result.to_json())
        self.store.set_action(f"inflight:{thread_id}", thread_id, "done", flight)
        snapshot = self._snapshot(thread_id)  # this run's final state (the lock is held)
        values = {**(dict(snapshot.values) if snapshot is not None else {}), **out}
        self._trace(trace_id, thread_id, user_id, question, updates, values, result)
        return result

    def _stream(self, graph_input: Any, config: RunnableConfig, user_id: str,
                on_event: EventSink | None) -> tuple[dict[str, Any], list[tuple[str, Any, float]],
                                                     dict[str, float], dict[str, Any] | None,
                                                     BaseException | None]:
        """Stream one run; return its last output values, updates, latency, interrupt, error."""
        out: dict[str, Any] = {}
        updates: list[tuple[str, Any, float]] = []
        latency: dict[str, float] = {}
        interrupt: dict[str, Any] | None = None
        error: BaseException | None = None
        last = time.perf_counter()
        try:
            for mode, raw in self.graph.stream(graph_input, config,
                                               context=self._context(user_id),
                                               stream_mode=["updates", "values"]):
                chunk: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
                if mode == "values":
                    out = chunk
                    continue
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
                    _emit(on_event, {"node": node})
        except Exception as exc:  # noqa: BLE001 - nothing may crash in front of a customer
            error = exc
        return out, updates, latency, interrupt, error

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
            answered_by=str(values.get("answered_by") or "agent"),
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
                       "node_latency_ms": result.node_latency_ms, "llm": result.llm,
                       "answered_by": result.answered_by}
        try:
            record = tracing.build_trace_record(
                trace_id=trace_id, thread_id=thread_id, user_id=user_id, question=question,
                updates=updates, final_state=final_state)
            if result.llm:  # [llm] calls, tokens, per-node LLM time, every LLM failure
                record["llm"] = result.llm
            tracing.write_trace(self.settings.traces_dir, record)
        except Exception as exc:  # noqa: BLE001
            logger.warning("could not write trace %s: %s", trace_id, exc)


def _emit(sink: EventSink | None, event: dict[str, Any]) -> None:
    if sink is None:
        return
    try:
        sink(event)
    except Exception as exc:  # noqa: BLE001 - a dropped listener never fails the turn
        logger.debug("progress listener failed: %s", exc)


def _desk_entry(result: TurnResult, values: dict[str, Any], question: str) -> dict[str, Any]:
    """Return what a human agent needs about a handed-off turn (the desk's queue payload)."""
    interrupt = result.interrupt or {}
    claims = (result.verification or {}).get("claims") or []
    unsupported = [str(c.get("claim", "")) for c in claims if c.get("status") == "unsupported"]
    evidence = interrupt.get("evidence") or [
        {"id": e.get("id"), "title": e.get("title", ""), "text": str(e.get("text", ""))[:400]}
        for e in (values.get("evidence") or [])[:5]]
    conversation = []
    for message in (values.get("messages") or [])[-20:]:
        role = "customer" if getattr(message, "type", "") == "human" else "agent"
        conversation.append({"role": role, "text": str(getattr(message, "content", ""))})
    return {"question": str(interrupt.get("question") or question or ""),
            "reason": result.fail_reason or interrupt.get("reason") or "customer_request",
            "summary": str(interrupt.get("summary") or ""), "unsupported_claims": unsupported,
            "evidence": evidence, "conversation": conversation, "trace_id": result.trace_id,
            "answer": result.answer}


def _never_checkpointed(flight: dict[str, Any], snapshot: Any) -> bool:
    """Return True when a lost run was a customer message none of whose checkpoints was saved.

    Every checkpoint carries the run's ``trace_id`` (its config metadata): a thread whose latest
    checkpoint is another run's never recorded this one.
    """
    if not flight.get("message") or not str(flight.get("question") or "").strip():
        return False
    latest = (getattr(snapshot, "metadata", None) or {}) if snapshot is not None else {}
    return latest.get("trace_id") != flight.get("trace_id")


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
