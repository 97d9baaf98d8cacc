"""The seed data is internally consistent and the SQLite database is created, seeded and reset safely."""

from __future__ import annotations

import multiprocessing
import sqlite3
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from csagent.errors import UsageError
from shop import seed
from shop.db import connect, ensure_db, reset_db


def D(x: float) -> Decimal:
    return Decimal(str(x))


PRODUCTS = {p["id"]: p for p in seed.PRODUCTS}
SHIPMENTS = {s["order_id"]: s for s in seed.SHIPMENTS}


def test_order_amounts_add_up_in_the_seed() -> None:
    for order in seed.ORDERS:
        goods = sum(D(i["price"]) * i["qty"] for i in order["items"])
        assert D(order["goods_amount"]) == goods, order["id"]
        assert D(order["amount"]) == goods + D(order["shipping_fee"]) - D(order["discount"]), order[
            "id"
        ]
        for item in order["items"]:
            assert item["price"] == PRODUCTS[item["product_id"]]["price"]
            assert item["name"] == PRODUCTS[item["product_id"]]["name"]


def test_seed_ids_dates_and_references_are_consistent() -> None:
    ids = [o["id"] for o in seed.ORDERS]
    assert len(ids) == len(set(ids)) >= 25
    users = {u["id"] for u in seed.USERS}
    assert users == {"u1001", "u1002", "u1003", "u1004", "u1005"}
    for order in seed.ORDERS:
        assert order["user_id"] in users
        assert order["status"] in seed.ORDER_STATUSES
        assert order["id"].startswith("SO") and len(order["id"]) == 15
        assert order["id"][2:10] == order["created_at"][:10].replace("-", "")
        assert "2026-10-01" <= order["created_at"][:10] <= seed.DEMO_NOW[:10]
        if order["status"] == "待付款":
            assert order["pay_method"] is None and order["paid_at"] is None
        elif order["status"] != "已取消":
            assert order["pay_method"] in seed.PAY_METHODS
    for ticket in seed.TICKETS:
        order = next(o for o in seed.ORDERS if o["id"] == ticket["order_id"])
        assert order["user_id"] == ticket["user_id"]
        assert ticket["status"] in seed.TICKET_STATUSES


def test_shipments_match_order_states() -> None:
    for order in seed.ORDERS:
        shipped = order["id"] in SHIPMENTS
        if order["status"] in ("已发货", "运输中", "已签收"):
            assert shipped, order["id"]
        if order["status"] in ("待付款", "待发货", "已取消"):
            assert not shipped, order["id"]
        if order["signed_at"]:
            assert shipped and SHIPMENTS[order["id"]]["events"][-1]["time"] == order["signed_at"]
        if shipped:
            times = [e["time"] for e in SHIPMENTS[order["id"]]["events"]]
            assert times == sorted(times) and times[0] >= order["created_at"]


def test_every_user_has_orders_in_several_states_and_all_states_occur() -> None:
    per_user: dict[str, Counter[str]] = {}
    for order in seed.ORDERS:
        per_user.setdefault(order["user_id"], Counter())[order["status"]] += 1
    for user, statuses in per_user.items():
        assert sum(statuses.values()) >= 4, user
        assert len(statuses) >= 3, user
    assert {o["status"] for o in seed.ORDERS} == set(seed.ORDER_STATUSES)


def test_ensure_db_seeds_once_with_wal(tmp_path: Path) -> None:
    path = ensure_db(tmp_path / "sub" / "shop.sqlite")
    ensure_db(path)
    conn = connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT COUNT(*) FROM orders").fetchone()[0] == len(seed.ORDERS)
        assert conn.execute("SELECT COUNT(*) FROM users").fetchone()[0] == len(seed.USERS)
        assert conn.execute("SELECT COUNT(*) FROM products").fetchone()[0] == len(seed.PRODUCTS)
        n_items = sum(len(o["items"]) for o in seed.ORDERS)
        assert conn.execute("SELECT COUNT(*) FROM order_items").fetchone()[0] == n_items
        n_events = sum(len(s["events"]) for s in seed.SHIPMENTS)
        assert conn.execute("SELECT COUNT(*) FROM shipment_events").fetchone()[0] == n_events
        assert conn.execute("SELECT COUNT(*) FROM after_sales_tickets").fetchone()[0] == len(
            seed.TICKETS
        )
        assert conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0] == 0
    finally:
        conn.close()


def test_amounts_add_up_in_the_database(tmp_path: Path) -> None:
    conn = connect(ensure_db(tmp_path / "shop.sqlite"))
    try:
        for order in conn.execute("SELECT * FROM orders"):
            lines = conn.execute(
                "SELECT qty, price FROM order_items WHERE order_id = ?", (order["id"],)
            ).fetchall()
            goods = sum(D(r["price"]) * r["qty"] for r in lines)
            assert D(order["goods_amount"]) == goods
            total = goods + D(order["shipping_fee"]) - D(order["discount"])
            assert D(order["amount"]) == total
    finally:
        conn.close()


def _ensure(path: str) -> int:
    ensure_db(path)
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM orders").fetchone()[0])
    finally:
        conn.close()


def test_concurrent_first_use_seeds_exactly_once(tmp_path: Path) -> None:
    path = str(tmp_path / "race.sqlite")
    with multiprocessing.get_context("fork").Pool(4) as pool:
        counts = pool.map(_ensure, [path] * 8)
    assert counts == [len(seed.ORDERS)] * 8


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "shop.sqlite"
    bad.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(UsageError, match="not a usable shop database"):
        ensure_db(bad)


def test_reset_db_restores_the_seed(tmp_path: Path) -> None:
    path = ensure_db(tmp_path / "shop.sqlite")
    conn = connect(path)
    conn.execute("UPDATE orders SET status = '已取消'")
    conn.execute(
        "INSERT INTO audit_log (ts, user_id, tool, args, result) VALUES ('t','u','x','{}','{}')"
    )
    conn.close()
    reset_db(path)
    conn = connect(path)
    try:
        statuses = Counter(r[0] for r in conn.execute("SELECT status FROM orders"))
        assert statuses == Counter(o["status"] for o in seed.ORDERS)
        assert conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0] == 0
    finally:
        conn.close()
