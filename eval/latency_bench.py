"""Offline latency and throughput benchmark (``python -m eval.latency_bench [--report DIR]``).

Measures, on the configured (demo) knowledge index with no LLM:

1. one turn through the whole graph: p50/p95 per node and in total over a fixed mix of
   questions (policy, order/logistics tools, boundary), after a warm-up that is not counted;
2. the process peak RSS (``ru_maxrss``) after everything ran;
3. batch replay throughput on 1,000 synthetic single-turn conversations (``--conversations``),
   written by :func:`write_synthetic_log` (also usable alone: ``--write-log FILE``).

Targets (issue 4): p50 ≤ 150 ms, p95 ≤ 400 ms per turn; peak RSS ≤ 1.5 GB; replay ≥ 10 turns/s.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from eval.metrics import latency_summary

logger = logging.getLogger(__name__)

TARGETS = {"turn_p50_ms": 150.0, "turn_p95_ms": 400.0, "peak_rss_mb": 1536.0, "replay_turns_per_s": 10.0}
USERS = ("u1001", "u1002", "u1003", "u1004", "u1005")
QUESTIONS = (
    "七天无理由退货的运费谁承担？",
    "退款多久能到账？",
    "Plus会员有什么权益？",
    "新疆地区包邮吗？",
    "优惠券可以叠加使用吗？",
    "价格保护怎么申请？",
    "下单后还能改地址吗？",
    "换货流程是什么？",
    "发票怎么开？",
    "我的订单到哪了？",
    "帮我查一下最近的订单",
    "订单什么时候发货？",
    "商品坏了怎么办？",
    "支持哪些支付方式？",
    "你们和别家比哪个便宜？",
    "我吃了头孢能喝酒吗？",
    "帮我推荐一款500元以内的耳机",
    "签收了发现少件怎么处理？",
    "花呗分期退款怎么退？",
    "会员积分怎么用？",
)


def peak_rss_mb() -> float:
    """Return this process's peak resident set size in MiB (Linux ``ru_maxrss`` is KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def write_synthetic_log(path: Path, n: int = 1000, *, seed: int = 7) -> Path:
    """Write ``n`` single-turn conversations (demo users, mixed questions) as replay input.

    Args:
        path: Output JSONL path.
        n: Number of conversations.
        seed: Random seed (the file is deterministic for a seed).

    Returns:
        ``path``.

    """
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            question = rng.choice(QUESTIONS)
            record = {"conversation_id": f"syn-{i:05d}", "user_id": rng.choice(USERS),
                      "turns": [{"role": "user", "content": question},
                                {"role": "assistant", "content": "（人工客服的原始回复）"}]}
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def bench_turns(agent: Any, *, rounds: int = 5, warmup: int = 1) -> dict[str, Any]:
    """Time single turns (fresh thread each) over :data:`QUESTIONS`; return the latency summary."""
    samples: list[dict[str, float]] = []
    wall: list[float] = []
    statuses: dict[str, int] = {}
    for r in range(warmup + rounds):
        for i, question in enumerate(QUESTIONS):
            started = time.perf_counter()
            result = agent.ask(question, user_id=USERS[i % len(USERS)], thread_id=f"bench-{r}-{i}")
            elapsed = (time.perf_counter() - started) * 1000
            if r < warmup:
                continue
            samples.append(dict(result.node_latency_ms or {}))
            wall.append(elapsed)
            statuses[result.status] = statuses.get(result.status, 0) + 1
    per_node = latency_summary(samples)
    wall_summary = latency_summary({"turn": ms} for ms in wall)["turn"]
    return {"turns": len(wall), "statuses": statuses, "per_node_ms": per_node,
            "turn_wall_ms": wall_summary}


def bench_replay(agent: Any, workdir: Path, *, conversations: int, concurrency: int) -> dict[str, Any]:
    """Replay ``conversations`` synthetic single-turn conversations; return the summary."""
    from eval.replay import replay_file

    logs = write_synthetic_log(workdir / "synthetic_logs.jsonl", conversations)
    out = workdir / f"replay_results_c{concurrency}.jsonl"
    out.unlink(missing_ok=True)
    summary = replay_file(agent, logs, out, concurrency=concurrency, progress=False)
    data = summary.to_json()
    data["concurrency"] = concurrency
    return data


def run_bench(*, index_dir: Path | None, conversations: int, rounds: int,
              concurrency: list[int]) -> dict[str, Any]:
    """Run the whole benchmark offline; return the results dict."""
    from langgraph.checkpoint.memory import InMemorySaver

    from csagent.api import CSAgent
    from csagent.config import Settings

    scratch = Path(tempfile.mkdtemp(prefix="csagent-bench-"))
    try:
        base = Settings.from_env()
        settings = dataclasses.replace(  # offline by definition: no LLM endpoint
            base.with_overrides(data_dir=scratch, index_dir=index_dir or base.resolved_index_dir,
                                shop_db=scratch / "shop.sqlite"),
            llm_base_url=None, llm_model=None)
        load_started = time.perf_counter()
        with CSAgent(settings, checkpointer=InMemorySaver()) as agent:
            load_s = time.perf_counter() - load_started
            turns = bench_turns(agent, rounds=rounds)
            replays = [bench_replay(agent, scratch, conversations=conversations, concurrency=c)
                       for c in concurrency]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    total = turns["per_node_ms"].get("total", {})
    best_tps = max((r["turns_per_second"] for r in replays), default=0.0)
    rss = peak_rss_mb()
    checks = {
        "turn_p50_ms": (total.get("p50"), total.get("p50", 1e9) <= TARGETS["turn_p50_ms"]),
        "turn_p95_ms": (total.get("p95"), total.get("p95", 1e9) <= TARGETS["turn_p95_ms"]),
        "peak_rss_mb": (rss, rss <= TARGETS["peak_rss_mb"]),
        "replay_turns_per_s": (best_tps, best_tps >= TARGETS["replay_turns_per_s"]),
    }
    return {
        "mode": "offline", "index_dir": str(settings.resolved_index_dir),
        "load_seconds": round(load_s, 3), "turns": turns, "replay": replays, "peak_rss_mb": rss,
        "targets": {k: {"target": TARGETS[k], "value": v, "met": ok} for k, (v, ok) in checks.items()},
    }


def render(results: dict[str, Any]) -> str:
    """Render the benchmark results as Markdown."""
    turns = results["turns"]
    out = ["# csagent latency benchmark (offline)", "",
           f"Index: `{results['index_dir']}`; dependencies loaded in {results['load_seconds']} s; "
           f"{turns['turns']} timed turns ({turns['statuses']}).", "",
           "| check | value | target | result |", "|---|---|---|---|"]
    for key, t in results["targets"].items():
        op = "≥" if key == "replay_turns_per_s" else "≤"
        out.append(f"| {key} | {t['value']} | {op} {t['target']} | {'PASS' if t['met'] else 'FAIL'} |")
    out += ["", "## Per node (ms, sum of node times per turn = total)", "",
            "| node | p50 | p95 | mean | n |", "|---|---|---|---|---|"]
    for node, v in turns["per_node_ms"].items():
        out.append(f"| {node} | {v['p50']:.2f} | {v['p95']:.2f} | {v['mean']:.2f} | {v['n']} |")
    w = turns["turn_wall_ms"]
    out += ["", f"Wall time per `CSAgent.ask` (incl. tracing and state read): p50 {w['p50']:.1f} ms, "
            f"p95 {w['p95']:.1f} ms.", "", "## Replay throughput", "",
            "| conversations | concurrency | turns/s | turn p50 ms | turn p95 ms | statuses |",
            "|---|---|---|---|---|---|"]
    for r in results["replay"]:
        lat = r.get("turn_latency_ms") or {}
        out.append(f"| {r['conversations']} | {r['concurrency']} | {r['turns_per_second']} | "
                   f"{lat.get('p50', 0):.1f} | {lat.get('p95', 0):.1f} | {r['status_mix']} |")
    out += ["", f"Peak RSS of the whole benchmark process: {results['peak_rss_mb']} MiB."]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m eval.latency_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, default=None, metavar="DIR",
                        help="write latency.json and latency.md here")
    parser.add_argument("--index", type=Path, default=None, metavar="DIR", help="knowledge index")
    parser.add_argument("--conversations", type=int, default=1000, help="synthetic replay size")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds over the question mix")
    parser.add_argument("--concurrency", default="1,2", help="replay worker counts, comma list")
    parser.add_argument("--write-log", type=Path, default=None, metavar="FILE",
                        help="only write the synthetic replay log (--conversations lines) and exit")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from csagent.cli import configure_process
    from csagent.errors import CsagentError

    configure_process()
    if args.write_log is not None:
        write_synthetic_log(args.write_log, args.conversations)
        sys.stderr.write(f"wrote {args.conversations} conversations to {args.write_log}\n")
        return 0
    try:
        workers = [int(c) for c in args.concurrency.split(",") if c.strip()]
        if not workers or min(workers) < 1 or args.conversations < 1 or args.rounds < 1:
            raise ValueError
    except ValueError:
        sys.stderr.write("latency_bench: --concurrency, --conversations and --rounds must be positive\n")
        return 2
    try:
        results = run_bench(index_dir=args.index, conversations=args.conversations,
                            rounds=args.rounds, concurrency=workers)
    except CsagentError as exc:
        sys.stderr.write(f"latency_bench: {exc}\n")
        return exc.exit_code
    text = render(results)
    sys.stdout.write(text)
    if args.report is not None:
        args.report.mkdir(parents=True, exist_ok=True)
        (args.report / "latency.json").write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n",
                                                  encoding="utf-8")
        (args.report / "latency.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
