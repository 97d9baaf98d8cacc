"""What the chat backend keeps beside the LangGraph checkpoints, in SQLite or in Postgres.

Tables (the same in both engines):

* ``thread_owners``: which user started a thread (claimed once, under the thread's lock; never
  changes, so each process remembers it).
* ``actions``: the journal that makes confirmations and write tools idempotent. A resumed
  confirmation is recorded under ``resume:<interrupt id>`` with the customer's value and, when
  done, the turn's result; a write tool call under ``write:<interrupt id>:<tool>:<args digest>``
  with the tool's own result. A second run of the same confirmation reads the journal instead of
  writing again.
* ``thread_events``: the customer-visible history of a thread, in order (the customer's
  messages, each turn's result, a human agent's replies). The service streams it and serves it.
* ``handoffs``: the human-agent desk's queue: one active entry per thread (open → claimed →
  resolved) with the question, reason, unsupported claims, evidence, conversation and trace id.

:class:`SqliteStore` keeps one connection per thread (WAL, busy timeout, autocommit), so any
number of threads and processes on one machine can share the file; :class:`PostgresStore` uses a
``psycopg_pool.ConnectionPool``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from csagent.locks import wait_advisory_lock

logger = logging.getLogger(__name__)

ACTIVE = ("open", "claimed")
HANDOFF_STATUSES = ("open", "claimed", "resolved")

_TABLES = """
CREATE TABLE IF NOT EXISTS thread_owners (
    thread_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, created_at {real} NOT NULL);
CREATE TABLE IF NOT EXISTS actions (
    key TEXT PRIMARY KEY, thread_id TEXT NOT NULL, status TEXT NOT NULL,
    value TEXT, result TEXT, created_at {real} NOT NULL, updated_at {real} NOT NULL);
CREATE TABLE IF NOT EXISTS thread_events (
    seq {serial}, thread_id TEXT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL,
    created_at {real} NOT NULL);
CREATE INDEX IF NOT EXISTS thread_events_thread ON thread_events (thread_id, seq);
CREATE TABLE IF NOT EXISTS handoffs (
    id {serial}, thread_id TEXT NOT NULL, user_id TEXT NOT NULL, status TEXT NOT NULL,
    agent_id TEXT, question TEXT NOT NULL, reason TEXT, payload TEXT NOT NULL,
    created_at {real} NOT NULL, updated_at {real} NOT NULL);
CREATE INDEX IF NOT EXISTS handoffs_thread ON handoffs (thread_id, status);
"""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _loads(text: str | None) -> Any:
    return json.loads(text) if text else None


class ThreadStore:
    """The engine-independent operations; subclasses provide connections and the SQL dialect."""

    placeholder = "?"
    _OWNER_CACHE_MAX = 100_000

    def __init__(self) -> None:
        # A thread's owner never changes once claimed: remembered (bounded) to spare the database
        # a query on every request.
        self._owners: dict[str, str] = {}

    # engine hooks ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _connect(self) -> Iterator[Any]:
        raise NotImplementedError
        yield  # pragma: no cover

    def _sql(self, sql: str) -> str:
        return sql if self.placeholder == "?" else sql.replace("?", self.placeholder)

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._connect() as conn:
            return [tuple(r) for r in conn.execute(self._sql(sql), tuple(params)).fetchall()]

    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        with self._connect() as conn:
            return int(conn.execute(self._sql(sql), tuple(params)).rowcount or 0)

    def close(self) -> None:
        """Release the engine's resources (no-op for SQLite)."""

    # owners ----------------------------------------------------------------------------------
    def owner(self, thread_id: str) -> str | None:
        """Return the user who started ``thread_id``, or None for an unknown thread."""
        cached = self._owners.get(thread_id)
        if cached is not None:
            return cached
        rows = self._rows("SELECT user_id FROM thread_owners WHERE thread_id = ?", (thread_id,))
        if not rows:
            return None
        if len(self._owners) >= self._OWNER_CACHE_MAX:
            self._owners.clear()
        self._owners[thread_id] = owner = str(rows[0][0])
        return owner

    def cached_owner(self, thread_id: str) -> str | None:
        """Return the owner if this process already knows it (no database access)."""
        return self._owners.get(thread_id)

    def claim(self, thread_id: str, user_id: str) -> str:
        """Make ``user_id`` the owner of a new thread; return the owner (the first claim wins)."""
        self._run("INSERT INTO thread_owners (thread_id, user_id, created_at) VALUES (?, ?, ?) "
                  "ON CONFLICT (thread_id) DO NOTHING", (thread_id, user_id, time.time()))
        owner = self.owner(thread_id)
        return owner if owner is not None else user_id

    # the action journal ----------------------------------------------------------------------
    def action(self, key: str) -> dict[str, Any] | None:
        """Return ``{"status", "value", "result"}`` of a journalled action, or None."""
        rows = self._rows("SELECT status, value, result FROM actions WHERE key = ?", (key,))
        if not rows:
            return None
        status, value, result = rows[0]
        return {"status": status, "value": _loads(value), "result": _loads(result)}

    def begin_action(self, key: str, thread_id: str, value: Any = None) -> None:
        """Record that an action starts (kept as is when already journalled)."""
        now = time.time()
        self._run("INSERT INTO actions (key, thread_id, status, value, created_at, updated_at) "
                  "VALUES (?, ?, 'started', ?, ?, ?) ON CONFLICT (key) DO NOTHING",
                  (key, thread_id, _dumps(value), now, now))

    def set_action(self, key: str, thread_id: str, status: str, value: Any = None) -> None:
        """Insert or overwrite a journal entry (the in-flight marker of a thread's run)."""
        now = time.time()
        self._run("INSERT INTO actions (key, thread_id, status, value, created_at, updated_at) "
                  "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET status = ?, "
                  "value = ?, result = NULL, updated_at = ?",
                  (key, thread_id, status, _dumps(value), now, now, status, _dumps(value), now))

    def done_actions(self, prefix: str) -> list[dict[str, Any]]:
        """Return the finished journal entries whose key starts with ``prefix``."""
        rows = self._rows("SELECT key, value, result FROM actions WHERE key LIKE ? AND "
                          "status = 'done' ORDER BY created_at", (prefix.replace("%", "") + "%",))
        return [{"key": k, "value": _loads(v), "result": _loads(r)} for k, v, r in rows]

    def finish_action(self, key: str, result: Any) -> None:
        """Record an action's result (the tool's own data, or the turn's result)."""
        self._run("UPDATE actions SET status = 'done', result = ?, updated_at = ? WHERE key = ?",
                  (_dumps(result), time.time(), key))

    # customer-visible history ----------------------------------------------------------------
    def append_event(self, thread_id: str, kind: str, payload: dict[str, Any]) -> int:
        """Append one event to a thread's history; return its sequence number."""
        rows = self._rows("INSERT INTO thread_events (thread_id, kind, payload, created_at) "
                          "VALUES (?, ?, ?, ?) RETURNING seq",
                          (thread_id, kind, _dumps(payload), time.time()))
        return int(rows[0][0])

    def events(self, thread_id: str, after: int = 0, limit: int = 500) -> list[dict[str, Any]]:
        """Return a thread's events with ``seq > after``, oldest first."""
        rows = self._rows("SELECT seq, kind, payload, created_at FROM thread_events "
                          "WHERE thread_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                          (thread_id, after, limit))
        return [{"seq": int(s), "kind": k, "payload": _loads(p), "created_at": float(c)}
                for s, k, p, c in rows]

    def latest_event(self, thread_id: str, kind: str) -> dict[str, Any] | None:
        """Return the newest event of ``kind`` in a thread, or None."""
        rows = self._rows("SELECT seq, payload, created_at FROM thread_events "
                          "WHERE thread_id = ? AND kind = ? ORDER BY seq DESC LIMIT 1",
                          (thread_id, kind))
        if not rows:
            return None
        return {"seq": int(rows[0][0]), "payload": _loads(rows[0][1]),
                "created_at": float(rows[0][2])}

    # the desk's queue ------------------------------------------------------------------------
    def open_handoff(self, thread_id: str, user_id: str, question: str, reason: str | None,
                     payload: dict[str, Any]) -> int:
        """Queue a handoff, or refresh the thread's active one; return its id."""
        now = time.time()
        active = self.active_handoff(thread_id)
        if active is not None:
            self._run("UPDATE handoffs SET question = ?, reason = ?, payload = ?, updated_at = ? "
                      "WHERE id = ?", (question, reason, _dumps(payload), now, active["id"]))
            return int(active["id"])
        rows = self._rows(
            "INSERT INTO handoffs (thread_id, user_id, status, question, reason, payload, "
            "created_at, updated_at) VALUES (?, ?, 'open', ?, ?, ?, ?, ?) RETURNING id",
            (thread_id, user_id, question, reason, _dumps(payload), now, now))
        return int(rows[0][0])

    _HANDOFF_COLUMNS = ("id, thread_id, user_id, status, agent_id, question, reason, payload, "
                        "created_at, updated_at")

    def _handoff(self, row: tuple[Any, ...]) -> dict[str, Any]:
        keys = [k.strip() for k in self._HANDOFF_COLUMNS.split(",")]
        item = dict(zip(keys, row, strict=True))
        item["payload"] = _loads(item["payload"]) or {}
        return item

    def handoffs(self, statuses: Sequence[str] = ACTIVE, limit: int = 200) -> list[dict[str, Any]]:
        """Return handoffs with one of ``statuses``, oldest first."""
        marks = ", ".join("?" for _ in statuses)
        rows = self._rows(f"SELECT {self._HANDOFF_COLUMNS} FROM handoffs WHERE status IN "
                          f"({marks}) ORDER BY id LIMIT ?", (*statuses, limit))
        return [self._handoff(r) for r in rows]

    def handoff(self, handoff_id: int) -> dict[str, Any] | None:
        """Return one handoff, or None."""
        rows = self._rows(f"SELECT {self._HANDOFF_COLUMNS} FROM handoffs WHERE id = ?",
                          (handoff_id,))
        return self._handoff(rows[0]) if rows else None

    def active_handoff(self, thread_id: str) -> dict[str, Any] | None:
        """Return the thread's open or claimed handoff, or None."""
        rows = self._rows(f"SELECT {self._HANDOFF_COLUMNS} FROM handoffs WHERE thread_id = ? "
                          "AND status IN ('open', 'claimed') ORDER BY id DESC LIMIT 1",
                          (thread_id,))
        return self._handoff(rows[0]) if rows else None

    def claim_handoff(self, handoff_id: int, agent_id: str) -> bool:
        """Claim an open handoff for ``agent_id`` (idempotent for its claimant); True on success."""
        return self._run("UPDATE handoffs SET status = 'claimed', agent_id = ?, updated_at = ? "
                         "WHERE id = ? AND (status = 'open' OR (status = 'claimed' AND "
                         "agent_id = ?))", (agent_id, time.time(), handoff_id, agent_id)) == 1

    def resolve_handoff(self, handoff_id: int, agent_id: str) -> bool:
        """Resolve a handoff claimed by ``agent_id``; True on success."""
        return self._run("UPDATE handoffs SET status = 'resolved', updated_at = ? WHERE id = ? "
                         "AND status = 'claimed' AND agent_id = ?",
                         (time.time(), handoff_id, agent_id)) == 1


class SqliteStore(ThreadStore):
    """The store in a SQLite file (WAL, one short connection per call)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_TABLES.format(real="REAL",
                                              serial="INTEGER PRIMARY KEY AUTOINCREMENT"))

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """Yield this thread's connection (opened once per thread, autocommit, WAL)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        yield conn

    def close(self) -> None:
        """Close every thread's connection."""
        with self._all_lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()


class PostgresStore(ThreadStore):
    """The store in Postgres (a shared ``psycopg_pool.ConnectionPool`` in autocommit mode)."""

    placeholder = "%s"

    def __init__(self, pool: Any) -> None:
        super().__init__()
        self.pool = pool
        with self._connect() as conn:
            wait_advisory_lock(conn, 7301)  # one schema set-up at a time
            try:
                for statement in _TABLES.format(real="DOUBLE PRECISION",
                                                serial="BIGSERIAL PRIMARY KEY").split(";"):
                    if statement.strip():
                        conn.execute(statement)
            finally:
                conn.execute("SELECT pg_advisory_unlock(7301)")

    @contextlib.contextmanager
    def _connect(self) -> Iterator[Any]:
        with self.pool.connection() as conn:
            yield conn
