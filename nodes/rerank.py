"""Rerank node: order the merged evidence, keep the top k, mark conflicting chunks.

The knowledge layer's rerank score is used when it computed one; the trace shows every score.
"""

from __future__ import annotations

from datetime import date

from langgraph.runtime import Runtime

from contracts.context import Context
from contracts.state import State, replace_evidence
from nodes._common import context_of
from strategies.rules.evidence import evidence_sort_key, mark_conflicts
from strategies.rules.versions import frame_versions


def rerank_evidence(state: State, runtime: Runtime[Context]) -> State:
    """Keep the best ``top_k`` chunks (plus every tool result), strongest first.

    The version of a policy in force for the question is settled first (:func:`frame_versions`),
    so that a replaced version never takes a slot from the one that governs.
    """
    ctx = context_of(runtime)
    today = date.fromisoformat(ctx.today) if ctx.today else None
    framed = frame_versions(state.get("evidence") or [], state.get("question", ""), today)
    evidence = sorted(framed, key=evidence_sort_key)
    tools = [e for e in evidence if e.get("kind") == "tool"]
    chunks = [e for e in evidence if e.get("kind") != "tool"][: max(ctx.top_k, 1)]
    return {"evidence": replace_evidence(mark_conflicts(tools + chunks))}
