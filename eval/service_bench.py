r"""Service benchmark (issue 11): N concurrent customers × M turns over HTTP against 2 workers.

Starts two ``csagent serve`` workers on free loopback ports that share one conversation backend
(a fresh Postgres database when one is reachable, else SQLite files in a temp data dir), offline
mode, the existing knowledge index (``--index``, default the data dir's). Every customer has its
own thread and sends its turns one after another as SSE turns, alternating between the workers;
every fifth turn asks for a refund and then declines the confirmation (the next turn), so the
confirmation interrupt crosses workers too. Measured per turn: time to the first SSE event and to
the final ``result`` event. Checked: zero errors (non-200, ``error`` events, exceptions) and
zero cross-talk (a result for another thread, an order id of another shop user in an answer, or
a thread history that is not exactly this customer's messages and replies in order).

Usage::

    python -m eval.service_bench --customers 50 --turns 20 \\
        --report docs/results/service.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from csagent.config import REPO_ROOT, Settings

logger = logging.getLogger("eval.service_bench")

SHOP_USERS = ("u1001", "u1002", "u1003", "u1004", "u1005")
POLICY = ("七天无理由退货的运费谁承担？", "退货运费谁出", "订单发货前可以取消吗？",
          "签收后多久可以申请退货？", "你好")
ORDER_ID = re.compile(r"SO\d{13}")
PG_ADMIN_URL = os.environ.get("CSAGENT_TEST_PG_URL",
                              "postgresql://postgres@127.0.0.1:5432/postgres")


@dataclass
class Turn:
    """One measured turn."""

    customer: int
    worker: int
    kind: str
    n: int
    first_event_ms: float
    total_ms: float
    status: str
    error: str | None = None


@dataclass
class Customer:
    """One simulated customer: a token, a shop user, a thread, what it sent."""

    index: int
    token: str
    user: str
    thread: str
    own_orders: set[str]
    sent: list[str] = field(default_factory=list)
    replies: int = 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _orders_by_user(shop_db: Path) -> dict[str, set[str]]:
    from shop.db import ensure_db

    ensure_db(shop_db)
    with sqlite3.connect(shop_db) as conn:
        rows = conn.execute("SELECT id, user_id FROM orders").fetchall()
    out: dict[str, set[str]] = {}
    for order_id, user in rows:
        out.setdefault(user, set()).add(order_id)
    return out


def _messages(customer: Customer, turns: int) -> list[tuple[str, str]]:
    """Return the customer's script: ``(kind, text)``; kind ``message`` or ``decline``."""
    orders = sorted(customer.own_orders)
    script: list[tuple[str, str]] = []
    while len(script) < turns:
        n = len(script)
        if n % 5 == 3 and n + 1 < turns:
            order = orders[n % len(orders)]
            script += [("message", f"订单{order}我不想要了，帮我取消"), ("decline", "decline")]
        elif n % 3 == 0:
            script.append(("message", f"帮我查一下订单{orders[n % len(orders)]}现在什么状态"))
        elif n % 3 == 1:
            script.append(("message", "我的订单都有哪些"))
        else:
            script.append(("message", POLICY[n % len(POLICY)]))
    return script[:turns]


async def _sse_turn(client: httpx.AsyncClient, url: str, customer: Customer, kind: str,
                    text: str) -> tuple[float, float, dict[str, Any]]:
    path, body = ((f"/v1/threads/{customer.thread}/messages", {"message": text})
                  if kind == "message" else
                  (f"/v1/threads/{customer.thread}/confirm", {"decision": text}))
    headers = {"Authorization": f"Bearer {customer.token}", "Accept": "text/event-stream"}
    started = time.perf_counter()
    first: float | None = None
    event, data_lines = "message", []
    async with client.stream("POST", url + path, json=body, headers=headers) as resp:
        if resp.status_code != 200:
            raise RuntimeError(f"HTTP {resp.status_code}: {(await resp.aread())[:200]!r}")
        async for line in resp.aiter_lines():
            if first is None:
                first = time.perf_counter()
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data_lines.append(line[5:].lstrip())
            elif line == "" and data_lines:
                data = json.loads("\n".join(data_lines))
                data_lines = []
                if event == "result":
                    done = time.perf_counter()
                    return (first - started) * 1000, (done - started) * 1000, data
                if event == "error":
                    raise RuntimeError(f"error event: {data}")
    raise RuntimeError("stream ended without a result")


async def _run_customer(client: httpx.AsyncClient, customer: Customer, urls: list[str],
                        turns: int, out: list[Turn], problems: list[str], delay: float) -> None:
    await asyncio.sleep(delay)  # arrivals spread over the ramp-up, then all stay concurrent
    last = ""
    for n, (kind, text) in enumerate(_messages(customer, turns)):
        worker = (customer.index + n) % len(urls)
        if kind == "decline" and last != "needs_confirmation":
            kind, text = "message", POLICY[n % len(POLICY)]  # nothing to decline: ask
        try:
            first, total, result = await _sse_turn(client, urls[worker], customer, kind, text)
        except Exception as exc:  # noqa: BLE001 - counted as an error
            out.append(Turn(customer.index, worker, kind, n, 0.0, 0.0, "error",
                            str(exc)[:300]))
            continue
        if kind == "message":
            customer.sent.append(text)
        customer.replies += 1
        last = str(result.get("status", ""))
        if result.get("thread_id") != customer.thread:
            problems.append(f"result for thread {result.get('thread_id')} on "
                            f"{customer.thread}")
        foreign = set(ORDER_ID.findall(result.get("answer", ""))) - customer.own_orders
        mentioned = {o for o in foreign if o not in text}
        if mentioned:
            problems.append(f"{customer.user} shown orders {sorted(mentioned)}")
        out.append(Turn(customer.index, worker, kind, n, first, total,
                        str(result.get("status", ""))))


async def _run_all(people: list[Customer], urls: list[str], turns: int, out: list[Turn],
                   problems: list[str], ramp_s: float, lags: list[float]) -> None:
    limits = httpx.Limits(max_connections=4 * len(people), max_keepalive_connections=4 * len(people))
    monitor = asyncio.ensure_future(_loop_lag(lags))
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        step = ramp_s / max(len(people), 1)
        await asyncio.gather(*(_run_customer(client, c, urls, turns, out, problems, i * step)
                               for i, c in enumerate(people)))
    monitor.cancel()


async def _loop_lag(lags: list[float], every_s: float = 0.01) -> None:
    """Record how late this client's own event loop wakes up (its share of a first-event time)."""
    while True:
        started = time.perf_counter()
        await asyncio.sleep(every_s)
        lags.append((time.perf_counter() - started - every_s) * 1000)


def _check_history(customer: Customer, url: str) -> list[str]:
    resp = httpx.get(f"{url}/v1/threads/{customer.thread}/history",
                     headers={"Authorization": f"Bearer {customer.token}"}, timeout=60)
    if resp.status_code != 200:
        return [f"history of {customer.thread}: HTTP {resp.status_code}"]
    events = resp.json()["events"]
    messages = [e["text"] for e in events if e["type"] == "message"]
    problems = []
    if messages != customer.sent:
        problems.append(f"{customer.thread}: history messages differ from what was sent")
    replies = [e for e in events if e["type"] == "reply"]
    if len(replies) != customer.replies:
        problems.append(f"{customer.thread}: {len(replies)} replies stored, "
                        f"{customer.replies} received")
    if events and events[0]["type"] != "message":
        problems.append(f"{customer.thread}: history does not start with the customer")
    return problems


def _warm_up(urls: list[str], token: str) -> None:
    """Run a few unmeasured turns per worker (first-query model and index loading)."""
    for i, url in enumerate(urls):
        for text in (POLICY[0], "我的订单都有哪些", POLICY[2]):
            resp = httpx.post(f"{url}/v1/threads/warm-{i}/messages", json={"message": text},
                              headers={"Authorization": f"Bearer {token}"}, timeout=120)
            resp.raise_for_status()


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def _pg_database() -> str | None:
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL, connect_timeout=3, autocommit=True) as conn:
            name = f"csagent_bench_{uuid.uuid4().hex[:10]}"
            conn.execute(f'CREATE DATABASE "{name}"')
        return PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    except Exception as exc:  # noqa: BLE001 - fall back to SQLite, say so
        logger.warning("no Postgres (%s): using SQLite files", exc)
        return None


def _drop_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _pg_headroom(warm: int, peak: int) -> None:
    """Fail early, saying why, when Postgres cannot even take the workers' warm connections."""
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        limit = int(conn.execute("SHOW max_connections").fetchone()[0])  # type: ignore[index]
        used = int(conn.execute("SELECT count(*) FROM pg_stat_activity").fetchone()[0])  # type: ignore[index]
    free = limit - used
    if free < warm:
        raise RuntimeError(f"Postgres has {free} free connections of {limit}; the workers open "
                           f"{warm} at start (stale benchmark workers still running?)")
    if free < peak:
        logger.warning("Postgres has %d free connections; the workers may open up to %d",
                       free, peak)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _start_workers(n: int, root: Path, index: Path, database_url: str | None,
                   auth_file: Path, run_processes: int,
                   run_threads: int) -> tuple[list[subprocess.Popen[bytes]], list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CSAGENT_")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", LANGSMITH_TRACING="false",
               LANGFUSE_TRACING_ENABLED="false", CSAGENT_INDEX_DIR=str(index),
               CSAGENT_SHOP_DB=str(root / "shop.sqlite"), CSAGENT_AUTH_FILE=str(auth_file),
               CSAGENT_RUN_PROCESSES=str(run_processes), CSAGENT_RUN_THREADS=str(run_threads))
    if database_url:
        env["CSAGENT_DATABASE_URL"] = database_url
    procs: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        _launch(n, root, env, database_url, procs, urls)
    except BaseException:
        _stop(procs)  # never leave a worker (and its database connections) behind
        raise
    return procs, urls


def _launch(n: int, root: Path, env: dict[str, str], database_url: str | None,
            procs: list[subprocess.Popen[bytes]], urls: list[str]) -> None:
    for i in range(n):
        port = _free_port()
        worker_env = env | {"CSAGENT_DATA_DIR": str(root / (f"w{i}" if database_url else "data"))}
        log = open(root / f"worker{i}.log", "wb")  # noqa: SIM115 - lives as long as the worker
        procs.append(subprocess.Popen([sys.executable, "-m", "csagent.cli", "serve", "--port",
                                       str(port)], cwd=REPO_ROOT, env=worker_env, stdout=log,
                                      stderr=subprocess.STDOUT))
        urls.append(f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 180
    for proc, url in zip(procs, urls, strict=True):
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                text = (root / f"worker{urls.index(url)}.log").read_text(errors="replace")
                raise RuntimeError(f"worker {url} did not start; its log ends:\n{text[-2000:]}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)


def run(customers: int, turns: int, workers: int, index: Path, backend: str,
        run_threads: int = 3, ramp_s: float = 1.0, run_processes: int = 2) -> dict[str, Any]:
    """Run the benchmark; return its figures."""
    load_start = os.getloadavg()
    lags: list[float] = []
    with tempfile.TemporaryDirectory(prefix="csagent-bench-") as tmp:
        root = Path(tmp)
        own = _orders_by_user(root / "shop.sqlite")
        tokens: dict[str, Any] = {}
        people = []
        run_id = uuid.uuid4().hex[:6]
        for i in range(customers):
            user = SHOP_USERS[i % len(SHOP_USERS)]
            token = f"bench-{run_id}-{i}"
            tokens[token] = {"subject": user, "role": "customer", "name": f"bench {i}"}
            people.append(Customer(i, token, user, f"bench-{run_id}-{i}", own.get(user, set())))
        tokens[f"bench-{run_id}-warm"] = {"subject": "u1001", "role": "customer"}
        auth_file = root / "auth.json"
        auth_file.write_text(json.dumps({"tokens": tokens}), encoding="utf-8")
        database_url = _pg_database() if backend == "postgres" else None
        procs: list[subprocess.Popen[bytes]] = []
        try:
            if database_url:  # 3 pools per process, 1 warm connection each; at most 8 in the
                # HTTP process's and run_threads + 1 in a turn process's
                _pg_headroom(workers * 3 * (1 + run_processes),
                             workers * 3 * (8 + run_processes * (run_threads + 1)))
            procs, urls = _start_workers(workers, root, index, database_url, auth_file,
                                         run_processes, run_threads)
            _warm_up(urls, f"bench-{run_id}-warm")
            out: list[Turn] = []
            problems: list[str] = []
            started = time.perf_counter()
            asyncio.run(_run_all(people, urls, turns, out, problems, ramp_s, lags))
            wall = time.perf_counter() - started
            for c in people:
                problems.extend(_check_history(c, urls[c.index % len(urls)]))
        finally:
            _stop(procs)
            if database_url:
                _drop_database(database_url)
    ok = [t for t in out if t.status != "error"]
    firsts = [t.first_event_ms for t in ok]
    totals = [t.total_ms for t in ok]
    statuses: dict[str, int] = {}
    for t in out:
        statuses[t.status] = statuses.get(t.status, 0) + 1
    return {
        "customers": customers, "turns_per_customer": turns, "workers": workers,
        "run_processes": run_processes, "run_threads": run_threads, "ramp_s": ramp_s,
        "index": str(index), "index_chunks": _chunks(index),
        "backend": "postgres" if database_url else "sqlite", "turns": len(out),
        "errors": len(out) - len(ok), "error_samples": [t.error for t in out if t.error][:5],
        "cross_talk": len(problems), "cross_talk_samples": problems[:5],
        "statuses": statuses, "wall_s": round(wall, 1), "turns_per_s": round(len(out) / wall, 1),
        "first_event_ms": {"p50": round(_percentile(firsts, 0.5), 1),
                           "p95": round(_percentile(firsts, 0.95), 1),
                           "max": round(max(firsts, default=float("nan")), 1)},
        "turn_ms": {"p50": round(_percentile(totals, 0.5), 1),
                    "p95": round(_percentile(totals, 0.95), 1),
                    "mean": round(statistics.fmean(totals), 1) if totals else None,
                    "max": round(max(totals, default=float("nan")), 1)},
        "client_loop_lag_ms": {"p50": round(_percentile(lags, 0.5), 1),
                               "p95": round(_percentile(lags, 0.95), 1),
                               "max": round(max(lags, default=float("nan")), 1)},
        "load_avg_start": load_start,
        "load_avg": os.getloadavg(),
        "slowest_first_events": [
            {"turn": t.n, "kind": t.kind, "worker": t.worker, "ms": round(t.first_event_ms, 1)}
            for t in sorted(ok, key=lambda t: -t.first_event_ms)[:5]],
    }


def _chunks(index: Path) -> int | None:
    path = index / "chunks.jsonl"
    if not path.is_file():
        return None
    with path.open(encoding="utf-8") as lines:
        return sum(1 for _ in lines)


def render(results: list[dict[str, Any]], command: str) -> str:
    """Return the Markdown report."""
    lines = ["# Service benchmark (issue 11)", "",
             f"Command: `{command}`", "",
             "Offline mode, two `csagent serve` workers on loopback ports sharing one backend, "
             "each running its turns in its own turn processes (`run_processes` × "
             "`run_threads` in the raw figures); "
             "customers arrive evenly over the ramp-up (`ramp_s`, default 1 s) and then all "
             "stay concurrent; every customer has its own thread and sends its turns one after "
             "another as SSE turns, alternating between the workers (every fifth turn asks to cancel an order "
             "and the next turn declines the confirmation, on the other worker). Latencies are "
             "client-side: to the first SSE event (`accepted`) and to the `result` event.", "",
             "| backend | customers × turns | turns | errors | cross-talk | first event p50 / p95 "
             "(ms) | turn p50 / p95 (ms) | turns/s | wall (s) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        fe, tm = r["first_event_ms"], r["turn_ms"]
        lines.append(f"| {r['backend']} | {r['customers']} × {r['turns_per_customer']} | "
                     f"{r['turns']} | {r['errors']} | {r['cross_talk']} | {fe['p50']} / "
                     f"{fe['p95']} | {tm['p50']} / {tm['p95']} | {r['turns_per_s']} | "
                     f"{r['wall_s']} |")
    lines += ["", "| target | measured | met |", "|---|---|---|"]
    for r in results:
        fe = r["first_event_ms"]["p95"]
        lines.append(f"| {r['backend']}: zero errors | {r['errors']} | "
                     f"{'yes' if r['errors'] == 0 else 'no'} |")
        lines.append(f"| {r['backend']}: zero cross-talk | {r['cross_talk']} | "
                     f"{'yes' if r['cross_talk'] == 0 else 'no'} |")
        lines.append(f"| {r['backend']}: first SSE event p95 ≤ 50 ms | {fe} ms | "
                     f"{'yes' if fe <= 50 else 'no'} |")
    lines += ["", "Raw figures:", "", "```json",
              json.dumps(results, ensure_ascii=False, indent=2), "```", "",
              "Machine: 2 cores shared with other jobs; load average (1/5/15 min) at the end of "
              "each run is in the raw figures. Turn latency is dominated by queueing: 50 "
              "customers share 2 cores, each turn costs about 50–100 ms of CPU.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--customers", type=int, default=50)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--index", type=Path, default=None,
                        help="knowledge index (default: the data dir's, see `make index`)")
    parser.add_argument("--backend", choices=("postgres", "sqlite", "both"), default="both")
    parser.add_argument("--run-processes", type=int, default=2,
                        help="turn processes per worker (csagent serve --run-processes)")
    parser.add_argument("--run-threads", type=int, default=3,
                        help="turns in flight per turn process (csagent serve --run-threads)")
    parser.add_argument("--ramp-s", type=float, default=1.0,
                        help="customers arrive evenly over this many seconds (0: all at once)")
    parser.add_argument("--report", type=Path, help="write the Markdown report here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request would load the client
    index = args.index or Settings.from_env().resolved_index_dir
    backends = ("postgres", "sqlite") if args.backend == "both" else (args.backend,)
    results = []
    for backend in backends:
        logger.info("running %s: %d customers × %d turns", backend, args.customers, args.turns)
        result = run(args.customers, args.turns, args.workers, index, backend, args.run_threads,
                     args.ramp_s, args.run_processes)
        logger.info("%s", json.dumps(result, ensure_ascii=False))
        results.append(result)
    command = "python -m eval.service_bench " + " ".join(argv or sys.argv[1:])
    report = render(results, command)
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(report, encoding="utf-8")
    sys.stdout.write(report)
    return 0 if all(r["errors"] == 0 and r["cross_talk"] == 0 for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
