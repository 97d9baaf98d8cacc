"""Per-thread locks: one run at a time per conversation thread, across processes.

Two implementations with the same interface (``hold(thread_id)`` is a context manager):

* :class:`FileThreadLocks` (the SQLite default, one machine): an ``fcntl.flock`` on a small file
  per thread under ``data_dir/locks``. Every acquisition opens its own file description, so the
  lock excludes other threads of the same process as well as other processes, and the kernel
  releases it when the holder dies (``kill -9`` included): no stale lock to clean up.
* :class:`PostgresThreadLocks` (``CSAGENT_DATABASE_URL``): a session-level
  ``pg_advisory_lock`` on a connection held for the run. A worker that dies drops its
  connection, and Postgres releases the lock.

Waiting is bounded: past ``timeout`` seconds :class:`ThreadBusyError` is raised (the service
maps it to HTTP 409) instead of queueing forever behind a stuck run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from csagent.errors import UsageError

logger = logging.getLogger(__name__)

DEFAULT_LOCK_TIMEOUT = 60.0
_POLL_START = 0.002
_POLL_MAX = 0.05


class ThreadBusyError(UsageError):
    """Another run holds the thread's lock for longer than the caller is willing to wait."""


class ThreadLocks(Protocol):
    """Hands out the exclusive per-thread lock."""

    def hold(self, thread_id: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> contextlib.AbstractContextManager[None]:
        """Return a context manager that holds ``thread_id``'s lock while it is entered."""
        ...


def _digest(thread_id: str) -> bytes:
    return hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).digest()


def _backoff(delay: float) -> float:
    time.sleep(delay)
    return min(delay * 2, _POLL_MAX)


class FileThreadLocks:
    """``fcntl.flock`` locks, one file per thread id (hashed) under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def path_for(self, thread_id: str) -> Path:
        """Return the lock file of ``thread_id``."""
        return self.directory / f"{_digest(thread_id).hex()[:40]}.lock"

    @contextlib.contextmanager
    def hold(self, thread_id: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
        """Hold the thread's lock; raise :class:`ThreadBusyError` after ``timeout`` seconds."""
        fd = os.open(self.path_for(thread_id), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline, delay = time.monotonic() + timeout, _POLL_START
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise ThreadBusyError(
                            f"thread {thread_id!r} is busy with another turn; try again shortly"
                        ) from None
                    delay = _backoff(delay)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


class PostgresThreadLocks:
    """Session-level advisory locks, each on its own pooled connection."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    @staticmethod
    def key_for(thread_id: str) -> int:
        """Return the signed 64-bit advisory-lock key of ``thread_id``."""
        return int.from_bytes(_digest(thread_id)[:8], "big", signed=True)

    @contextlib.contextmanager
    def hold(self, thread_id: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
        """Hold the thread's advisory lock; raise :class:`ThreadBusyError` after ``timeout``."""
        key = self.key_for(thread_id)
        with self.pool.connection() as conn:
            deadline, delay = time.monotonic() + timeout, _POLL_START
            while not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                if time.monotonic() >= deadline:
                    raise ThreadBusyError(
                        f"thread {thread_id!r} is busy with another turn; try again shortly")
                delay = _backoff(delay)
            try:
                yield
            finally:
                try:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
                except Exception as exc:  # noqa: BLE001 - a broken connection: drop it
                    logger.warning("advisory unlock failed (%s); closing the connection", exc)
                    conn.close()


def wait_advisory_lock(conn: Any, key: int, poll_s: float = 0.05) -> None:
    """Take a session advisory lock, polling: a waiter holds no snapshot between tries.

    A blocking ``pg_advisory_lock`` keeps its statement's snapshot while it waits, and the
    checkpointer's migration (``CREATE INDEX CONCURRENTLY``, run by the lock's holder on another
    connection) waits for every older snapshot: two processes starting on a fresh database
    would wait for each other forever, a cycle through the clients that Postgres cannot see.
    """
    while not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
        time.sleep(poll_s)
