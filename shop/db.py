"""The demo shop's SQLite database: schema, seeding from ``shop.seed``, connections.

``ensure_db(path)`` creates the file with the schema and the seed data when it is absent (or
empty) and is safe when several processes or threads call it at once on first use: the check
and the seeding happen inside one ``BEGIN IMMEDIATE`` transaction, so exactly one caller seeds
and the others wait and then see the seeded database. Journal mode is WAL.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from pathlib import Path
from typing import Any

from contracts.errors import UsageError
from shop import seed

logger = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
BUSY_TIMEOUT_S = 30.0

SCHEMA: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS users (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, phone TEXT NOT NULL,
        province TEXT NOT NULL, city TEXT NOT NULL, district TEXT NOT NULL,
        address_detail TEXT NOT NULL, tier TEXT NOT NULL, region TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS products (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, price REAL NOT NULL,
        stock INTEGER NOT NULL, tags TEXT NOT NULL, seven_day_return INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS orders (
        id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id),
        created_at TEXT NOT NULL, status TEXT NOT NULL,
        goods_amount REAL NOT NULL, shipping_fee REAL NOT NULL, discount REAL NOT NULL,
        amount REAL NOT NULL, pay_method TEXT, paid_at TEXT, shipping_region TEXT NOT NULL,
        signed_at TEXT, cancelled_at TEXT, refund_status TEXT, updated_at TEXT NOT NULL)""",
    """CREATE INDEX IF NOT EXISTS orders_user ON orders(user_id, created_at)""",
    """CREATE TABLE IF NOT EXISTS order_items (
        order_id TEXT NOT NULL REFERENCES orders(id), line_no INTEGER NOT NULL,
        product_id TEXT NOT NULL REFERENCES products(id), name TEXT NOT NULL,
        qty INTEGER NOT NULL, price REAL NOT NULL, PRIMARY KEY (order_id, line_no))""",
    """CREATE TABLE IF NOT EXISTS shipments (
        order_id TEXT PRIMARY KEY REFERENCES orders(id), carrier TEXT NOT NULL,
        tracking_no TEXT NOT NULL, shipped_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS shipment_events (
        order_id TEXT NOT NULL REFERENCES shipments(order_id), seq INTEGER NOT NULL,
        time TEXT NOT NULL, location TEXT NOT NULL, description TEXT NOT NULL,
        PRIMARY KEY (order_id, seq))""",
    """CREATE TABLE IF NOT EXISTS after_sales_tickets (
        id TEXT PRIMARY KEY, order_id TEXT NOT NULL REFERENCES orders(id),
        user_id TEXT NOT NULL REFERENCES users(id), kind TEXT NOT NULL, reason TEXT NOT NULL,
        status TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        note TEXT NOT NULL DEFAULT '')""",
    """CREATE INDEX IF NOT EXISTS tickets_order ON after_sales_tickets(order_id)""",
    """CREATE TABLE IF NOT EXISTS audit_log (
        id INTEGER PRIMARY KEY AUTOINCREMENT, ts TEXT NOT NULL, user_id TEXT NOT NULL,
        tool TEXT NOT NULL, args TEXT NOT NULL, result TEXT NOT NULL)""",
)

# Tables in delete order (children first), used by reset_db.
TABLES = (
    "audit_log",
    "after_sales_tickets",
    "shipment_events",
    "shipments",
    "order_items",
    "orders",
    "products",
    "users",
    "meta",
)


def connect(path: str | Path) -> sqlite3.Connection:
    """Open a connection in autocommit mode (transactions are explicit) with rows as dicts.

    Args:
        path: The database file.

    Returns:
        A connection with ``sqlite3.Row`` rows, foreign keys on and a busy timeout.

    """
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


WAL_RETRY_S = 0.05


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL, waiting (bounded) while another process switches it.

    SQLite does not always call the busy handler for a journal-mode change: two processes opening
    a new file at once can get "database is locked" at once. Retried until ``BUSY_TIMEOUT_S``.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(WAL_RETRY_S)


def ensure_db(path: str | Path) -> Path:
    """Create the shop database with schema and seed data when it does not exist yet.

    Args:
        path: Where the SQLite file lives (parent folders are created).

    Returns:
        The database path.

    Raises:
        UsageError: The file exists but is not a SQLite database.

    """
    db_path = Path(path)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = connect(db_path)
        try:
            _enable_wal(conn)
            conn.execute("BEGIN IMMEDIATE")
            try:
                if not _is_seeded(conn):
                    _create_and_seed(conn)
                    logger.info("seeded demo shop database %s", db_path)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise UsageError(
            f"{db_path} is not a usable shop database ({exc}); delete it or point CSAGENT_SHOP_DB elsewhere"
        ) from exc
    return db_path


def reset_db(path: str | Path) -> Path:
    """Restore the database to the seed data (for tests): empty every table and reseed.

    Args:
        path: The database file (created when absent).

    Returns:
        The database path.

    """
    db_path = ensure_db(path)
    conn = connect(db_path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        for table in TABLES:
            conn.execute(f"DELETE FROM {table}")  # fixed table names, not input
        conn.execute("DELETE FROM sqlite_sequence WHERE name = 'audit_log'")
        _create_and_seed(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return db_path


def _is_seeded(conn: sqlite3.Connection) -> bool:
    """Return whether the meta table records a completed seed."""
    row = conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name='meta'"
    ).fetchone()
    if row is None:
        return False
    return conn.execute("SELECT 1 FROM meta WHERE key='seeded'").fetchone() is not None


def _create_and_seed(conn: sqlite3.Connection) -> None:
    """Create the tables and insert the seed rows (inside the caller's transaction)."""
    for statement in SCHEMA:
        conn.execute(statement)
    conn.executemany(
        "INSERT INTO users VALUES (?,?,?,?,?,?,?,?,?)",
        [
            (
                u["id"],
                u["name"],
                u["phone"],
                u["address"]["province"],
                u["address"]["city"],
                u["address"]["district"],
                u["address"]["detail"],
                u["tier"],
                u["region"],
            )
            for u in seed.USERS
        ],
    )
    conn.executemany(
        "INSERT INTO products VALUES (?,?,?,?,?,?,?)",
        [
            (
                p["id"],
                p["name"],
                p["category"],
                p["price"],
                p["stock"],
                json.dumps(p["tags"], ensure_ascii=False),
                int(p["seven_day_return"]),
            )
            for p in seed.PRODUCTS
        ],
    )
    for o in seed.ORDERS:
        conn.execute(
            "INSERT INTO orders VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                o["id"],
                o["user_id"],
                o["created_at"],
                o["status"],
                o["goods_amount"],
                o["shipping_fee"],
                o["discount"],
                o["amount"],
                o["pay_method"],
                o["paid_at"],
                o["shipping_region"],
                o["signed_at"],
                o["cancelled_at"],
                o["refund_status"],
                _last_change(o),
            ),
        )
        conn.executemany(
            "INSERT INTO order_items VALUES (?,?,?,?,?,?)",
            [
                (o["id"], n, i["product_id"], i["name"], i["qty"], i["price"])
                for n, i in enumerate(o["items"], start=1)
            ],
        )
    for s in seed.SHIPMENTS:
        conn.execute(
            "INSERT INTO shipments VALUES (?,?,?,?)",
            (s["order_id"], s["carrier"], s["tracking_no"], s["shipped_at"]),
        )
        conn.executemany(
            "INSERT INTO shipment_events VALUES (?,?,?,?,?)",
            [
                (s["order_id"], n, e["time"], e["location"], e["description"])
                for n, e in enumerate(s["events"], start=1)
            ],
        )
    conn.executemany(
        "INSERT INTO after_sales_tickets VALUES (?,?,?,?,?,?,?,?,?)",
        [
            (
                t["id"],
                t["order_id"],
                t["user_id"],
                t["kind"],
                t["reason"],
                t["status"],
                t["created_at"],
                t["updated_at"],
                t["note"],
            )
            for t in seed.TICKETS
        ],
    )
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('seeded', ?)", (seed.DEMO_NOW,))


def _last_change(order: dict[str, Any]) -> str:
    """Return the latest timestamp recorded on a seed order."""
    stamps = [
        order[k] for k in ("created_at", "paid_at", "signed_at", "cancelled_at") if order.get(k)
    ]
    return max(stamps)
