"""Compare eval runs on the cases they share: guards on / off / offline (issue 10.5).

``python -m eval.llm_compare NAME=results.json [NAME=results.json ...]`` prints a Markdown
table over the case ids present in every run (so a run cut short is compared on what it
finished). ``NAME=a.json+b.json`` joins the parts of one run (a case of a later part replaces
the same case of an earlier one: a re-run of the turns an interrupted run lost). Columns: hallucination, answer accuracy, correct refusal, answerable, handoff, turn latency
p50/p95 and LLM calls per answered turn (p50), each with its numerator and denominator.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from eval import metrics as m


def _load(path: str) -> list[dict[str, Any]]:
    file = Path(path)
    data = json.loads((file / "results.json" if file.is_dir() else file).read_text(encoding="utf-8"))
    return [c for c in data["cases"] if c.get("suite") in ("normal", "boundary", "distractor")]


def _pct(triple: tuple[float, int, int]) -> str:
    rate, num, den = triple
    return f"{rate * 100:.1f} % ({num}/{den})" if den else "–"


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def row(name: str, cases: list[dict[str, Any]]) -> list[str]:
    """Return one table row for a run's cases."""
    latency = [float(c.get("latency_ms") or 0.0) / 1000 for c in cases]
    calls = [int((c.get("llm") or {}).get("calls") or 0) for c in cases if c.get("status") == "answered"]
    p50, p95 = _quantile(latency, 0.5), _quantile(latency, 0.95)
    calls_p50 = _quantile([float(x) for x in calls], 0.5)
    return [name, str(len(cases)), _pct(m.hallucination_rate(cases)), _pct(m.answer_accuracy(cases)),
            _pct(m.refusal_rate(cases)), _pct(m.answerable_rate(cases)), _pct(m.handoff_rate(cases)),
            f"{p50:.1f} / {p95:.1f}" if p50 is not None and p95 is not None else "–",
            f"{calls_p50:.0f}" if calls_p50 is not None else "–"]


def table(runs: dict[str, list[dict[str, Any]]]) -> str:
    """Return the Markdown table over the shared case ids."""
    shared = set.intersection(*({(c["suite"], c["id"]) for c in cases} for cases in runs.values()))
    head = ["run", "turns", "hallucination", "accuracy", "correct refusal", "answerable", "handoff",
            "latency p50 / p95 (s)", "LLM calls / answered turn (p50)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, cases in runs.items():
        mine = [c for c in cases if (c["suite"], c["id"]) in shared]
        lines.append("| " + " | ".join(row(name, mine)) + " |")
    return "\n".join(lines) + "\n"


def load_run(paths: str) -> list[dict[str, Any]]:
    """Return the cases of ``a+b+…``: later parts replace earlier ones case by case."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for path in paths.split("+"):
        merged.update({(c["suite"], c["id"]): c for c in _load(path)})
    return list(merged.values())


def main(argv: list[str]) -> int:
    """Print the table for ``NAME=PATH[+PATH…]`` arguments."""
    runs = {spec.split("=", 1)[0]: load_run(spec.split("=", 1)[1]) for spec in argv}
    sys.stdout.write(table(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
