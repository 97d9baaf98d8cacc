"""The service's turn processes (csagent.service.pool.TurnPool): real spawned processes and pipes.

The agent handed to the pool is a small stand-in built by a picklable factory (the same seam the
service uses for CSAgent): it keeps each thread's in-flight and finished turns as files, so a
child killed with SIGKILL mid-call leaves what a killed CSAgent leaves (a started run, or
nothing), and ``finish_interrupted`` completes it the way CSAgent does from its checkpoint.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from csagent.api import ForeignThreadError, TurnResult
from csagent.service.pool import TurnPool, WorkerLostError


class FileAgent:
    """A stand-in agent: ``<root>/<thread>.inflight`` while a turn runs, ``.done`` after."""

    def __init__(self, root: str, fail: bool = False) -> None:
        if fail:
            raise RuntimeError("index missing")
        self.root = Path(root)

    def ask(self, message: str, *, user_id: str, thread_id: str, on_event: Any = None) -> TurnResult:
        if message == "foreign":
            raise ForeignThreadError(f"thread {thread_id!r} belongs to another user")
        if message == "bug":
            raise KeyError("broken")
        on_event({"node": "start_turn"})
        if message.startswith("sleep:"):
            time.sleep(float(message[6:]))
        if message == "die-early":  # killed before anything of the turn was recorded
            os.kill(os.getpid(), signal.SIGKILL)
        (self.root / f"{thread_id}.inflight").write_text(message, encoding="utf-8")
        on_event({"node": "retrieve_hybrid"})
        if message == "die":  # killed mid-run: the run is recorded as started
            os.kill(os.getpid(), signal.SIGKILL)
        return self._finish(thread_id)

    def finish_interrupted(self, *, thread_id: str, since: float,
                           on_event: Any = None) -> TurnResult | None:
        if not (self.root / f"{thread_id}.inflight").exists():
            return None
        once = self.root / f"{thread_id}.die-while-finishing"
        if once.exists():  # the recovering process dies too (once)
            once.unlink()
            os.kill(os.getpid(), signal.SIGKILL)
        on_event({"node": "generate_answer"})
        return self._finish(thread_id)

    def _finish(self, thread_id: str) -> TurnResult:
        inflight = self.root / f"{thread_id}.inflight"
        message = inflight.read_text(encoding="utf-8")
        inflight.unlink()
        with (self.root / f"{thread_id}.done").open("a", encoding="utf-8") as out:
            out.write(json.dumps({"pid": os.getpid(), "message": message}) + "\n")
        return TurnResult(status="answered", answer=f"re: {message}", thread_id=thread_id,
                          trace_id=str(os.getpid()))

    def close(self) -> None:
        """Nothing to release."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat")
    return not (state.exists() and state.read_text().split()[2] == "Z")


async def _started(root: Path, processes: int = 2, threads: int = 2) -> TurnPool:
    pool = TurnPool(functools.partial(FileAgent, str(root)), processes, threads)
    await pool.start()
    return pool


def _ask(pool: TurnPool, message: str, thread: str, events: list[Any] | None = None) -> Any:
    sink = None if events is None else events.append
    return pool.run("ask", {"message": message, "user_id": "u1", "thread_id": thread}, sink)


def test_turns_run_in_child_processes_and_stream_progress_on_the_loop(tmp_path: Path):
    async def scenario() -> None:
        pool = await _started(tmp_path)
        try:
            assert len(pool.pids) == 2 and os.getpid() not in pool.pids
            loop_thread = threading.get_ident()
            events: list[Any] = []
            seen_on: list[int] = []
            result = await pool.run("ask", {"message": "hi", "user_id": "u1", "thread_id": "t1"},
                                    lambda e: (events.append(e), seen_on.append(threading.get_ident())))
            assert result.answer == "re: hi" and int(result.trace_id) in pool.pids
            assert events == [{"node": "start_turn"}, {"node": "retrieve_hybrid"}]
            assert set(seen_on) == {loop_thread}
        finally:
            pids = pool.pids
            await pool.close()
        assert not any(_alive(pid) for pid in pids)

    asyncio.run(scenario())


def test_calls_run_side_by_side_across_processes_and_threads(tmp_path: Path):
    async def scenario() -> None:
        pool = await _started(tmp_path, processes=2, threads=2)
        try:
            started = time.perf_counter()
            results = await asyncio.gather(*(_ask(pool, "sleep:0.6", f"p{i}") for i in range(4)))
            elapsed = time.perf_counter() - started
        finally:
            await pool.close()
        assert [r.answer for r in results] == ["re: sleep:0.6"] * 4
        assert len({r.trace_id for r in results}) == 2  # spread over both processes
        assert elapsed < 4 * 0.6  # not one after another

    asyncio.run(scenario())


def test_errors_cross_the_process_boundary_with_their_type(tmp_path: Path):
    async def scenario() -> None:
        pool = await _started(tmp_path, processes=1)
        try:
            with pytest.raises(ForeignThreadError, match="belongs to another user"):
                await _ask(pool, "foreign", "t2")
            with pytest.raises(RuntimeError, match="KeyError"):
                await _ask(pool, "bug", "t2")
            assert (await _ask(pool, "after", "t2")).answer == "re: after"  # still serving
        finally:
            await pool.close()

    asyncio.run(scenario())


def test_a_child_killed_mid_call_is_replaced_and_the_call_finished_by_another(tmp_path: Path):
    async def scenario() -> None:
        pool = await _started(tmp_path)
        before = set(pool.pids)
        try:
            events: list[Any] = []
            result = await _ask(pool, "die", "t3", events)
            assert result.answer == "re: die"
            assert [e["node"] for e in events] == ["start_turn", "retrieve_hybrid",
                                                   "generate_answer"]
            assert len(pool.pids) == 2 and pool.pids != sorted(before)  # one replaced
            assert (await _ask(pool, "next", "t3")).answer == "re: next"
        finally:
            await pool.close()
        done = [json.loads(line)["message"]
                for line in (tmp_path / "t3.done").read_text().splitlines()]
        assert done == ["die", "next"]  # finished once, nothing lost or doubled

    asyncio.run(scenario())


def test_a_recovery_whose_process_dies_too_is_tried_again(tmp_path: Path):
    async def scenario() -> None:
        pool = await _started(tmp_path)
        (tmp_path / "t6.die-while-finishing").touch()
        try:
            result = await _ask(pool, "die", "t6")
            assert result.answer == "re: die" and len(pool.pids) == 2
        finally:
            await pool.close()
        assert (tmp_path / "t6.done").read_text().count("\n") == 1

    asyncio.run(scenario())


def test_a_call_lost_before_it_was_recorded_fails_clearly_and_the_pool_recovers(tmp_path: Path):
    async def scenario() -> None:
        pool = await _started(tmp_path, processes=1)
        try:
            with pytest.raises(WorkerLostError, match="send it again"):
                await _ask(pool, "die-early", "t4")
            assert len(pool.pids) == 1
            assert (await _ask(pool, "again", "t4")).answer == "re: again"
        finally:
            await pool.close()
        assert not (tmp_path / "t4.inflight").exists()

    asyncio.run(scenario())


def test_a_child_that_cannot_start_fails_start_up_with_its_reason(tmp_path: Path):
    async def scenario() -> None:
        pool = TurnPool(functools.partial(FileAgent, str(tmp_path), fail=True), 1, 1)
        with pytest.raises(RuntimeError, match="index missing"):
            await pool.start()
        assert pool.pids == []

    asyncio.run(scenario())


def test_close_lets_running_calls_finish(tmp_path: Path):
    async def scenario() -> None:
        pool = await _started(tmp_path, processes=1)
        call = asyncio.ensure_future(_ask(pool, "sleep:0.5", "t5"))
        await asyncio.sleep(0.2)
        await pool.close()
        assert (await call).answer == "re: sleep:0.5"
        with pytest.raises(WorkerLostError):
            await _ask(pool, "late", "t5")

    asyncio.run(scenario())


def test_a_pool_needs_a_process_and_a_thread(tmp_path: Path):
    with pytest.raises(ValueError):
        TurnPool(functools.partial(FileAgent, str(tmp_path)), 0, 1)
