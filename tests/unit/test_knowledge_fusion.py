"""Fusion of BM25 and dense scores (knowledge.fusion) and the bench's short-passage settings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from knowledge.config import FUSIONS, KnowledgeConfig
from knowledge.fusion import (
    fuse,
    normalize_zscore,
    rrf_fusion,
    sigmoid,
    weighted_fusion,
    zscore_fusion,
)
from knowledge.types import Chunk

IDS = np.array(["a", "b", "c", "d", "e"])
# a: an exact match of a rare term (BM25 outlier); b-d: what the dense side prefers, in a
# narrow cosine band; e: a dense-only candidate far below the band.
BM25 = np.array([12.0, 6.0, 5.5, 0.0, 0.0])
COS = np.array([0.86, 0.90, 0.89, 0.895, 0.70])


def ranked(scores: np.ndarray) -> list[str]:
    return [str(i) for i in IDS[np.argsort(-scores, kind="stable")]]


def test_zscore_fusion_exact_order_and_values() -> None:
    fused = zscore_fusion(BM25, COS, 0.4)
    assert ranked(fused) == ["a", "b", "c", "d", "e"]
    np.testing.assert_allclose(fused, 0.4 * normalize_zscore(BM25) + 0.6 * normalize_zscore(COS))
    np.testing.assert_allclose(fused, [0.656, 0.626, 0.597, 0.492, 0.177], atol=1e-3)
    # the old weighted fusion min-maxes the cosines: e's outlier cosine stretches the band
    # (b gets 1.0, a only 0.8), so b wins there
    assert ranked(weighted_fusion(BM25, COS, 0.4)) == ["b", "a", "c", "d", "e"]


def test_zscore_fusion_extremes() -> None:
    assert ranked(zscore_fusion(BM25, COS, 1.0)) == ["a", "b", "c", "d", "e"]
    assert ranked(zscore_fusion(BM25, COS, 0.0)) == ["b", "d", "c", "a", "e"]


def test_zscore_fusion_treats_both_rankers_alike() -> None:
    # the same normalisation on both sides: swapping the rankers and the weights is a no-op
    np.testing.assert_allclose(zscore_fusion(BM25, COS, 0.3), zscore_fusion(COS, BM25, 0.7))
    # and it does not depend on either ranker's scale or offset
    np.testing.assert_allclose(zscore_fusion(3.0 * BM25 + 7.0, 10.0 * COS - 8.0, 0.4),
                               zscore_fusion(BM25, COS, 0.4))
    assert not np.allclose(weighted_fusion(BM25, COS, 0.3), weighted_fusion(COS, BM25, 0.7))


def test_zscore_fusion_bounds_one_ranker() -> None:
    # however far a BM25 score stands out, it adds at most alpha
    huge = np.array([1e6, 1.0, 1.0, 1.0, 1.0])
    fused = zscore_fusion(huge, COS, 0.4)
    assert fused.max() < 0.4 + 0.6
    assert fused[0] - zscore_fusion(np.ones(5), COS, 0.4)[0] < 0.4


def test_zscore_degenerate_and_errors() -> None:
    np.testing.assert_allclose(normalize_zscore([2.0, 2.0]), [0.5, 0.5])
    assert normalize_zscore([]).size == 0
    np.testing.assert_allclose(normalize_zscore([0.0, 1.0, 2.0]),
                               sigmoid(np.array([-1.224744871, 0.0, 1.224744871])))
    np.testing.assert_allclose(zscore_fusion([5.0], [0.9], 0.4), [0.5])
    with pytest.raises(ValueError):
        zscore_fusion(BM25, COS, -0.1)
    with pytest.raises(ValueError):
        zscore_fusion([1.0, 2.0], COS, 0.5)


def test_fuse_dispatch() -> None:
    np.testing.assert_allclose(fuse("zscore", BM25, COS, 0.4), zscore_fusion(BM25, COS, 0.4))
    np.testing.assert_allclose(fuse("weighted", BM25, COS, 0.4), weighted_fusion(BM25, COS, 0.4))
    rankings = [["a", "b", "c"], ["b", "d", "c", "a", "e"]]
    out = fuse("rrf", BM25, COS, 0.4, rankings, list(IDS))
    expected = rrf_fusion(rankings)
    np.testing.assert_allclose(out, [expected[i] for i in IDS])
    assert ranked(out) == ["b", "a", "c", "d", "e"]
    with pytest.raises(ValueError, match="unknown fusion"):
        fuse("max", BM25, COS, 0.4)


def test_config_default_is_zscore() -> None:
    from csagent.config import Settings

    assert KnowledgeConfig().fusion == "zscore"
    assert set(FUSIONS) == {"zscore", "weighted", "rrf"}
    assert Settings().fusion == "zscore"
    assert KnowledgeConfig.from_settings(Settings(fusion="weighted")).fusion == "weighted"


def _chunk(cid: str, doc: str, text: str, heading: tuple[str, ...]) -> Chunk:
    return Chunk(chunk_id=cid, doc_id=doc, title=doc, text=text, retrieval_text=text,
                 heading_path=heading)


def test_short_settings_exact_passages(tmp_path: Path) -> None:
    from eval.retrieval_bench import load_dataset, write_short_settings

    chunks = [
        _chunk("ret#1", "returns", "签收后七天内可以申请无理由退货。寄回运费由买家承担。", ("退货", "期限")),
        _chunk("ret#2", "returns", "衣服试穿后不影响二次销售的可以退。", ("退货", "7.1 衣服试穿后能退吗？")),
        _chunk("inv#1", "invoices", "电子发票在订单完成后发送到邮箱。", ("发票", "7.2 发票什么时候开？")),
        _chunk("inv#2", "invoices", "短句", ("发票",)),
    ]
    items = [
        {"qid": "q1", "query": "退货运费谁出", "gold_doc_ids": ["returns"],
         "gold_spans": ["寄回运费由买家承担"], "gold_chunk_ids": ["ret#1"]},
        {"qid": "q2", "query": "试穿过的衣服能退吗", "gold_doc_ids": ["returns"],
         "gold_spans": ["不影响二次销售"], "gold_chunk_ids": ["ret#2"]},
        {"qid": "q3", "query": "发票多久开", "gold_doc_ids": ["invoices"],
         "gold_spans": ["订单完成后发送到邮箱"], "gold_chunk_ids": ["inv#1"]},
        {"qid": "q4", "query": "无关的问题", "gold_doc_ids": ["invoices"],
         "gold_spans": ["不存在的句子"], "gold_chunk_ids": []},
    ]
    out = write_short_settings(chunks, items, tmp_path)
    assert [name for name, _, _ in out] == ["sentences", "faq-questions"]
    sent_kb = (tmp_path / "sentences" / "kb" / "passages.jsonl").read_text(encoding="utf-8")
    assert [line.count("s0000") for line in sent_kb.splitlines()] == [1, 1, 1, 1]
    assert "短句" not in sent_kb  # fewer than 6 CJK characters
    sent_q = load_dataset(tmp_path / "sentences" / "queries.jsonl")
    assert [(q["qid"], q["gold_doc_ids"]) for q in sent_q] == [
        ("q1", ["s00001"]), ("q2", ["s00002"]), ("q3", ["s00003"])]
    faq_kb = (tmp_path / "faq-questions" / "kb" / "passages.jsonl").read_text(encoding="utf-8")
    assert "衣服试穿后能退吗？" in faq_kb and "7.1" not in faq_kb
    faq_q = load_dataset(tmp_path / "faq-questions" / "queries.jsonl")
    assert [(q["qid"], q["gold_doc_ids"]) for q in faq_q] == [("q2", ["f0000"]), ("q3", ["f0001"])]
