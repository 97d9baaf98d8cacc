"""Turn processes: graph turns run outside the HTTP worker's process, its event loop stays free.

A turn is CPU-bound Python (tokenising, scoring, verifying: 50–100 ms of CPU offline). Run in
threads of the process that serves HTTP, it holds the GIL, and the event loop, which gives the
GIL up at every socket call, waits for it again each time behind the running turns (the convoy
effect): the first SSE event of a new request waited tens of milliseconds at p95 under load.
:class:`TurnPool` runs turns in a few child processes instead (each with its own
:class:`~csagent.api.CSAgent`, a few run threads and a lower CPU priority); they share the
conversations with the HTTP process through the backend (SQLite files or Postgres), which already
serves several processes (per-thread locks, journal, history).

Protocol, one duplex pipe per child: the parent sends ``("run", job, op, kwargs)`` or
``("stop",)``; the child answers ``("ready", pid)`` (or ``("failed", why)``) once, then per job
any number of ``("progress", job, event)`` and one ``("result", job, result_json)`` or
``("error", job, exception)``. The parent reads the pipes on its event loop (``add_reader``):
progress arrives as it happens, and no thread of the parent waits on a turn.

A child that dies (killed, out of memory, a crash in native code) is replaced. A call it was
running is not lost: another child finishes it (:meth:`~csagent.api.CSAgent.finish_interrupted`:
the run is completed from its checkpoint, or its recorded result is returned); only a call that
died before anything of it was recorded fails, with :class:`WorkerLostError`, and can be sent
again. The thread locks of a dead child are released by the kernel (file locks) or by Postgres
(its connections close).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Literal

from csagent.api import CSAgent, TurnResult
from csagent.errors import UsageError

logger = logging.getLogger(__name__)

Op = Literal["ask", "resume", "reply_as_agent", "finish_interrupted"]
Sink = Callable[[dict[str, Any]], None]
START_TIMEOUT_S = 300.0  # a child loads the index and models before it is ready
STOP_TIMEOUT_S = 20.0
RECOVERY_ATTEMPTS = 3  # a recovery whose own process dies is tried again, this many times


class WorkerLostError(Exception):
    """The process running a call died before anything of the call was recorded."""


@dataclass
class _Job:
    id: int
    op: Op
    kwargs: dict[str, Any]
    sink: Sink | None
    future: asyncio.Future[TurnResult | None]
    sent_at: float = field(default_factory=time.time)


@dataclass
class _Child:
    process: Any  # multiprocessing.context.SpawnProcess
    conn: Connection
    ready: asyncio.Future[int]
    jobs: dict[int, _Job] = field(default_factory=dict)
    alive: bool = True


# --- the child process ---------------------------------------------------------------------
def _child_main(conn: Connection, factory: Callable[[], CSAgent], threads: int,
                niceness: int) -> None:
    """Serve jobs from the parent until it says stop or goes away."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: parent decides
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if niceness:
        os.nice(niceness)  # the HTTP process (the first SSE event) goes first on a busy CPU
    try:
        agent = factory()
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails start-up
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    gc.collect()
    gc.freeze()  # the loaded index: keep it out of the cyclic GC's full collections
    lock = threading.Lock()

    def send(message: tuple[Any, ...]) -> None:
        with lock:
            conn.send(message)

    send(("ready", os.getpid()))
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="csagent-run") as runs:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):  # the parent is gone: finish what runs, then exit
                break
            if message[0] != "run":
                break
            runs.submit(_run_job, agent, send, *message[1:])
    agent.close()


def _run_job(agent: CSAgent, send: Callable[[tuple[Any, ...]], None], job_id: int, op: Op,
             kwargs: dict[str, Any]) -> None:
    """Run one call of the agent and send its progress and outcome to the parent."""
    def progress(event: dict[str, Any]) -> None:
        send(("progress", job_id, event))

    try:
        result = getattr(agent, op)(**kwargs, on_event=progress)
        send(("result", job_id, None if result is None else result.to_json()))
    except UsageError as exc:  # the caller's mistake: mapped to a 4xx by the service
        _send_error(send, job_id, exc)
    except Exception as exc:  # noqa: BLE001 - logged here in full, a 500 for the caller
        logger.exception("%s failed in the turn process", op)
        _send_error(send, job_id, RuntimeError(f"{type(exc).__name__}: {exc}"))


def _send_error(send: Callable[[tuple[Any, ...]], None], job_id: int, exc: Exception) -> None:
    try:
        send(("error", job_id, exc))
    except Exception:  # noqa: BLE001 - an exception that does not pickle: send its text
        send(("error", job_id, RuntimeError(f"{type(exc).__name__}: {exc}")))


# --- the parent ----------------------------------------------------------------------------
class TurnPool:
    """A fixed number of turn processes, each running a few calls at a time.

    Args:
        factory: Builds a child's :class:`CSAgent`; must pickle (a module-level function or a
            ``functools.partial`` of one): children are started with ``spawn``.
        processes: Child processes (replaced when one dies).
        threads: Calls in flight per child (calls that wait on an LLM endpoint overlap).
        niceness: Added to each child's nice value (0: same priority as the HTTP process).

    """

    def __init__(self, factory: Callable[[], CSAgent], processes: int, threads: int,
                 niceness: int = 0) -> None:
        if processes < 1 or threads < 1:
            raise ValueError("a turn pool needs at least one process and one thread")
        self.factory, self.processes, self.threads, self.niceness = (
            factory, processes, threads, niceness)
        self._children: list[_Child] = []
        self._ids = itertools.count(1)
        self._closing = False
        self._changed: asyncio.Event | None = None  # set when a child becomes ready or dies
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def pids(self) -> list[int]:
        """Return the process ids of the live children."""
        return [c.process.pid for c in self._children if c.alive]

    async def start(self) -> None:
        """Start the children and wait until every one has loaded its agent."""
        self._loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        children = [self._spawn() for _ in range(self.processes)]
        try:
            await asyncio.wait_for(asyncio.gather(*(c.ready for c in children)),
                                   START_TIMEOUT_S)
        except BaseException:
            await self.close()
            raise
        logger.info("turn pool ready: %d processes × %d threads (pids %s)", self.processes,
                    self.threads, self.pids)

    async def run(self, op: Op, kwargs: dict[str, Any], sink: Sink | None = None) -> Any:
        """Run ``CSAgent.<op>(**kwargs)`` in a child; ``sink`` gets its progress on the loop.

        Raises:
            UsageError: What the agent raised (its subclasses, as they are).
            WorkerLostError: The child died and nothing of the call was recorded.
            RuntimeError: Anything else went wrong in the child (logged there).

        """
        assert self._loop is not None, "start() the pool first"
        job = _Job(next(self._ids), op, kwargs, sink, self._loop.create_future())
        child = await self._pick()
        child.jobs[job.id] = job
        try:
            child.conn.send(("run", job.id, op, kwargs))
        except OSError:  # died just now: its reader will see EOF and recover the job
            logger.warning("turn process %s gone while sending a job", child.process.pid)
        return await job.future

    async def close(self) -> None:
        """Stop the children (running calls finish first; stragglers are killed)."""
        self._closing = True
        children = list(self._children)
        for child in children:
            with contextlib.suppress(OSError):
                child.conn.send(("stop",))
        loop = asyncio.get_running_loop()
        for child in children:
            await loop.run_in_executor(None, child.process.join, STOP_TIMEOUT_S)
            if child.process.is_alive():
                logger.warning("turn process %s did not stop: killed", child.process.pid)
                child.process.kill()
                await loop.run_in_executor(None, child.process.join, 5)
            self._forget(child)

    # internals ----------------------------------------------------------------------------
    def _spawn(self) -> _Child:
        assert self._loop is not None
        ctx = multiprocessing.get_context("spawn")
        mine, theirs = ctx.Pipe(duplex=True)
        process = ctx.Process(target=_child_main, name="csagent-turns",
                              args=(theirs, self.factory, self.threads, self.niceness))
        process.start()
        theirs.close()
        child = _Child(process, mine, self._loop.create_future())
        self._children.append(child)
        self._loop.add_reader(mine.fileno(), self._on_readable, child)
        return child

    async def _pick(self) -> _Child:
        """Return the ready child with the fewest calls in flight (wait for one if none)."""
        assert self._changed is not None
        while True:
            alive = [c for c in self._children if c.alive]
            ready = [c for c in alive if c.ready.done() and c.ready.exception() is None]
            if ready:
                return min(ready, key=lambda c: len(c.jobs))
            if self._closing or not alive:
                raise WorkerLostError("no turn process is running")
            self._changed.clear()
            await self._changed.wait()

    def _on_readable(self, child: _Child) -> None:
        try:
            while child.alive and child.conn.poll():
                self._dispatch(child, child.conn.recv())
        except (EOFError, OSError):
            self._lost(child)

    def _dispatch(self, child: _Child, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "ready":
            child.ready.set_result(int(message[1]))
            self._notify()
            return
        if kind == "failed":
            child.ready.set_exception(RuntimeError(f"turn process failed to start: {message[1]}"))
            return
        job = child.jobs.get(message[1]) if kind == "progress" else child.jobs.pop(message[1], None)
        if job is None or job.future.done():
            return
        if kind == "progress":
            if job.sink is not None:
                job.sink(message[2])
        elif kind == "result":
            job.future.set_result(None if message[2] is None
                                  else TurnResult.from_json(message[2]))
        else:
            job.future.set_exception(message[2])

    def _forget(self, child: _Child) -> None:
        if child.alive:
            child.alive = False
            assert self._loop is not None
            with contextlib.suppress(Exception):
                self._loop.remove_reader(child.conn.fileno())
            child.conn.close()
        self._notify()

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()

    def _lost(self, child: _Child) -> None:
        """Replace a dead child and finish (or fail) the calls it was running."""
        self._forget(child)
        child.process.join(timeout=1)
        if child in self._children:
            self._children.remove(child)
        if not child.ready.done():
            child.ready.set_exception(RuntimeError(
                f"turn process exited during start-up (exit code {child.process.exitcode})"))
        if child.ready.exception() is not None:  # never started: not replaced (same fate)
            logger.error("turn process %s could not start: %s", child.process.pid,
                         child.ready.exception())
            self._notify()
            return
        if self._closing and not child.jobs:
            return
        logger.error("turn process %s died (exit code %s) with %d calls in flight",
                     child.process.pid, child.process.exitcode, len(child.jobs))
        if not self._closing:
            self._spawn()
        jobs, child.jobs = list(child.jobs.values()), {}
        for job in jobs:
            task = asyncio.ensure_future(self._recover(job))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _recover(self, job: _Job) -> None:
        """Ask another child for the outcome of a call whose child died."""
        thread_id = job.kwargs.get("thread_id")
        if job.op == "finish_interrupted" or not thread_id:  # its caller (below) tries again
            job.future.set_exception(WorkerLostError("the turn process died"))
            return
        result = None
        for _ in range(RECOVERY_ATTEMPTS):  # finishing is idempotent: safe to repeat
            try:
                result = await self.run("finish_interrupted",
                                        {"thread_id": thread_id, "since": job.sent_at}, job.sink)
                break
            except WorkerLostError:
                if self._closing:
                    break
            except Exception as exc:  # noqa: BLE001 - the caller gets a lost-worker error
                logger.error("could not recover a call on thread %s: %s", thread_id, exc)
                break
        if job.future.done():
            return
        if result is None:
            job.future.set_exception(WorkerLostError(
                "the process running this request stopped before it was recorded; send it again"))
        else:
            logger.warning("thread %s: a call lost with its process was finished by another",
                           thread_id)
            job.future.set_result(result)
