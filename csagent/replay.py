r"""Batch replay of conversation logs against the agent (``csagent replay``).

Input (JSONL, one conversation per line)::

    {"conversation_id": "c1", "user_id": "u1001",
     "turns": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}]}

The agent answers every user turn in order, in one thread per conversation; each logged
assistant turn that follows a user turn is kept beside the agent's answer as the human
baseline. When the agent asked for a confirmation and the next logged user message is a plain
yes/no (「确认」「是的」「不用了」…), that message resumes the confirmation; anything else is asked
as a new message (which drops the pending action).

Output (JSONL, one line per conversation)::

    {"conversation_id", "user_id", "line", "turns": [{"user", "baseline", "status", "answer",
     "citations", "verification", "fail_reason", "trace_id", "latency_ms"}], "latency_ms"}

Every output line is written with one ``write`` + ``flush`` + ``fsync`` under a lock, so a killed
run leaves at most one partial last line; ``--resume`` drops that partial line, skips the
conversation ids already written and appends the rest: nothing lost, nothing duplicated.
Bad input lines (invalid JSON, not UTF-8, missing fields, duplicate ids) are reported with their
line number and skipped; text with lone surrogates (a ``\ud800`` escape in the JSON) is repaired
(U+FFFD), reported and replayed. One process at a time may write an output file (a lock on it).

This is the product's replay core (``csagent replay``); ``eval.replay`` only scores its output.
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import os
import re
import shutil
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from csagent.errors import UsageError
from strategies.rules.confirm import is_confirmation
from strategies.rules.hygiene import clean_text

logger = logging.getLogger(__name__)

DEFAULT_USER = "u1001"
_YES_NO_RE = re.compile(
    r"^(?:是|是的|对|对的|好|好的|可以|确认|确定|嗯|行|yes|y|ok|否|不|不是|不用|不用了|不要|算了|取消|no|n)[。.!！]?$",
    re.IGNORECASE,
)


def percentile(values: list[float], q: float) -> float:
    """Return the ``q``-th percentile (0–100) with linear interpolation (0.0 for no values)."""
    if not values:
        return 0.0
    data = sorted(float(v) for v in values)
    pos = (len(data) - 1) * q / 100.0
    low, high = math.floor(pos), math.ceil(pos)
    return data[low] + (data[high] - data[low]) * (pos - low)


def latency_summary(samples: Iterable[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Return p50/p95/mean/n per node and for ``total`` from per-turn ``{node: ms}`` dicts."""
    per_node: dict[str, list[float]] = {}
    totals: list[float] = []
    for sample in samples:
        if not sample:
            continue
        for node, ms in sample.items():
            per_node.setdefault(node, []).append(float(ms))
        totals.append(float(sum(sample.values())))
    out: dict[str, dict[str, float]] = {}
    for node, values in [*per_node.items(), ("total", totals)]:
        if values:
            out[node] = {"p50": round(percentile(values, 50), 3),
                         "p95": round(percentile(values, 95), 3),
                         "mean": round(sum(values) / len(values), 3), "n": len(values)}
    return out


@dataclass
class Conversation:
    """One valid input conversation (``repaired``: lone surrogates were replaced)."""

    line: int
    conversation_id: str
    user_id: str
    turns: list[dict[str, str]]
    repaired: bool = False


@dataclass
class ReplaySummary:
    """What a replay run did (printed at the end; also returned to callers)."""

    conversations: int = 0
    skipped_done: int = 0
    bad_lines: list[str] = field(default_factory=list)
    repaired_lines: list[str] = field(default_factory=list)
    turns: int = 0
    status_mix: Counter[str] = field(default_factory=Counter)
    fail_reasons: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    seconds: float = 0.0
    turn_latency_ms: list[float] = field(default_factory=list)
    node_latency: list[dict[str, float]] = field(default_factory=list)
    dropped_partial_line: bool = False

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-serialisable summary (latency as p50/p95 per node and per turn)."""
        turns_lat = latency_summary({"turn": ms} for ms in self.turn_latency_ms).get("turn", {})
        return {
            "conversations": self.conversations,
            "skipped_already_done": self.skipped_done,
            "bad_lines": self.bad_lines,
            "repaired_lines": self.repaired_lines,
            "turns": self.turns,
            "errors": self.errors,
            "status_mix": dict(self.status_mix),
            "fail_reasons": dict(self.fail_reasons),
            "seconds": round(self.seconds, 3),
            "turns_per_second": round(self.turns / self.seconds, 2) if self.seconds else 0.0,
            "turn_latency_ms": turns_lat,
            "node_latency_ms": latency_summary(self.node_latency),
            "dropped_partial_line": self.dropped_partial_line,
        }

    def render(self) -> str:
        """Return the human-readable summary."""
        data = self.to_json()
        lines = [f"replayed {data['conversations']} conversations, {data['turns']} turns in "
                 f"{data['seconds']} s ({data['turns_per_second']} turns/s)"]
        if self.skipped_done:
            lines.append(f"skipped {self.skipped_done} conversations already in the output (--resume)")
        if self.dropped_partial_line:
            lines.append("dropped a partially written last line of the previous run")
        lines.append("status: " + (", ".join(f"{k}={v}" for k, v in self.status_mix.most_common())
                                   or "-"))
        lines.append("fail reasons: " + (", ".join(f"{k}={v}" for k, v in
                                                   self.fail_reasons.most_common()) or "-"))
        lat = data["turn_latency_ms"]
        if lat:
            lines.append(f"turn latency: p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms")
        if self.errors:
            lines.append(f"turns that raised: {self.errors}")
        if self.bad_lines:
            lines.append(f"bad input lines skipped: {len(self.bad_lines)}")
            lines.extend(f"  {b}" for b in self.bad_lines[:20])
        if self.repaired_lines:
            lines.append(f"input lines repaired and replayed: {len(self.repaired_lines)}")
            lines.extend(f"  {b}" for b in self.repaired_lines[:20])
        return "\n".join(lines) + "\n"


def parse_conversation(number: int, raw: str) -> Conversation:
    """Parse one input line; raise ``ValueError`` saying what is wrong.

    Args:
        number: The 1-based line number (kept on the conversation).
        raw: The line's text.

    Returns:
        The conversation (``user_id`` defaults to ``u1001``); text holding lone surrogates is
        repaired (U+FFFD) and the conversation marked ``repaired``.

    """
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc.msg} at column {exc.colno})") from exc
    except RecursionError:
        raise ValueError("invalid JSON (nested too deeply)") from None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    cid = data.get("conversation_id")
    # Checked after cleaning: an id made only of characters that cleaning removes is empty.
    safe_id = clean_text(str(cid)) if isinstance(cid, str | int) else ""
    if not safe_id.strip():
        raise ValueError('"conversation_id" must be a non-empty string')
    user_id = data.get("user_id", DEFAULT_USER)
    safe_user = clean_text(user_id) if isinstance(user_id, str) else ""
    if not safe_user.strip():
        raise ValueError('"user_id" must be a non-empty string when given')
    turns = data.get("turns")
    if not isinstance(turns, list) or not turns:
        raise ValueError('"turns" must be a non-empty list')
    clean: list[dict[str, str]] = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict) or turn.get("role") not in {"user", "assistant"} \
                or not isinstance(turn.get("content"), str):
            raise ValueError(f'turns[{i}] must be {{"role": "user"|"assistant", "content": str}}')
        clean.append({"role": turn["role"], "content": clean_text(turn["content"])})
    if not any(t["role"] == "user" and t["content"].strip() for t in clean):
        raise ValueError("no non-empty user turn")
    repaired = safe_id != str(cid) or safe_user != user_id or any(
        c["content"] != t["content"] for c, t in zip(clean, turns, strict=True))
    return Conversation(number, safe_id, safe_user, clean, repaired=repaired)


def read_conversations(path: Path, summary: ReplaySummary) -> Iterator[Conversation]:
    """Yield valid conversations of ``path``; bad lines go to ``summary.bad_lines``."""
    seen: set[str] = set()
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc
    with handle:
        for number, data in enumerate(handle, 1):
            if not data.strip():
                continue
            try:
                try:
                    raw = data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise ValueError(f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at byte "
                                     f"{exc.start + 1})") from None
                conv = parse_conversation(number, raw)
                if conv.conversation_id in seen:
                    raise ValueError(f"duplicate conversation_id {conv.conversation_id!r}")
            except ValueError as exc:
                message = f"line {number}: {exc}"
                summary.bad_lines.append(message)
                logger.info("skipped %s", message)
                continue
            if conv.repaired:
                note = f"line {number}: lone surrogates replaced by U+FFFD"
                summary.repaired_lines.append(note)
                logger.info("%s", note)
            seen.add(conv.conversation_id)
            yield conv


def prepare_output(out: Path, *, resume: bool) -> tuple[set[str], bool]:
    """Check the output file; with ``resume`` drop a partial last line and return done ids.

    Args:
        out: The results file.
        resume: Whether ``--resume`` was given.

    Returns:
        ``(done conversation ids, whether a partial line was dropped)``.

    Raises:
        UsageError: The file has results but ``resume`` is False, or it is unreadable.

    """
    if not out.exists() or out.stat().st_size == 0:
        return set(), False
    if not resume:
        raise UsageError(f"{out} already has results: pass --resume to continue it, or remove it")
    data = out.read_bytes()
    keep = data.rfind(b"\n") + 1  # everything after the last newline is a partial write
    dropped = keep < len(data)
    done: set[str] = set()
    good_end = 0
    for raw in data[:keep].splitlines(keepends=True):
        try:
            record = json.loads(raw)
            done.add(str(record["conversation_id"]))
            good_end += len(raw)
        except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError):
            dropped = True  # a corrupt line (should not happen with atomic appends): cut from here
            break
    if good_end < len(data):
        with out.open("r+b") as handle:
            handle.truncate(good_end)
            handle.flush()
            os.fsync(handle.fileno())
    return done, dropped


class AtomicAppender:
    """Appends whole lines to a file: one write + flush + fsync per line, under a lock.

    The file is also locked (``flock``) for the appender's life, so two replays cannot
    interleave their results in one file.

    Raises:
        UsageError: Another process is writing to the file.

    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._fd)
            raise UsageError(f"another replay is writing to {path}") from None
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> None:
        """Write ``record`` as one JSON line and make it durable before returning."""
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = text.encode("utf-8", errors="backslashreplace")  # a lone surrogate → \\udXXX
        with self._lock:
            written = 0
            while written < len(data):
                written += os.write(self._fd, data[written:])
            os.fsync(self._fd)

    def close(self) -> None:
        """Close the file."""
        os.close(self._fd)


def _answers_prompt(text: str, interrupt: dict[str, Any] | None) -> bool:
    """Return True when a logged message answers the agent's confirmation prompt.

    A plain yes/no word, or a reply that confirms the pending action by naming it; whether it
    really confirms is the agent's decision (:mod:`strategies.rules.confirm`).
    """
    action = (interrupt or {}).get("action")
    return bool(_YES_NO_RE.match(text.strip())) or (
        isinstance(action, dict) and is_confirmation(text, action))


def replay_conversation(agent: Any, conv: Conversation, run_id: str) -> dict[str, Any]:
    """Replay one conversation in its own thread; return its output record (never raises)."""
    thread_id = f"replay-{run_id}-{conv.conversation_id}"
    started = time.perf_counter()
    turns: list[dict[str, Any]] = []
    waiting_confirm: dict[str, Any] | None = None
    for index, turn in enumerate(conv.turns):
        if turn["role"] != "user" or not turn["content"].strip():
            continue
        following = conv.turns[index + 1] if index + 1 < len(conv.turns) else None
        baseline = following["content"] if following and following["role"] == "assistant" else None
        turn_started = time.perf_counter()
        row: dict[str, Any] = {"user": turn["content"], "baseline": baseline}
        try:
            if waiting_confirm is not None and _answers_prompt(turn["content"], waiting_confirm):
                result = agent.resume(turn["content"], user_id=conv.user_id, thread_id=thread_id)
            else:
                result = agent.ask(turn["content"], user_id=conv.user_id, thread_id=thread_id)
        except Exception as exc:  # noqa: BLE001 - a bad turn is recorded, the batch goes on
            row.update(status="error", answer="", citations=[], verification=None,
                       fail_reason=None, trace_id=None, error=f"{type(exc).__name__}: {exc}",
                       latency_ms=round((time.perf_counter() - turn_started) * 1000, 3))
            turns.append(row)
            waiting_confirm = None
            continue
        waiting_confirm = (result.interrupt or {}) if result.status == "needs_confirmation" else None
        row.update(status=result.status, answer=result.answer,
                   citations=[c.get("id") for c in result.citations if isinstance(c, dict)],
                   verification=result.verification or None, fail_reason=result.fail_reason,
                   trace_id=result.trace_id,
                   latency_ms=round((time.perf_counter() - turn_started) * 1000, 3),
                   node_latency_ms=dict(result.node_latency_ms or {}))
        turns.append(row)
    _forget_thread(agent, thread_id)
    return {"conversation_id": conv.conversation_id, "user_id": conv.user_id, "line": conv.line,
            "turns": turns, "latency_ms": round((time.perf_counter() - started) * 1000, 3)}


SCRATCH_PREFIX = ".csagent-replay-scratch-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def make_scratch_dir(out: Path) -> Path:
    """Create this run's scratch folder beside ``out``; remove those of dead earlier runs.

    The folder (``.csagent-replay-scratch-<pid>``, holding the scratch copy of the shop
    database) lives next to the results file rather than in the system temp folder, so a
    killed run's leftovers are found and removed by the next run.
    """
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    for stale in parent.glob(f"{SCRATCH_PREFIX}*"):
        pid = stale.name.removeprefix(SCRATCH_PREFIX)
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            logger.info("removing the scratch folder of a killed replay: %s", stale)
            shutil.rmtree(stale, ignore_errors=True)
    scratch = parent / f"{SCRATCH_PREFIX}{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    return scratch


def _forget_thread(agent: Any, thread_id: str) -> None:
    """Delete the finished thread's checkpoints so a long replay does not grow in memory."""
    delete = getattr(getattr(agent, "checkpointer", None), "delete_thread", None)
    if callable(delete):
        try:
            delete(thread_id)
        except Exception as exc:  # noqa: BLE001 - memory hygiene only
            logger.debug("could not delete thread %s: %s", thread_id, exc)


def _account(summary: ReplaySummary, record: dict[str, Any]) -> None:
    summary.conversations += 1
    for turn in record["turns"]:
        summary.turns += 1
        summary.status_mix[turn["status"]] += 1
        if turn.get("fail_reason"):
            summary.fail_reasons[str(turn["fail_reason"])] += 1
        if turn["status"] == "error":
            summary.errors += 1
        summary.turn_latency_ms.append(float(turn.get("latency_ms") or 0.0))
        if turn.get("node_latency_ms"):
            summary.node_latency.append(turn["node_latency_ms"])


def replay_file(
    agent: Any,
    logs: Path,
    out: Path,
    *,
    concurrency: int = 1,
    resume: bool = False,
    progress: bool = False,
) -> ReplaySummary:
    """Replay every conversation of ``logs`` into ``out`` (see the module docstring).

    Args:
        agent: A :class:`csagent.api.CSAgent` (shared by the worker threads).
        logs: Input JSONL.
        out: Output JSONL (appended).
        concurrency: Worker threads (each conversation its own thread id).
        resume: Continue an earlier run: skip conversation ids already in ``out``.
        progress: Show a tqdm bar on stderr.

    Returns:
        The run's :class:`ReplaySummary`.

    """
    if concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if not logs.is_file():
        raise UsageError(f"cannot read {logs}: no such file")
    if logs.resolve() == out.resolve():
        raise UsageError("--out must not be the input file")
    done, dropped = prepare_output(out, resume=resume)
    summary = ReplaySummary(dropped_partial_line=dropped)
    run_id = uuid.uuid4().hex[:8]
    appender = AtomicAppender(out)
    from tqdm import tqdm

    bar = tqdm(file=sys.stderr, disable=not progress, unit="conv", desc="replay")
    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="replay") as pool:
            pending: set[Future[dict[str, Any]]] = set()

            def drain(block_until: int) -> None:
                nonlocal pending
                while len(pending) > block_until:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        record = future.result()
                        appender.append(record)
                        _account(summary, record)
                        bar.update(1)

            for conv in read_conversations(logs, summary):
                if conv.conversation_id in done:
                    summary.skipped_done += 1
                    continue
                pending.add(pool.submit(replay_conversation, agent, conv, run_id))
                drain(2 * concurrency)
            drain(0)
    finally:
        summary.seconds = time.perf_counter() - started
        appender.close()
        bar.close()
    return summary
