"""Calibrate the LLM router's confidence per route (issue 10.3): reliability and a threshold each.

``python -m eval.router_calibration --datasets DIR --suites normal,boundary --out FILE.json``
asks the configured LLM (``CSAGENT_LLM_BASE_URL``/``CSAGENT_LLM_MODEL``) to route every case
that gets past the hard guards, through :class:`strategies.llm.router.LLMRouter` itself with all
route thresholds at 0 (so the returned confidence is the route token's probability from
logprobs, and only the profile contradictions overrule). Each proposal is scored against the
case's expected route:

- normal / distractor: ``answer`` (``tool`` or ``confirm`` as well when the case needs a tool);
- boundary: ``refused`` → ``refuse``; ``handoff`` → ``handoff``; ``refused_or_handoff`` → either.

Per route it reports n, accuracy, mean probability and accuracy per probability bin, and chooses
a threshold: the lowest observed probability ``t`` such that the proposals with p ≥ t are right
at least ``TARGET`` of the time, with at least ``MIN_N`` of them; a route with no such ``t``
gets ``NEVER`` (the rules decide it). Writes ``{"model", "cases", "rows", "routes",
"thresholds"}``.

``--traces REPORT_DIR[,REPORT_DIR…]`` calibrates from the traces of guarded eval runs instead
(no model call): the LLM router's proposal of each turn is in its route decision — taken, with
its probability (``[confidence: logprobs]``), or overruled, with the reason the rules decided
(:class:`strategies.combined.GuardedRouter` appends it, e.g. ``[LLM route answer at p=0.36 <
0.6]``). Turns the guards or the rules decided without the model are left out.
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
import re
import sys
import time
from pathlib import Path
from typing import Any

from eval.runner import load_suite

logger = logging.getLogger(__name__)

TARGET = 0.9  # accuracy the proposals above a route's threshold must reach
MIN_N = 3  # proposals a threshold must rest on
NEVER = 1.01  # threshold of a route that is never reliable enough: the rules decide it
BINS = (0.0, 0.5, 0.8, 0.95, 1.0001)


def gold_routes(suite: str, case: dict[str, Any]) -> set[str]:
    """Return the routes that are right for ``case`` (see the module doc)."""
    if suite == "boundary":
        expected = str(case.get("expected", ""))
        return {"refused": {"refuse"}, "handoff": {"handoff"},
                "refused_or_handoff": {"refuse", "handoff"}}.get(expected, {expected})
    return {"answer", "tool", "confirm"} if case.get("needs_tool") else {"answer"}


def proposed_route(decision: dict[str, Any] | None, overruled: list[str]) -> tuple[str, float | None, str]:
    """Return (route, probability, how) of one router answer (None: overruled by the profile)."""
    if decision is not None:
        return str(decision["route"]), float(decision.get("confidence") or 0.0), "taken"
    reason = overruled[-1] if overruled else ""
    if reason.startswith("LLM refusal"):
        return "refuse", None, reason
    route = reason.split()[2] if reason.startswith("LLM route") else "?"
    return route, None, reason


_OVERRULED_RE = re.compile(r"\[LLM route (\w+) at p=([\d.]+) < [\d.]+\]")
_CONTRADICTION_RE = re.compile(r"\[LLM (?:route (\w+) but|refusal of) [^\]]*\]")


def proposal_from_trace(boundary: dict[str, Any]) -> tuple[str, float | None, str] | None:
    """Return (route, probability, how) of the LLM's proposal recorded in a route decision."""
    reason = str(boundary.get("boundary_reason") or "")
    if "[confidence: logprobs]" in reason:
        return str(boundary.get("route")), float(boundary.get("confidence") or 0.0), "taken"
    if (match := _OVERRULED_RE.search(reason)) is not None:
        return match.group(1), float(match.group(2)), "below threshold"
    if (match := _CONTRADICTION_RE.search(reason)) is not None:
        return match.group(1) or "refuse", None, match.group(0).strip("[]")
    return None


def rows_from_traces(report_dirs: str, datasets: Path) -> list[dict[str, Any]]:
    """Return the calibration rows of guarded eval runs' single-turn cases (see the module doc)."""
    cases = {(suite, str(c["id"])): c for suite in ("normal", "boundary", "distractor")
             for c in load_suite(suite, datasets)[0]}
    rows: list[dict[str, Any]] = []
    for report in report_dirs.split(","):
        for path in glob.glob(f"{report}/data/traces/*.jsonl"):
            for line in Path(path).read_text(encoding="utf-8").splitlines():
                trace = json.loads(line)
                _, _, suite, case_id = str(trace.get("thread_id", "")).split("-", 3)
                found = proposal_from_trace(trace.get("boundary") or {})
                case = cases.get((suite, case_id))
                if found is None or case is None:
                    continue
                route, p, how = found
                rows.append({"id": case_id, "suite": suite, "route": route, "p": p, "how": how,
                             "correct": route in gold_routes(suite, case)})
    return rows


def threshold_for(rows: list[dict[str, Any]]) -> float:
    """Return the route's threshold (the lowest reliable probability, else ``NEVER``)."""
    scored = [(r["p"], r["correct"]) for r in rows if r["p"] is not None]
    for t in sorted({p for p, _ in scored}):
        above = [c for p, c in scored if p >= t]  # every proposal at t counts, ties included
        if len(above) >= MIN_N and sum(above) / len(above) >= TARGET:
            return round(t, 4)
    return NEVER


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the per-route table: n, accuracy, mean p, per-bin accuracy, threshold."""
    routes: dict[str, Any] = {}
    for route in sorted({r["route"] for r in rows}):
        mine = [r for r in rows if r["route"] == route]
        probs = [r["p"] for r in mine if r["p"] is not None]
        bins = []
        for low, high in zip(BINS, BINS[1:], strict=False):
            inside = [r for r in mine if r["p"] is not None and low <= r["p"] < high]
            bins.append({"bin": f"[{low:.2f}, {min(high, 1.0):.2f}]", "n": len(inside),
                         "accuracy": round(sum(r["correct"] for r in inside) / len(inside), 3)
                         if inside else None})
        routes[route] = {"n": len(mine), "correct": sum(r["correct"] for r in mine),
                         "accuracy": round(sum(r["correct"] for r in mine) / len(mine), 3),
                         "below_threshold": sum(r["how"] == "below threshold" for r in mine),
                         "overruled_by_profile": sum(r["how"] not in ("taken", "below threshold")
                                                     for r in mine),
                         "mean_p": round(sum(probs) / len(probs), 3) if probs else None,
                         "bins": bins, "threshold": threshold_for(mine)}
    return routes


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Route the cases and return the calibration (see the module doc)."""
    from contracts.question import empty_question
    from csagent.config import Settings
    from csagent.llm import build_chat_model, llm_turn
    from shop.decls import REGISTRY
    from strategies.llm.router import LLMRouter
    from strategies.protocols import StepFailed, Turn
    from strategies.rules.profiles import load_profile
    from strategies.rules.router import guard_decision
    from strategies.rules.tools import RulesToolPlanner

    settings = Settings.from_env()
    llm = build_chat_model(settings)
    if llm is None:
        raise SystemExit("router_calibration: set CSAGENT_LLM_BASE_URL and CSAGENT_LLM_MODEL")
    profile: dict[str, Any] = dict(load_profile(settings.domain_profile))
    profile["thresholds"] = {route: 0.0 for route in profile.get("thresholds", {})}
    router = LLMRouter(llm, RulesToolPlanner())
    rows: list[dict[str, Any]] = []
    for suite in args.suites.split(","):
        cases, _ = load_suite(suite, args.datasets)
        for case in cases[::args.every]:
            turn = Turn(question=empty_question(case["question"]), profile=profile,  # type: ignore[arg-type]
                        tools=tuple(REGISTRY.specs()))
            if guard_decision(turn) is not None:
                continue  # the hard guards decide: the model is never asked
            started = time.monotonic()
            try:
                with llm_turn(None) as meter:
                    decision = router.route(turn)
            except StepFailed as failed:
                logger.warning("%s: %s", case["id"], failed.reason)
                continue
            if meter.calls == 0:
                continue  # the rules decided without asking the model
            route, p, how = proposed_route(dict(decision) if decision else None, router.overruled)
            rows.append({"id": case["id"], "suite": suite, "route": route, "p": p, "how": how,
                         "correct": route in gold_routes(suite, case),
                         "s": round(time.monotonic() - started, 1)})
            logger.info("%s %s p=%s %s", case["id"], route, p, rows[-1]["correct"])
    routes = summarize(rows)
    return {"model": settings.llm_model, "base_url": settings.llm_base_url, "target": TARGET,
            "min_n": MIN_N, "cases": len(rows), "rows": rows, "routes": routes,
            "thresholds": {r: v["threshold"] for r, v in routes.items()}}


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=Path("eval/datasets"))
    parser.add_argument("--suites", default="normal,boundary")
    parser.add_argument("--every", type=int, default=1, help="take every N-th case of each suite")
    parser.add_argument("--traces", default=None, metavar="REPORT_DIR[,REPORT_DIR…]",
                        help="calibrate from guarded eval runs' traces (no model call)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.traces:
        rows = rows_from_traces(args.traces, args.datasets)
        routes = summarize(rows)
        result = {"source": args.traces, "target": TARGET, "min_n": MIN_N, "cases": len(rows),
                  "rows": rows, "routes": routes, "thresholds": {r: v["threshold"] for r, v in routes.items()}}
    else:
        result = run(args)
    args.out.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    sys.stderr.write(json.dumps(result["routes"], ensure_ascii=False, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
