"""Okapi BM25 over jieba tokens, precomputed as a sparse term × document weight matrix.

Defaults: ``k1 = 1.5``, ``b = 0.3`` (:data:`DEFAULT_B`), ``epsilon = 0.25``, ``delta = 0``.
``b`` is lower than the textbook 0.75 because the indexed units are chunks (at most
``chunk_size`` characters) and, on FAQ/sentence-style knowledge bases, one-line passages: with
``b = 0.75`` a very short passage that repeats one query word outranks the longer passage that
answers (the length factor ``1 - b + b * dl / avgdl`` falls far below 1). Measured in
:mod:`eval.retrieval_bench` (BM25 chunk MRR@10 on the dev KB 0.637 → 0.673, and higher on the
short-passage settings); an index stores the ``b`` it was built with, so an index built
before keeps its ``b`` until its BM25 is rebuilt (any ingest that changes a document, or
``--reset``).

With ``delta = 0``, scores equal ``rank_bm25.BM25Okapi.get_scores`` for the same k1, b,
epsilon: idf is
``log(N - n + 0.5) - log(n + 0.5)``; a negative idf is replaced by ``epsilon * mean(idf)``; a
query term repeated in the query counts once per repetition; unknown terms score 0. Unlike
rank_bm25, each document's term weight ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl /
avgdl))`` is computed once at build time, so a query only sums the few matrix rows of its terms
(rank_bm25 makes a dense pass over every document per query term).

Persisted as ``bm25.npz`` (the CSR matrix) and ``bm25.json`` (vocabulary and parameters).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

MATRIX_FILE = "bm25.npz"
DEFAULT_K1 = 1.5
DEFAULT_B = 0.3
DEFAULT_EPSILON = 0.25
VOCAB_FILE = "bm25.json"


class BM25Index:
    """A BM25 (Okapi) index whose query cost grows with the postings of the query terms only."""

    def __init__(
        self,
        matrix: sp.csr_matrix,
        vocab: dict[str, int],
        *,
        idf: NDArray[np.float64] | None = None,
        k1: float,
        b: float,
        epsilon: float,
        delta: float = 0.0,
    ) -> None:
        self.matrix = matrix
        self.idf = idf if idf is not None else np.zeros(len(vocab), dtype=np.float64)
        self.vocab = vocab
        self.k1 = k1
        self.b = b
        self.epsilon = epsilon
        self.delta = delta

    @property
    def n_docs(self) -> int:
        """Return the number of documents (columns)."""
        return int(self.matrix.shape[1])

    @classmethod
    def build(
        cls,
        corpus: Sequence[Sequence[str]],
        *,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        epsilon: float = DEFAULT_EPSILON,
        delta: float = 0.0,
    ) -> BM25Index:
        """Build the weight matrix from tokenised documents (one token list per document).

        ``delta`` > 0 gives BM25+ (Lv & Zhai 2011): every matching term adds ``delta * idf``
        on top of the Okapi weight, so a long document that contains a term never scores
        (almost) like one that lacks it.
        """
        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[float] = []
        doc_len = np.zeros(len(corpus), dtype=np.float64)
        for j, tokens in enumerate(corpus):
            doc_len[j] = len(tokens)
            for term, tf in Counter(tokens).items():
                rows.append(vocab.setdefault(term, len(vocab)))
                cols.append(j)
                tfs.append(tf)
        n_docs = len(corpus)
        if n_docs == 0 or not vocab:
            return cls(sp.csr_matrix((len(vocab), n_docs), dtype=np.float32), vocab,
                       k1=k1, b=b, epsilon=epsilon, delta=delta)
        row_arr = np.asarray(rows, dtype=np.int64)
        col_arr = np.asarray(cols, dtype=np.int64)
        tf_arr = np.asarray(tfs, dtype=np.float64)
        df = np.bincount(row_arr, minlength=len(vocab)).astype(np.float64)
        idf = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
        avg_idf = float(idf.mean())
        idf = np.where(idf < 0, epsilon * avg_idf, idf)
        avgdl = float(doc_len.mean()) or 1.0
        denom = tf_arr + k1 * (1 - b + b * doc_len[col_arr] / avgdl)
        weights = idf[row_arr] * (tf_arr * (k1 + 1) / denom + delta)
        matrix = sp.csr_matrix(
            (weights.astype(np.float32), (row_arr, col_arr)), shape=(len(vocab), n_docs)
        )
        matrix.sum_duplicates()
        return cls(matrix, vocab, idf=idf, k1=k1, b=b, epsilon=epsilon, delta=delta)

    def term_idf(self, term: str) -> float:
        """Return the (epsilon-floored) idf of ``term``; 0 for a term not in the corpus."""
        row = self.vocab.get(term)
        return float(self.idf[row]) if row is not None else 0.0

    def scores(self, query_tokens: Sequence[str]) -> NDArray[np.float32]:
        """Return the BM25 score of every document for the query (a dense vector)."""
        counts = Counter(t for t in query_tokens if t in self.vocab)
        out = np.zeros(self.n_docs, dtype=np.float32)
        if not counts:
            return out
        ids = np.fromiter((self.vocab[t] for t in counts), dtype=np.int64, count=len(counts))
        weights = np.fromiter(counts.values(), dtype=np.float32, count=len(counts))
        sub = self.matrix[ids]
        result = sub.T @ weights
        return np.asarray(result, dtype=np.float32).ravel()

    def top_k(self, query_tokens: Sequence[str], k: int) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Return (document indices, scores) of the ``k`` best documents with a score > 0."""
        scores = self.scores(query_tokens)
        nonzero = np.flatnonzero(scores > 0)
        if nonzero.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if nonzero.size > k:
            part = np.argpartition(-scores[nonzero], k - 1)[:k]
            nonzero = nonzero[part]
        order = np.argsort(-scores[nonzero], kind="stable")
        idx = nonzero[order]
        return idx.astype(np.int64), scores[idx]

    def save(self, directory: Path) -> None:
        """Write ``bm25.npz`` and ``bm25.json`` into ``directory``."""
        directory.mkdir(parents=True, exist_ok=True)
        sp.save_npz(directory / MATRIX_FILE, self.matrix, compressed=False)
        meta = {
            "k1": self.k1,
            "b": self.b,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "vocab": self.vocab,
            "idf": [round(float(x), 6) for x in self.idf],
        }
        (directory / VOCAB_FILE).write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> BM25Index:
        """Load an index written by :meth:`save`."""
        meta = json.loads((directory / VOCAB_FILE).read_text(encoding="utf-8"))
        matrix = sp.load_npz(directory / MATRIX_FILE).tocsr()
        idf = np.asarray(meta.get("idf") or [0.0] * len(meta["vocab"]), dtype=np.float64)
        return cls(matrix, meta["vocab"], idf=idf, k1=meta["k1"], b=meta["b"], epsilon=meta["epsilon"],
                   delta=float(meta.get("delta", 0.0)))

