"""``csagent replay LOGS.jsonl --out RESULTS.jsonl``: answer logged conversations again, in bulk.

One conversation per input line in, one line per conversation out (each agent turn's status,
answer, citations, verification and trace id beside the logged human reply). Output lines are
appended atomically; ``--resume`` continues a killed run without losing or duplicating a
conversation. Write actions run against a scratch copy of the demo shop, never your data (in a
scratch folder beside ``--out``; a killed run's folder is removed by the next run). Exit status
0, or 1 when some input lines were bad (reported with their line number and skipped).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from pathlib import Path

from csagent.errors import UsageError

HELP = "replay conversation logs (JSONL) through the agent; atomic, resumable output"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the command's arguments."""
    parser.add_argument("logs", type=Path, metavar="LOGS.jsonl", help="one conversation per line")
    parser.add_argument("--out", type=Path, required=True, metavar="RESULTS.jsonl",
                        help="results file (one line per conversation, appended)")
    parser.add_argument("--index", type=Path, default=None, metavar="DIR",
                        help="knowledge index to use (default: the configured one)")
    parser.add_argument("--concurrency", type=int, default=1, metavar="N",
                        help="worker threads sharing one agent (default 1)")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted run: skip conversations already in --out")
    parser.add_argument("--summary-json", type=Path, default=None, metavar="FILE",
                        help="also write the summary as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    """Replay the logs; return 0, or 1 when some input lines were bad."""
    from langgraph.checkpoint.memory import InMemorySaver

    from csagent import tracing
    from csagent.api import CSAgent
    from csagent.config import Settings
    from csagent.replay import make_scratch_dir, prepare_output, replay_file

    # Check the cheap things before loading the index and models.
    if args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if not args.logs.is_file():
        raise UsageError(f"cannot read {args.logs}: no such file")
    if args.logs.resolve() == args.out.resolve():
        raise UsageError("--out must not be the input file")
    if not args.resume:
        prepare_output(args.out, resume=False)
    settings = Settings.from_env()  # a bad setting stops here, before any scratch is made
    if settings.tools:
        sys.stderr.write(f"csagent replay: note: CSAGENT_TOOLS={settings.tools} is ignored; replayed "
                         "write actions run on a scratch copy of the demo shop, never a real backend\n")
    scratch = make_scratch_dir(args.out)
    try:
        settings = dataclasses.replace(  # the demo backend on a scratch copy: no real writes
            settings.with_overrides(index_dir=args.index or settings.resolved_index_dir,
                                    shop_db=scratch / "shop.sqlite"), tools=None)
        with CSAgent(settings, checkpointer=InMemorySaver()) as agent:
            summary = replay_file(agent, args.logs, args.out, concurrency=args.concurrency,
                                  resume=args.resume, progress=not args.no_progress)
        tracing.flush()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for bad in summary.bad_lines:
        sys.stderr.write(f"{args.logs}: {bad}; skipped\n")
    for note in summary.repaired_lines:
        sys.stderr.write(f"{args.logs}: {note}; replayed\n")
    sys.stdout.write(summary.render())
    if args.summary_json is not None:
        try:
            args.summary_json.write_text(
                json.dumps(summary.to_json(), ensure_ascii=False, indent=1) + "\n",
                encoding="utf-8", errors="backslashreplace")
        except OSError as exc:
            raise UsageError(f"cannot write --summary-json {args.summary_json}: {exc}") from None
    return 1 if summary.bad_lines else 0
