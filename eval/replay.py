"""Scoring of replay results; the replay itself is the product's (:mod:`csagent.replay`).

``csagent replay`` writes one JSON line per conversation; :func:`score_results` reads such a
file back and measures it with the evaluation's own code (:mod:`eval.metrics`): status mix,
fail reasons, turns that raised, and the latency distribution per turn and per node.

The replay names are re-exported here for callers that imported them from ``eval.replay``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from csagent.replay import (
    AtomicAppender,
    Conversation,
    ReplaySummary,
    make_scratch_dir,
    parse_conversation,
    prepare_output,
    read_conversations,
    replay_conversation,
    replay_file,
)
from eval.metrics import latency_summary

__all__ = ["AtomicAppender", "Conversation", "ReplaySummary", "make_scratch_dir",
           "parse_conversation", "prepare_output", "read_conversations", "replay_conversation",
           "replay_file", "score_results"]


def score_results(path: Path) -> dict[str, Any]:
    """Return the measures of a ``csagent replay`` results file.

    Args:
        path: The ``--out`` JSONL of a replay run.

    Returns:
        ``{"conversations", "turns", "status_mix", "fail_reasons", "errors",
        "with_baseline", "turn_latency_ms", "node_latency_ms"}``; unreadable lines are counted
        in ``"bad_lines"``.

    """
    statuses: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    turn_ms: list[dict[str, float]] = []
    node_ms: list[dict[str, float]] = []
    conversations = turns = errors = with_baseline = bad = 0
    for raw in path.read_bytes().splitlines():
        try:
            record = json.loads(raw)
            rows = list(record["turns"])
        except (ValueError, KeyError, TypeError):
            bad += 1
            continue
        conversations += 1
        for row in rows:
            turns += 1
            statuses[str(row.get("status"))] += 1
            if row.get("fail_reason"):
                reasons[str(row["fail_reason"])] += 1
            errors += row.get("status") == "error"
            with_baseline += bool(row.get("baseline"))
            turn_ms.append({"turn": float(row.get("latency_ms") or 0.0)})
            if row.get("node_latency_ms"):
                node_ms.append(dict(row["node_latency_ms"]))
    return {"conversations": conversations, "turns": turns, "status_mix": dict(statuses),
            "fail_reasons": dict(reasons), "errors": errors, "with_baseline": with_baseline,
            "bad_lines": bad, "turn_latency_ms": latency_summary(turn_ms).get("turn", {}),
            "node_latency_ms": latency_summary(node_ms)}
