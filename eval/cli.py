"""``csagent eval``: run the evaluation suites through the real graph and write a report.

Writes ``results.json`` (top-level ``"metrics"``: hallucination_rate, answer_accuracy,
refusal_rate, answerable_rate, verifier_recall, verifier_precision, citation_precision,
handoff_rate, each a fraction; plus per-case results), ``summary.md`` and a self-contained
``report.html`` into ``--report DIR``; prints the summary table to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from csagent.errors import UsageError

LLM_UNUSED_EXIT = 4  # an LLM run (CSAGENT_LLM_* set) in which no LLM call succeeded
HELP = "evaluate the agent on the eval suites (metrics, targets, HTML report, --compare)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the command's arguments."""
    parser.add_argument("--suite", default="all",
                        help="comma list of normal,boundary,distractor,verifier,multiturn,"
                             "leave-gold-out,swap,foreign or all (= all but foreign)")
    parser.add_argument("--report", type=Path, default=None, metavar="DIR",
                        help="write results.json, summary.md and report.html here")
    parser.add_argument("--index", type=Path, default=None, metavar="DIR",
                        help="knowledge index to use (default: the configured one)")
    parser.add_argument("--compare", type=Path, default=None, metavar="OTHER_RESULTS",
                        help="a previous results.json (or its folder): show regressions/improvements")
    parser.add_argument("--limit", type=int, default=None, metavar="N",
                        help="run at most N cases per suite")
    parser.add_argument("--datasets", type=Path, default=None, metavar="DIR",
                        help="folder of the suite files (default: eval/datasets)")
    parser.add_argument("--foreign", type=Path, default=None, metavar="DIR",
                        help="folder of the foreign suite (kb/ + questions.jsonl; default: "
                             "eval/datasets/foreign)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--guards", choices=("on", "off"), default="on",  # [llm]
                        help="off: naive RAG with the same LLM (retrieve + plain prompt; no "
                             "router, verifier or reflection) for a guards on/off comparison")


def _load_other(path: Path) -> dict[str, Any]:
    if path.is_dir():
        path = path / "results.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read --compare results {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise UsageError(f"--compare {path} is not a csagent results.json (no 'cases' list)")
    return data


def run(args: argparse.Namespace) -> int:
    """Run the evaluation; return 0 (the report says which targets were missed).

    Returns 4 when the run was configured for an LLM but no LLM call succeeded.
    """
    from eval import runner
    from eval.report import render_summary, write_report

    suites = runner.parse_suites(args.suite)
    other = _load_other(args.compare) if args.compare else None
    kwargs: dict[str, Any] = {}
    if args.datasets is not None:
        kwargs["datasets_dir"] = args.datasets
    foreign = getattr(args, "foreign", None)
    if foreign is not None:
        if not (foreign / "questions.jsonl").is_file() or not (foreign / "kb").is_dir():
            raise UsageError(f"--foreign {foreign}: needs kb/ and questions.jsonl")
        kwargs["foreign_dir"] = foreign
    results = runner.run_eval(suites=suites, report_dir=args.report, index_dir=args.index,
                              limit=args.limit, progress=not args.no_progress,
                              guards=args.guards == "on", **kwargs)
    comparison = runner.compare_results(results, other) if other is not None else None
    if args.report is not None:
        paths = write_report(results, args.report, comparison)
        sys.stderr.write(f"wrote {paths['results']}, {paths['summary']}, {paths['html']}\n")
    sys.stdout.write(render_summary(results, comparison, max_failing=20))
    usage = (results.get("run") or {}).get("llm_usage")
    if usage is not None and not usage.get("ok"):  # [llm] an "LLM" run that never used the LLM
        sys.stderr.write(f"csagent eval: mode llm but no successful LLM call in {usage['turns']} "
                         f"turns ({usage['failed']} failed calls); the results are offline ones\n")
        return LLM_UNUSED_EXIT
    return 0
