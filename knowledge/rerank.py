"""Rerankers: a ``sentence_transformers.CrossEncoder`` and the offline lexical-coverage one.

No cross-encoder weights can be had offline here, so the offline choice is measured on the dev
set by ``python -m eval.retrieval_bench``: :data:`DEFAULT_RERANKER` is what ``reranker =
"default"`` resolves to (``"none"`` unless a reranker beat no-rerank on MRR@10; see the
benchmark report).

The lexical reranker scores ``base' + beta * coverage`` where ``base'`` is the candidate's
first-stage score min-max normalised over the candidates and ``coverage`` is the idf-weighted
share of the query's terms that occur in the chunk (read from the BM25 matrix, so it costs no
tokenisation of candidates).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from contracts.errors import UsageError
from knowledge.bm25 import BM25Index
from knowledge.normalize import tokenize_query
from knowledge.types import Hit

logger = logging.getLogger(__name__)

DEFAULT_RERANKER = "none"
LEXICAL_BETA = 0.5


class Reranker(Protocol):
    """Scores (query, candidate) pairs; higher is better."""

    name: str

    def score(self, query: str, hits: Sequence[Hit]) -> NDArray[np.float64]:
        """Return one score per hit."""
        ...


def _minmax(values: Sequence[float]) -> NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return arr
    lo, hi = float(arr.min()), float(arr.max())
    if hi - lo < 1e-12:
        return np.ones_like(arr)
    return (arr - lo) / (hi - lo)


class LexicalReranker:
    """First-stage score plus idf-weighted query-term coverage of each candidate."""

    name = "lexical"

    def __init__(self, bm25: BM25Index, positions: dict[str, int], beta: float = LEXICAL_BETA) -> None:
        self._bm25 = bm25
        self._positions = positions
        self.beta = beta

    def coverage(self, query: str, hits: Sequence[Hit]) -> NDArray[np.float64]:
        """Return the idf-weighted share of query terms present in each hit's chunk."""
        terms = [t for t in dict.fromkeys(tokenize_query(query)) if t in self._bm25.vocab]
        if not terms or not hits:
            return np.zeros(len(hits))
        rows = np.asarray([self._bm25.vocab[t] for t in terms], dtype=np.int64)
        idf = np.maximum(self._bm25.idf[rows], 0.0)
        total = float(idf.sum())
        if total <= 0:
            return np.zeros(len(hits))
        cols = np.asarray([self._positions[h.chunk.chunk_id] for h in hits], dtype=np.int64)
        present = (self._bm25.matrix[rows][:, cols] != 0).toarray().astype(np.float64)
        return np.asarray(idf @ present / total, dtype=np.float64)

    def score(self, query: str, hits: Sequence[Hit]) -> NDArray[np.float64]:
        """Return ``base' + beta * coverage`` per hit."""
        base = _minmax([h.score for h in hits])
        return base + self.beta * self.coverage(query, hits)


class CrossEncoderReranker:
    """A ``sentence_transformers.CrossEncoder`` (e.g. bge-reranker-v2-m3) over (query, chunk text)."""

    def __init__(self, model: str, *, device: str = "cpu", batch_size: int = 16) -> None:
        from sentence_transformers import CrossEncoder

        try:
            self._model = CrossEncoder(model, device=device)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot load reranker model {model!r}: {exc}") from exc
        self.name = model
        self._batch_size = batch_size

    def score(self, query: str, hits: Sequence[Hit]) -> NDArray[np.float64]:
        """Return the cross-encoder score of each (query, chunk text) pair."""
        if not hits:
            return np.zeros(0)
        pairs = [(query, h.chunk.text) for h in hits]
        out = self._model.predict(pairs, batch_size=self._batch_size, show_progress_bar=False)
        return np.asarray(out, dtype=np.float64).reshape(len(hits))


def resolve_reranker_name(name: str | None) -> str:
    """Map ``"default"``/empty to :data:`DEFAULT_RERANKER`; return other names unchanged."""
    name = (name or "default").strip()
    return DEFAULT_RERANKER if name == "default" else name
