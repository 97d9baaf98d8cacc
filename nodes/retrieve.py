"""Hybrid retrieval: one knowledge-layer search per rewritten query, merged by chunk id."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graph.context import Context
from graph.deps import Deps
from graph.state import State
from nodes.evidence import hit_to_evidence


def retrieve_hybrid(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Search every query (mode, k and rerank from the context) and merge hits, best score kept."""
    ctx = runtime.context or Context()
    best: dict[str, dict[str, Any]] = {}
    for qi, query in enumerate(state.get("queries") or [state["question"]]):
        hits = deps.retriever.search(query, mode=ctx.retrieval_mode,  # type: ignore[arg-type]
                                     k=ctx.top_k, rerank=ctx.rerank, recall_k=ctx.recall_k)
        for rank, hit in enumerate(hits):
            item = hit_to_evidence(hit)
            item["query_index"], item["rank"] = qi, rank
            known = best.get(item["id"])
            if known is None or item["scores"].get("score", 0) > known["scores"].get("score", 0):
                best[item["id"]] = item
    ordered = sorted(best.values(), key=lambda e: -e["scores"].get("score", 0.0))
    return {"evidence": ordered}
