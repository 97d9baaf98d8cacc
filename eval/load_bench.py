"""Load benchmark through the Python API (``python -m eval.load_bench [--report DIR]``).

``--threads`` workers (default 20) each run ``--turns`` turns (default 50) against ONE shared
:class:`csagent.api.CSAgent` with its default SQLite conversation memory, as a chat backend
would. Worker ``i`` is demo customer ``u100{i % 5 + 1}``; most turns go to the worker's own
threads, and about one in five goes to a *shared* thread id that workers of different users
race to start (``load-shared-<k>``). What is checked (the issue 9 targets):

- **errors**: any exception other than the documented refusal of a thread owned by another
  user (:class:`csagent.errors.UsageError`), any turn ending ``internal_error``/``llm_error``,
  any status outside ``answered | refused | handoff | needs_confirmation``, an empty answer;
- **cross-talk**: an answer (or interrupt payload) naming an order id of another user, or a
  shared thread answered for a user who does not own it.

The latency distribution (per turn kind and overall), throughput and the counts go to
``load.json`` and ``load.md``. The shop database is a scratch copy; write actions are always
declined (「不用了」), so every run starts from the same data. A benchmark, not a timed test:
run it alone on the machine (``python -m eval.load_bench --report docs/results``).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from csagent.replay import latency_summary, percentile

logger = logging.getLogger(__name__)

USERS = ("u1001", "u1002", "u1003", "u1004", "u1005")
STATUSES = {"answered", "refused", "handoff", "needs_confirmation"}
ERROR_REASONS = {"internal_error", "llm_error"}
ORDER_ID_RE = re.compile(r"SO\d{13}")
SHARED_EVERY = 5  # one turn in five goes to a shared thread id
SHARED_THREADS = 4
POLICY = ("七天无理由退货的运费谁承担？", "退款多久能到账？", "Plus会员有什么权益？", "新疆地区包邮吗？",
          "发票怎么开？", "优惠券可以叠加使用吗？")
KINDS = ("policy", "orders", "order", "logistics", "refund", "shared")


@dataclass
class TurnRecord:
    """One measured turn."""

    worker: int
    user: str
    thread: str
    kind: str
    ms: float
    status: str
    problem: str | None = None
    crosstalk: list[str] = field(default_factory=list)


def owners() -> dict[str, str]:
    """Return order id → owning user, from the demo shop's seed data."""
    from shop.seed import ORDERS

    return {str(o["id"] if "id" in o else o["order_id"]): str(o["user_id"]) for o in ORDERS}


def _messages(user: str, own: list[str], rng: Any) -> dict[str, str]:
    order = rng.choice(own) if own else "SO2026112000102"
    return {"policy": rng.choice(POLICY), "orders": "我最近有哪些订单？",
            "order": f"订单{order}现在是什么状态？", "logistics": f"{order}的快递到哪了？",
            "refund": f"订单{order}我不想要了，帮我申请退款", "shared": "我最近有哪些订单？"}


def _crosstalk(text: str, user: str, mentioned: set[str], table: dict[str, str]) -> list[str]:
    """Return order ids in ``text`` owned by someone else (and not typed by the user)."""
    return sorted({oid for oid in ORDER_ID_RE.findall(text)
                   if oid not in mentioned and table.get(oid, user) != user})


def _payload_text(result: Any) -> str:
    parts = [str(result.answer or "")]
    if result.interrupt:
        parts.append(json.dumps(result.interrupt, ensure_ascii=False))
    return "\n".join(parts)


def _problem(result: Any) -> str | None:
    if result.status not in STATUSES:
        return f"status {result.status!r}"
    if result.fail_reason in ERROR_REASONS:
        return f"fail_reason {result.fail_reason}"
    if not str(result.answer or "").strip():
        return "empty answer"
    return None


def run_worker(agent: Any, worker: int, turns: int, table: dict[str, str],
               shared_owner: dict[str, str], lock: threading.Lock) -> list[TurnRecord]:
    """Run one worker's turns; return a record per turn (never raises)."""
    import random

    from csagent.errors import UsageError

    rng = random.Random(worker)
    user = USERS[worker % len(USERS)]
    own = sorted(oid for oid, u in table.items() if u == user)
    records: list[TurnRecord] = []
    for n in range(turns):
        shared = n % SHARED_EVERY == worker % SHARED_EVERY
        kind = "shared" if shared else KINDS[n % (len(KINDS) - 1)]
        thread = f"load-shared-{n % SHARED_THREADS}" if shared else f"load-w{worker}-t{n // 10}"
        text = _messages(user, own, rng)[kind]
        started = time.perf_counter()
        record = TurnRecord(worker, user, thread, kind, 0.0, "")
        try:
            result = agent.ask(text, user_id=user, thread_id=thread)
            if result.status == "needs_confirmation":
                result = agent.resume("不用了", user_id=user, thread_id=thread)
            record.status = result.status
            record.problem = _problem(result)
            record.crosstalk = _crosstalk(_payload_text(result), user, set(ORDER_ID_RE.findall(text)),
                                          table)
            if shared:
                with lock:
                    first = shared_owner.setdefault(thread, user)
                if first != user:
                    record.crosstalk.append(f"thread {thread} of {first} answered for {user}")
        except UsageError as exc:  # the documented refusal: the thread belongs to another user
            record.status = "rejected"
            if not shared or "another user" not in str(exc):
                record.problem = f"UsageError: {exc}"
        except Exception as exc:  # noqa: BLE001 - counted, the benchmark goes on
            record.status = "exception"
            record.problem = f"{type(exc).__name__}: {exc}"
        record.ms = (time.perf_counter() - started) * 1000
        records.append(record)
    return records


def run_bench(*, index_dir: Path | None, threads: int, turns: int) -> dict[str, Any]:
    """Run the benchmark on a scratch data dir; return the results dict."""
    import dataclasses

    from csagent.api import CSAgent
    from csagent.config import Settings

    table = owners()
    scratch = Path(tempfile.mkdtemp(prefix="csagent-load-"))
    try:
        base = Settings.from_env()
        settings = dataclasses.replace(
            base.with_overrides(data_dir=scratch, index_dir=index_dir or base.resolved_index_dir,
                                shop_db=scratch / "shop.sqlite"),
            llm_base_url=None, llm_model=None, tools=None)  # demo shop on a scratch copy
        with CSAgent(settings) as agent:  # default SQLite checkpointer, shared by all workers
            agent.ask("你好", user_id=USERS[0], thread_id="load-warmup")
            shared_owner: dict[str, str] = {}
            lock = threading.Lock()
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="load") as pool:
                futures = [pool.submit(run_worker, agent, w, turns, table, shared_owner, lock)
                           for w in range(threads)]
                records = [r for f in futures for r in f.result()]
            seconds = time.perf_counter() - started
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return summarize(records, seconds, threads=threads, turns=turns,
                     index_dir=str(settings.resolved_index_dir))


def summarize(records: list[TurnRecord], seconds: float, **meta: Any) -> dict[str, Any]:
    """Return the counts, problems and latency distribution of a run."""
    ms = [r.ms for r in records]
    by_kind = latency_summary({r.kind: r.ms} for r in records)
    by_kind.pop("total", None)
    problems = [f"w{r.worker} {r.user} {r.thread} {r.kind}: {r.problem}" for r in records if r.problem]
    crosstalk = [f"w{r.worker} {r.user} {r.thread} {r.kind}: {c}" for r in records for c in r.crosstalk]
    return {
        **meta, "turns_total": len(records), "seconds": round(seconds, 2),
        "turns_per_second": round(len(records) / seconds, 2) if seconds else 0.0,
        "statuses": dict(Counter(r.status for r in records)),
        "errors": len(problems), "error_examples": problems[:20],
        "crosstalk": len(crosstalk), "crosstalk_examples": crosstalk[:20],
        "shared_turns": sum(r.kind == "shared" for r in records),
        "rejected_foreign_thread": sum(r.status == "rejected" for r in records),
        "latency_ms": {"p50": round(percentile(ms, 50), 1), "p90": round(percentile(ms, 90), 1),
                       "p95": round(percentile(ms, 95), 1), "p99": round(percentile(ms, 99), 1),
                       "max": round(max(ms, default=0.0), 1),
                       "mean": round(sum(ms) / len(ms), 1) if ms else 0.0},
        "latency_by_kind_ms": by_kind,
    }


def render(results: dict[str, Any]) -> str:
    """Render the results as Markdown."""
    lat = results["latency_ms"]
    ok = results["errors"] == 0 and results["crosstalk"] == 0
    out = ["# csagent load benchmark (Python API, offline)", "",
           f"{results['threads']} threads × {results['turns']} turns = {results['turns_total']} turns "
           f"through one shared `CSAgent` (SQLite conversation memory), index "
           f"`{results['index_dir']}`; {results['seconds']} s, {results['turns_per_second']} turns/s.",
           "", "| check | value | target | result |", "|---|---|---|---|",
           f"| errors | {results['errors']} | 0 | {'PASS' if results['errors'] == 0 else 'FAIL'} |",
           f"| cross-talk | {results['crosstalk']} | 0 | "
           f"{'PASS' if results['crosstalk'] == 0 else 'FAIL'} |", "",
           f"Statuses: {results['statuses']}. Shared-thread turns: {results['shared_turns']}, of which "
           f"{results['rejected_foreign_thread']} were refused because another user owned the "
           "thread (the documented `UsageError`).", "",
           "## Latency per turn (ms, wall time of `ask`, plus `resume` for a declined action)", "",
           "| p50 | p90 | p95 | p99 | max | mean |", "|---|---|---|---|---|---|",
           f"| {lat['p50']} | {lat['p90']} | {lat['p95']} | {lat['p99']} | {lat['max']} | {lat['mean']} |",
           "", "| kind | p50 | p95 | mean | n |", "|---|---|---|---|---|"]
    for kind, v in results["latency_by_kind_ms"].items():
        out.append(f"| {kind} | {v['p50']:.1f} | {v['p95']:.1f} | {v['mean']:.1f} | {v['n']} |")
    for title, key in (("Errors", "error_examples"), ("Cross-talk", "crosstalk_examples")):
        if results[key]:
            out += ["", f"## {title} (first 20)", ""] + [f"- {line}" for line in results[key]]
    out += ["", "Overall: " + ("PASS" if ok else "FAIL") + ". Reproduce (alone on the machine): "
            "`python -m eval.load_bench --report docs/results`."]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: exit 0 when there were no errors and no cross-talk, else 1."""
    parser = argparse.ArgumentParser(prog="python -m eval.load_bench",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--turns", type=int, default=50, help="turns per thread")
    parser.add_argument("--index", type=Path, default=None, metavar="DIR", help="knowledge index")
    parser.add_argument("--report", type=Path, default=None, metavar="DIR",
                        help="write load.json and load.md here")
    args = parser.parse_args(argv)
    if args.threads < 1 or args.turns < 1:
        sys.stderr.write("load_bench: --threads and --turns must be positive\n")
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from csagent.cli import configure_process
    from csagent.errors import CsagentError

    configure_process()
    try:
        results = run_bench(index_dir=args.index, threads=args.threads, turns=args.turns)
    except CsagentError as exc:
        sys.stderr.write(f"load_bench: {exc}\n")
        return exc.exit_code
    text = render(results)
    sys.stdout.write(text)
    if args.report is not None:
        args.report.mkdir(parents=True, exist_ok=True)
        (args.report / "load.json").write_text(json.dumps(results, ensure_ascii=False, indent=1)
                                               + "\n", encoding="utf-8")
        (args.report / "load.md").write_text(text, encoding="utf-8")
    return 0 if results["errors"] == 0 and results["crosstalk"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
