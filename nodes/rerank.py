"""Rerank: order the merged evidence, keep the top k, mark conflicting chunks.

The knowledge layer's rerank score is used when it computed one; the trace shows every score.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graph.context import Context
from graph.state import EVIDENCE_RESET, State
from nodes.evidence import mark_conflicts


def evidence_sort_key(item: dict[str, Any]) -> tuple[int, float, float]:
    """Sort tools first, then current before superseded, then by rerank (else final) score."""
    scores = item.get("scores") or {}
    return (0 if item.get("kind") == "tool" else 1, 1 if item.get("superseded") else 0,
            -float(scores.get("rerank", scores.get("score", 0.0))))


def rerank_evidence(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Keep the best ``top_k`` chunks (plus every tool result), strongest first."""
    ctx = runtime.context or Context()
    evidence = sorted(state.get("evidence") or [], key=evidence_sort_key)
    tools = [e for e in evidence if e.get("kind") == "tool"]
    chunks = [e for e in evidence if e.get("kind") != "tool"][: max(ctx.top_k, 1)]
    return {"evidence": [{"id": EVIDENCE_RESET}, *mark_conflicts(tools + chunks)]}
