"""``csagent search QUERY``: search the knowledge index (or a batch with ``--queries FILE.jsonl``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from csagent.errors import UsageError

HELP = "search the knowledge index (bm25, vector or hybrid)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the command's arguments."""
    parser.add_argument("query", nargs="?", metavar="QUERY", help="the question to search for")
    parser.add_argument("--index", metavar="DIR", help="index dir (default: the data dir's index)")
    parser.add_argument("--mode", choices=("bm25", "vector", "hybrid"), default="hybrid")
    rr = parser.add_mutually_exclusive_group()
    rr.add_argument("--rerank", dest="rerank", action="store_true", default=None,
                    help="rerank candidates (the configured reranker, else the lexical one)")
    rr.add_argument("--no-rerank", dest="rerank", action="store_false", help="do not rerank")
    parser.add_argument("-k", type=int, default=None, help="number of results (default: top_k)")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--queries", metavar="FILE.jsonl",
                        help='batch: one {"qid", "query"} per line; writes one JSON line per query')


def _read_queries(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise UsageError(f"no such queries file: {path}")
    out = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{lineno}: not JSON ({exc.msg})") from None
        except RecursionError:
            raise UsageError(f"{path}:{lineno}: not JSON (nested too deeply)") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("query"), str) or not obj["query"].strip():
            raise UsageError(f'{path}:{lineno}: expected {{"qid", "query"}} with a non-empty query')
        out.append({"qid": obj.get("qid", lineno), "query": obj["query"]})
    return out


def run(args: argparse.Namespace) -> int:
    """Run the search and write the results to stdout."""
    if args.queries and args.query:
        raise UsageError("give either QUERY or --queries FILE, not both")
    if not args.queries and (args.query is None or not args.query.strip()):
        raise UsageError("the query is empty")
    if args.k is not None and args.k < 1:
        raise UsageError(f"-k must be at least 1, got {args.k}")
    from csagent.config import Settings
    from knowledge.config import KnowledgeConfig
    from knowledge.index import KnowledgeIndex

    settings = Settings.from_env(index_dir=args.index)
    queries = _read_queries(Path(args.queries)) if args.queries else None
    index = KnowledgeIndex.open(settings.resolved_index_dir, KnowledgeConfig.from_settings(settings))
    known_problem = index.vector_problem
    if known_problem and args.mode != "bm25":
        sys.stderr.write(f"csagent search: note: {known_problem}\n")
    k = args.k or settings.top_k
    if queries is not None:
        for item in queries:
            hits = index.search(item["query"], mode=args.mode, k=k, rerank=args.rerank)
            line = {"qid": item["qid"], "results": [h.to_json() for h in hits]}
            sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
        return 0
    hits = index.search(args.query, mode=args.mode, k=k, rerank=args.rerank)
    if args.json:
        sys.stdout.write(json.dumps({"query": args.query, "results": [h.to_json() for h in hits]},
                                    ensure_ascii=False) + "\n")
        return 0
    if not hits:
        sys.stdout.write("no results\n")
    if index.vector_problem and index.vector_problem != known_problem:
        sys.stderr.write(f"csagent search: note: {index.vector_problem}\n")
    for rank, hit in enumerate(hits, start=1):
        where = " > ".join(hit.chunk.heading_path) or hit.chunk.title
        text = hit.chunk.text.replace("\n", " ")
        if len(text) > 160:
            text = text[:160] + "…"
        scores = " ".join(
            f"{name}={value:.3f}"
            for name, value in (("bm25", hit.bm25), ("dense", hit.dense), ("fused", hit.fused),
                                ("rerank", hit.rerank))
            if value is not None
        )
        sys.stdout.write(f"{rank}. [{hit.chunk.chunk_id}] {hit.score:.4f}  {where}\n"
                         f"   {text}\n   {scores}\n")
    return 0
