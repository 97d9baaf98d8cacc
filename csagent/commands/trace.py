"""``csagent trace ID``: print one turn's local trace readably (``--json`` for the raw record)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from csagent.config import Settings
from csagent.tracing import read_trace, render_trace

HELP = "print one turn's trace (boundary, retrieval, verification, latency per node)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the command's arguments."""
    parser.add_argument("trace_id", metavar="ID", help="a trace id (or a unique prefix of one)")
    parser.add_argument("--json", action="store_true", help="print the raw JSON record")
    parser.add_argument("--traces-dir", type=Path, default=None,
                        help="folder of traces (default: <data dir>/traces)")


def run(args: argparse.Namespace) -> int:
    """Print the trace; return 0 (unknown ids raise ``UsageError``)."""
    folder = args.traces_dir or Settings.from_env().traces_dir
    record = read_trace(folder, args.trace_id)
    if args.json:
        sys.stdout.write(json.dumps(record, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(render_trace(record))
    return 0
