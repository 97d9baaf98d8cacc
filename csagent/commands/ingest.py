"""``csagent ingest PATH... [--index DIR] [--reset]``: build or update the knowledge index.

Every chunk is screened (:mod:`strategies.rules.hygiene`): passages with instructions addressed
to the assistant, credential requests or contact points not on the allow-list are listed on
stderr (``flagged …`` lines; ``"flagged"`` in ``--json``). They stay in the index, and answers
never relay them.
"""

from __future__ import annotations

import argparse
import json
import sys

HELP = "ingest .md/.txt/.jsonl documents into the knowledge index (incremental)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the command's arguments."""
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to ingest")
    parser.add_argument("--index", metavar="DIR", help="index dir (default: the data dir's index)")
    parser.add_argument("--reset", action="store_true", help="rebuild the index from scratch")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    """Ingest the paths; return 0 (skipped files are reported on stderr, not an error)."""
    from csagent.config import Settings
    from knowledge.config import KnowledgeConfig
    from knowledge.ingest import ingest_paths
    from strategies.rules import hygiene

    settings = Settings.from_env(index_dir=args.index)
    allow = hygiene.load_allowlist(settings.data_dir)
    report = ingest_paths(
        args.paths,
        settings.resolved_index_dir,
        config=KnowledgeConfig.from_settings(settings),
        reset=args.reset,
        progress=not args.no_progress and sys.stderr.isatty(),
        screen=lambda text: hygiene.scan(text, allow),
    )
    if args.json:
        sys.stdout.write(json.dumps(report.to_json(), ensure_ascii=False) + "\n")
    else:
        head, *skipped = report.summary().split("\n")
        sys.stdout.write(head + "\n")
        for line in skipped:
            sys.stderr.write(line + "\n")
    return 0
