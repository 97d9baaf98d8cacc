"""The HTTP service: customer endpoints, one SSE stream per turn, and the human agents' desk.

Customers (role ``customer``, identity from the authenticator, never from the body):

* ``POST /v1/threads/{thread_id}/messages`` ``{"message": "…"}``: one turn. With
  ``Accept: text/event-stream`` the turn is a Server-Sent Events stream: ``accepted`` at once
  (a new thread is the customer's from then on: its history reads), ``progress`` per graph step
  (``{"node", "label"}``, never any answer text), then one ``result`` (the verified
  :class:`~csagent.api.TurnResult`) or one ``error``. Otherwise the response is the result as
  JSON.
* ``POST /v1/threads/{thread_id}/confirm`` ``{"decision": "confirm"|"decline"}``: answer a
  pending confirmation (same two response forms).
* ``GET /v1/threads/{thread_id}/history``: the thread's messages and replies, and what it waits
  for; ``GET /v1/threads/{thread_id}/events``: the same as a live SSE stream (a human agent's
  reply arrives here), resumable with ``after`` or ``Last-Event-ID``.

Agents (role ``agent``): ``GET /desk`` (the desk page), ``/v1/desk/handoffs`` (the queue),
``/v1/desk/handoffs/{id}`` (one handoff with the conversation), ``…/claim``, ``…/reply``,
``…/resolve``, and ``/v1/desk/traces/{trace_id}`` (the turn's local trace).

Errors are JSON ``{"error": {"code", "message"}}`` with 400/401/403/404/409/413/422 (and 500
``internal_error`` for a bug or a broken store, logged in full); bodies
larger than ``max_body_bytes`` are refused with 413 before they are read in full. A customer who
drops an SSE stream mid-turn does not cancel the turn: it finishes, and its result is in the
thread's history.

Turns run in a pool of turn processes (:mod:`csagent.service.pool`), not in the process that
serves HTTP: its event loop only parses requests, checks identities and relays events, so the
first SSE event does not wait behind CPU-bound turns. ``run_processes=0`` runs turns in threads
of the HTTP process instead (for an embedding whose agent factory cannot be pickled).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import sys
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette.sse import EventSourceResponse, ServerSentEvent
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from csagent.api import (
    CSAgent,
    ForeignThreadError,
    HandoffPendingError,
    MessageTooLongError,
    NotHandedOffError,
    NothingPendingError,
    ThreadBusyError,
    TurnResult,
    UnknownThreadError,
)
from csagent.errors import UsageError
from csagent.service.auth import Authenticator, Identity
from csagent.service.pool import Op, TurnPool, WorkerLostError

logger = logging.getLogger(__name__)

THREAD_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
MAX_TEXT = 4000
DESK_HTML = Path(__file__).with_name("desk.html")
NODE_LABELS = {  # progress labels shown to the customer (what the agent is doing, no content)
    "start_turn": "正在理解您的问题", "route_boundary": "正在判断问题类型",
    "call_tools": "正在查询订单信息", "confirm_high_risk": "正在办理",
    "rewrite_query": "正在整理检索词", "retrieve_hybrid": "正在检索知识库",
    "rerank_evidence": "正在筛选证据", "generate_answer": "正在组织回答",
    "verify_answer": "正在核实回答", "reflect": "正在复核", "finalize_answer": "即将完成",
    "handoff_to_human": "正在转接人工客服", "refuse_request": "即将完成",
    "ask_clarification": "即将完成", "reply_chitchat": "即将完成",
}


@dataclass(frozen=True)
class ServiceConfig:
    """Service limits and timings."""

    max_body_bytes: int = 64 * 1024
    run_processes: int = 2  # turn processes per HTTP worker (0: turns in threads of the worker)
    run_threads: int = 3  # turns in flight per turn process (or in the worker, run_processes=0)
    run_nice: int = 5  # turn processes yield the CPU to the HTTP process (the first SSE event)
    io_threads: int = 8  # short store reads and writes of the HTTP process
    switch_interval_s: float = 0.001  # GIL hand-over (run_processes=0: turns share the GIL)
    events_poll_s: float = 0.25  # how often a live thread stream looks for new events
    events_max_s: float = 600.0  # a live thread stream closes after this long (clients reconnect)
    ping_s: float = 15.0


# --- request and response bodies --------------------------------------------------------------
class MessageIn(BaseModel):
    """A customer message."""

    model_config = ConfigDict(extra="forbid")
    message: str = Field(min_length=1, max_length=MAX_TEXT, description="the customer's message")


class ConfirmIn(BaseModel):
    """The customer's answer to a pending confirmation."""

    model_config = ConfigDict(extra="forbid")
    decision: Literal["confirm", "decline"]


class ReplyIn(BaseModel):
    """A human agent's reply."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=MAX_TEXT)


class TurnOut(BaseModel):
    """One turn's outcome (see :class:`csagent.api.TurnResult`)."""

    status: Literal["answered", "refused", "handoff", "needs_confirmation"]
    answer: str
    citations: list[dict[str, Any]]
    trace_id: str
    thread_id: str
    interrupt: dict[str, Any] | None
    verification: dict[str, Any]
    fail_reason: str | None
    node_latency_ms: dict[str, float]
    llm: dict[str, Any]
    answered_by: Literal["agent", "human"]
    recovered: dict[str, Any] | None


class HistoryItem(BaseModel):
    """One customer-visible event of a thread."""

    seq: int
    type: Literal["message", "reply"]
    text: str
    created_at: float
    status: str | None = None
    answered_by: str | None = None
    citations: list[dict[str, Any]] = []
    trace_id: str | None = None


class HistoryOut(BaseModel):
    """A thread's history and what it waits for."""

    thread_id: str
    events: list[HistoryItem]
    pending: dict[str, Any] | None


class HandoffOut(BaseModel):
    """One entry of the desk's queue."""

    id: int
    thread_id: str
    user_id: str
    status: Literal["open", "claimed", "resolved"]
    agent_id: str | None
    question: str
    reason: str | None
    created_at: float
    updated_at: float
    payload: dict[str, Any]
    history: list[HistoryItem] = []


class ErrorBody(BaseModel):
    """An error: a stable code and a readable message."""

    code: str
    message: str


class ErrorOut(BaseModel):
    """The body of every 4xx."""

    error: ErrorBody


class ApiError(Exception):
    """An HTTP error with a stable code."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


ERRORS: dict[int | str, dict[str, Any]] = {
    s: {"model": ErrorOut} for s in (400, 401, 403, 404, 409, 413, 422)}
WORKER_LOST = ApiError(503, "worker_lost", "处理该请求的进程意外退出，请重新发送")
INTERNAL_ERROR = ApiError(500, "internal_error", "内部错误，请稍后重试")  # a bug or a broken store; logged in full


def _usage_error(exc: UsageError) -> ApiError:
    """Map the API's errors to HTTP statuses."""
    table: list[tuple[type[UsageError], int, str]] = [
        (UnknownThreadError, 404, "unknown_thread"), (ForeignThreadError, 403, "foreign_thread"),
        (NothingPendingError, 409, "nothing_pending"), (HandoffPendingError, 409, "handoff_pending"),
        (NotHandedOffError, 409, "not_handed_off"), (ThreadBusyError, 409, "thread_busy"),
        (MessageTooLongError, 422, "message_too_long")]
    for kind, status, code in table:
        if isinstance(exc, kind):
            return ApiError(status, code, str(exc))
    return ApiError(422, "bad_input", str(exc))


# --- request size limit -------------------------------------------------------------------------
class BodyLimit:
    """ASGI middleware: refuse bodies over ``limit`` bytes with 413 (declared or streamed)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, counting its body bytes."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await _too_large(send, self.limit)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _BodyTooLarge
            return message

        try:
            await self.app(scope, limited, send)
        except _BodyTooLarge:
            await _too_large(send, self.limit)


class _BodyTooLarge(Exception):
    pass


async def _too_large(send: Send, limit: int) -> None:
    body = json.dumps({"error": {"code": "body_too_large",
                                 "message": f"request body over {limit} bytes"}}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


# --- helpers ------------------------------------------------------------------------------------
def _history_item(event: dict[str, Any]) -> HistoryItem | None:
    payload = event.get("payload") or {}
    if event.get("kind") == "customer":
        return HistoryItem(seq=event["seq"], type="message", text=str(payload.get("text", "")),
                           created_at=event["created_at"])
    if event.get("kind") == "turn":
        result = payload.get("result") or {}
        return HistoryItem(seq=event["seq"], type="reply", text=str(result.get("answer", "")),
                           created_at=event["created_at"], status=result.get("status"),
                           answered_by=result.get("answered_by") or "agent",
                           citations=list(result.get("citations") or []),
                           trace_id=result.get("trace_id"))
    return None


def _items(events: list[dict[str, Any]]) -> list[HistoryItem]:
    return [item for item in map(_history_item, events) if item is not None]


def _progress(event: dict[str, Any]) -> dict[str, Any]:
    node = str(event.get("node", ""))
    return {"node": node, "label": NODE_LABELS.get(node, "正在处理")}


def _sse(event: str, data: dict[str, Any], event_id: str | None = None) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(data, ensure_ascii=False), event=event, id=event_id)


def _wants_stream(accept: str | None) -> bool:
    return "text/event-stream" in (accept or "")


# --- the app ------------------------------------------------------------------------------------
def create_app(
    agent_factory: Callable[[], CSAgent],
    authenticator: Authenticator,
    config: ServiceConfig | None = None,
    run_factory: Callable[[], CSAgent] | None = None,
) -> FastAPI:
    """Build the service.

    Args:
        agent_factory: Builds the HTTP process's :class:`CSAgent` at start-up (closed at
            shutdown); it serves reads (history, the desk's queue, pending actions).
        authenticator: Maps bearer tokens to identities.
        config: Limits and timings.
        run_factory: Builds each turn process's agent (default ``agent_factory``); with
            ``run_processes > 0`` it must pickle (a module-level function or a partial of one).

    """
    cfg = config or ServiceConfig()
    state: dict[str, Any] = {}
    turns: set[asyncio.Task[None]] = set()  # turns whose client may have left: keep them alive

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        state["io"] = ThreadPoolExecutor(max_workers=cfg.io_threads, thread_name_prefix="csagent-io")
        pool = None
        if cfg.run_processes > 0:
            pool = TurnPool(run_factory or agent_factory, cfg.run_processes, cfg.run_threads,
                            cfg.run_nice)
            try:
                state["agent"], _ = await asyncio.gather(
                    loop.run_in_executor(state["io"], agent_factory), pool.start())
            except BaseException:
                await pool.close()  # no turn process outlives a failed start-up
                raise
            state["pool"] = pool
        else:  # turns share this process's GIL: a short switch interval keeps the loop going
            sys.setswitchinterval(cfg.switch_interval_s)
            state["executor"] = ThreadPoolExecutor(max_workers=cfg.run_threads,
                                                   thread_name_prefix="csagent-run")
            state["agent"] = await loop.run_in_executor(state["executor"], agent_factory)
        # The loaded index and models are millions of long-lived objects: keep them out of the
        # cyclic GC's full collections, which would otherwise stall every request for ~0.1-0.5 s.
        gc.collect()
        gc.freeze()
        logger.info("csagent service ready (backend %s, turn processes %s)",
                    state["agent"].backend.kind, pool.pids if pool else "none")
        try:
            yield
        finally:
            if pool is not None:
                await pool.close()
            else:
                state["executor"].shutdown(wait=True)
            if turns:
                await asyncio.wait(list(turns), timeout=5)
            state["io"].shutdown(wait=True)
            state["agent"].close()

    app = FastAPI(title="csagent", version="1", lifespan=lifespan,
                  description="Customer-service agent: customer turns (JSON or SSE), thread "
                              "history, and the human agents' desk.")
    app.add_middleware(BodyLimit, limit=cfg.max_body_bytes)
    bearer = HTTPBearer(auto_error=False)

    def agent() -> CSAgent:
        return state["agent"]

    async def call(op: Op, kwargs: dict[str, Any],
                   sink: Callable[[dict[str, Any]], None] | None = None) -> TurnResult:
        """Run ``CSAgent.<op>`` in a turn process (or a run thread); ``sink`` runs on the loop."""
        if "pool" in state:
            result: TurnResult = await state["pool"].run(op, kwargs, sink)
            return result
        loop = asyncio.get_running_loop()
        relay = None if sink is None else (lambda e: loop.call_soon_threadsafe(sink, e))
        method = getattr(agent(), op)
        return await loop.run_in_executor(state["executor"],
                                          lambda: method(**kwargs, on_event=relay))

    async def in_io(fn: Callable[[], Any]) -> Any:
        """Run a short store read/write off the event loop (never queued behind turns)."""
        return await asyncio.get_running_loop().run_in_executor(state["io"], fn)

    def identity(creds: HTTPAuthorizationCredentials | None) -> Identity:
        who = authenticator.authenticate(creds.credentials) if creds is not None else None
        if who is None:
            raise ApiError(401, "unauthenticated", "a valid bearer token is required")
        return who

    def customer(creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Identity:
        who = identity(creds)
        if who.role != "customer":
            raise ApiError(403, "forbidden", "this endpoint is for customers")
        return who

    def desk_agent(creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Identity:
        who = identity(creds)
        if who.role != "agent":
            raise ApiError(403, "forbidden", "this endpoint is for human agents")
        return who

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse({"error": {"code": exc.code, "message": exc.message}},
                            status_code=exc.status, headers=headers)

    @app.exception_handler(WorkerLostError)
    async def _lost(request: Request, exc: WorkerLostError) -> JSONResponse:
        return await _api_error(request, WORKER_LOST)

    @app.exception_handler(UsageError)
    async def _usage(request: Request, exc: UsageError) -> JSONResponse:
        return await _api_error(request, _usage_error(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        message = f"{where}: {first.get('msg', 'invalid input')}" if where else "invalid input"
        return JSONResponse({"error": {"code": "bad_input", "message": message}},
                            status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"error": {"code": "http_error", "message": str(exc.detail)}},
                            status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        # (Starlette re-raises it after this response, so the server logs the traceback)
        logger.error("%s %s failed: %s", request.method, request.url.path, type(exc).__name__)
        return await _api_error(request, INTERNAL_ERROR)

    async def check_thread(who: Identity, thread_id: str, *, must_exist: bool) -> None:
        """Refuse early (before any stream starts) an unknown or foreign thread.

        Runs off the event loop; the run re-checks under the thread's lock.
        """
        # known owners are remembered in memory (no thread hop on the hot path); a new thread
        # needs only the store's row (the run re-checks, legacy threads included)
        owner = agent().store.cached_owner(thread_id)
        if owner is None:
            owner = await in_io(lambda: agent().owner_of(thread_id) if must_exist
                                else agent().store.owner(thread_id))
        if owner is None and must_exist:
            raise ApiError(404, "unknown_thread", f"thread {thread_id!r} does not exist")
        if owner is not None and owner != who.subject:
            raise ApiError(403, "foreign_thread", f"thread {thread_id!r} belongs to another user")

    async def turn(op: Op, kwargs: dict[str, Any], accept: str | None) -> Any:
        """Run a turn; answer with JSON, or with an SSE stream of its progress and result."""
        if not _wants_stream(accept):
            return (await call(op, kwargs)).to_json()
        queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()

        async def work() -> None:
            try:
                result = await call(op, kwargs,
                                    lambda event: queue.put_nowait(("progress", _progress(event))))
                queue.put_nowait(("result", result.to_json()))
            except Exception as exc:  # noqa: BLE001 - reported as an event (a bug logged in full)
                if isinstance(exc, (UsageError, WorkerLostError)):
                    err = WORKER_LOST if isinstance(exc, WorkerLostError) else _usage_error(exc)
                else:
                    logger.exception("turn failed outside the graph")
                    err = INTERNAL_ERROR
                queue.put_nowait(("error", {"status": err.status, "code": err.code,
                                            "message": err.message}))

        running: list[asyncio.Task[None]] = []

        def start() -> None:
            if not running:  # the turn runs even if the client leaves (its result is stored)
                task = asyncio.get_running_loop().create_task(work())
                running.append(task)
                turns.add(task)
                task.add_done_callback(turns.discard)

        async def events() -> AsyncIterator[ServerSentEvent]:
            try:
                yield _sse("accepted", {"at": time.time()})  # sent before the turn starts
                start()
                while True:
                    kind, data = await queue.get()
                    yield _sse(kind, data)
                    if kind in ("result", "error"):
                        break
                await running[0]
            finally:
                start()

        return EventSourceResponse(events(), ping=cfg.ping_s)

    # --- customer endpoints ---------------------------------------------------------------------
    thread_path = PathParam(pattern=THREAD_ID_PATTERN, description="the conversation id")
    sse_doc: dict[int | str, dict[str, Any]] = {
        200: {"model": TurnOut, "content": {"text/event-stream": {
            "schema": {"type": "string", "description": "accepted, progress…, result|error"}}}},
        **ERRORS, 503: {"model": ErrorOut}}

    @app.post("/v1/threads/{thread_id}/messages", response_model=TurnOut, responses=sse_doc,
              summary="Send a customer message (JSON, or SSE with Accept: text/event-stream)")
    async def post_message(body: MessageIn, thread_id: str = thread_path,
                           accept: str | None = Header(default=None),
                           who: Identity = Depends(customer)) -> Any:
        await check_thread(who, thread_id, must_exist=False)
        if _wants_stream(accept):  # "accepted" comes before the run: the thread exists by then
            await in_io(lambda: agent().open_thread(body.message, user_id=who.subject,
                                                    thread_id=thread_id))
        return await turn("ask", {"message": body.message, "user_id": who.subject,
                                  "thread_id": thread_id}, accept)

    @app.post("/v1/threads/{thread_id}/confirm", response_model=TurnOut, responses=sse_doc,
              summary="Confirm or decline the pending action")
    async def post_confirm(body: ConfirmIn, thread_id: str = thread_path,
                           accept: str | None = Header(default=None),
                           who: Identity = Depends(customer)) -> Any:
        await check_thread(who, thread_id, must_exist=True)
        value = "确认" if body.decision == "confirm" else "取消"
        return await turn("resume", {"value": value, "user_id": who.subject,
                                     "thread_id": thread_id}, accept)

    @app.get("/v1/threads/{thread_id}/history", response_model=HistoryOut, responses=ERRORS,
             summary="The thread's messages and replies, and what it waits for")
    async def get_history(thread_id: str = thread_path,
                          after: int = Query(default=0, ge=0, le=2**62),
                          who: Identity = Depends(customer)) -> HistoryOut:
        await check_thread(who, thread_id, must_exist=True)

        def read() -> HistoryOut:
            events = agent().history(user_id=who.subject, thread_id=thread_id, after=after)
            pending = agent().pending(user_id=who.subject, thread_id=thread_id)
            if pending is not None and pending.get("type") == "confirm":
                pending = {"type": "confirm", "prompt": pending.get("prompt"),
                           "action": pending.get("action")}
            elif pending is not None:
                pending = {"type": str(pending.get("type"))}
            return HistoryOut(thread_id=thread_id, events=_items(events), pending=pending)

        return await in_io(read)

    @app.get("/v1/threads/{thread_id}/events", responses={
        200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}}, **ERRORS},
        summary="Live stream of the thread's new messages and replies (SSE)")
    async def get_events(request: Request, thread_id: str = thread_path,
                         after: int = Query(default=0, ge=0, le=2**62),
                         last_event_id: str | None = Header(default=None),
                         who: Identity = Depends(customer)) -> Response:
        await check_thread(who, thread_id, must_exist=True)
        start = int(last_event_id) if last_event_id and last_event_id.isdigit() else after

        async def events() -> AsyncIterator[ServerSentEvent]:
            seen, deadline = start, time.monotonic() + cfg.events_max_s
            yield _sse("ready", {"thread_id": thread_id, "after": seen})
            while time.monotonic() < deadline and not await request.is_disconnected():
                new = await in_io(lambda: agent().store.events(thread_id, after=seen))
                for event in new:
                    seen = event["seq"]
                    item = _history_item(event)
                    if item is not None:
                        yield _sse(item.type, item.model_dump(), event_id=str(seen))
                await asyncio.sleep(cfg.events_poll_s)

        return EventSourceResponse(events(), ping=cfg.ping_s)

    # --- the desk -------------------------------------------------------------------------------
    @app.get("/desk", response_class=HTMLResponse, include_in_schema=False)
    async def desk_page() -> HTMLResponse:
        return HTMLResponse(DESK_HTML.read_text(encoding="utf-8"))

    def handoff_out(item: dict[str, Any], with_history: bool = False) -> HandoffOut:
        history = _items(agent().store.events(item["thread_id"])) if with_history else []
        return HandoffOut(**item, history=history)

    async def load(handoff_id: int) -> dict[str, Any]:
        item = await in_io(lambda: agent().store.handoff(handoff_id))
        if item is None:
            raise ApiError(404, "unknown_handoff", f"handoff {handoff_id} does not exist")
        return item

    handoff_path = PathParam(ge=1, le=2**62)

    @app.get("/v1/desk/me", responses=ERRORS, summary="The signed-in agent")
    async def desk_me(who: Identity = Depends(desk_agent)) -> dict[str, str]:
        return {"subject": who.subject, "name": who.name, "role": who.role}

    @app.get("/v1/desk/handoffs", response_model=list[HandoffOut], responses=ERRORS,
             summary="The handoff queue (open and claimed by default)")
    async def list_handoffs(status: Literal["active", "open", "claimed", "resolved"] = "active",
                            who: Identity = Depends(desk_agent)) -> list[HandoffOut]:
        statuses = ("open", "claimed") if status == "active" else (status,)
        items = await in_io(lambda: agent().store.handoffs(statuses))
        return [handoff_out(item) for item in items]

    @app.get("/v1/desk/handoffs/{handoff_id}", response_model=HandoffOut, responses=ERRORS,
             summary="One handoff with the thread's conversation")
    async def get_handoff(handoff_id: int = handoff_path,
                          who: Identity = Depends(desk_agent)) -> HandoffOut:
        item = await load(handoff_id)
        return await in_io(lambda: handoff_out(item, with_history=True))

    @app.post("/v1/desk/handoffs/{handoff_id}/claim", response_model=HandoffOut,
              responses=ERRORS, summary="Claim a handoff")
    async def claim(handoff_id: int = handoff_path,
                    who: Identity = Depends(desk_agent)) -> HandoffOut:
        await load(handoff_id)
        if not await in_io(lambda: agent().store.claim_handoff(handoff_id, who.subject)):
            raise ApiError(409, "not_claimable", "already claimed by another agent or resolved")
        return handoff_out(await load(handoff_id))

    @app.post("/v1/desk/handoffs/{handoff_id}/reply", response_model=TurnOut,
              responses={**ERRORS, 503: {"model": ErrorOut}},
              summary="Reply to the customer (answered_by=human)")
    async def reply(body: ReplyIn, handoff_id: int = handoff_path,
                    who: Identity = Depends(desk_agent)) -> Any:
        item = await load(handoff_id)
        if item["status"] != "claimed" or item["agent_id"] != who.subject:
            raise ApiError(409, "not_claimed", "claim the handoff before replying")
        result = await call("reply_as_agent", {"text": body.text, "agent_id": who.subject,
                                               "thread_id": item["thread_id"]})
        return result.to_json()

    @app.post("/v1/desk/handoffs/{handoff_id}/resolve", response_model=HandoffOut,
              responses=ERRORS, summary="Mark a claimed handoff resolved")
    async def resolve(handoff_id: int = handoff_path,
                      who: Identity = Depends(desk_agent)) -> HandoffOut:
        await load(handoff_id)
        if not await in_io(lambda: agent().store.resolve_handoff(handoff_id, who.subject)):
            raise ApiError(409, "not_claimed", "only the agent who claimed it can resolve it")
        return handoff_out(await load(handoff_id))

    @app.get("/v1/desk/traces/{trace_id}", responses=ERRORS, summary="A turn's local trace")
    async def trace(trace_id: str = PathParam(pattern=r"^[0-9a-f]{8,64}$"),
                    who: Identity = Depends(desk_agent)) -> Any:
        path = agent().settings.traces_dir / f"{trace_id}.jsonl"
        if not path.is_file():
            raise ApiError(404, "unknown_trace", "no local trace with this id on this worker")
        lines = path.read_text(encoding="utf-8").splitlines()
        return json.loads(lines[-1]) if lines else {}

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "backend": agent().backend.kind}

    _ = (post_message, post_confirm, get_history, get_events, desk_page, desk_me, list_handoffs,
         get_handoff, claim, reply, resolve, trace, healthz)
    return app

