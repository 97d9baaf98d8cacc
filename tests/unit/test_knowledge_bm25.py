"""BM25 (sparse precomputed) against rank_bm25, persistence, and the pure fusion functions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from knowledge.bm25 import DEFAULT_B, DEFAULT_EPSILON, DEFAULT_K1, BM25Index
from knowledge.fusion import normalize_bm25, normalize_cosine, rrf_fusion, sigmoid, weighted_fusion
from knowledge.normalize import tokenize

DOCS = [
    "7天无理由退货，运费由买家承担。",
    "质量问题退货运费由商家承担，需上传照片。",
    "订单满99元包邮，不满99元收取运费8元。",
    "Plus会员每月赠送5张运费券。",
    "退款原路退回，银行卡3至7个工作日到账。",
    "价保期内降价可申请价保，补差价。",
    "以旧换新可抵扣新机价款。",
    "发票在订单完成后开具。",
]
QUERIES = ["七天无理由退货运费谁出", "运费 运费 包邮", "价保怎么申请", "退款几天到账", "不存在的词汇xyz", "会员"]



@pytest.fixture(autouse=True, scope="module")
def jieba_cache_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Keep jieba's dictionary cache out of the user's data dir (if jieba is not loaded yet)."""
    from knowledge.normalize import configure_jieba

    configure_jieba(tmp_path_factory.mktemp("jieba"))

@pytest.fixture(scope="module")
def corpus() -> list[list[str]]:
    return [tokenize(d) for d in DOCS]


@pytest.mark.parametrize("params", [{"k1": 1.5, "b": 0.75, "epsilon": 0.25},
                                    {"k1": 1.2, "b": 0.5, "epsilon": 0.1}, {}])
def test_scores_equal_rank_bm25(corpus: list[list[str]], params: dict[str, float]) -> None:
    ours = BM25Index.build(corpus, **params)
    ref = BM25Okapi(corpus, **{"k1": DEFAULT_K1, "b": DEFAULT_B, "epsilon": DEFAULT_EPSILON,
                               **params})
    for q in QUERIES:
        tokens = tokenize(q)
        np.testing.assert_allclose(ours.scores(tokens), ref.get_scores(tokens), rtol=1e-5, atol=1e-6)


def test_negative_idf_uses_epsilon_floor() -> None:
    # "a" is in 3 of 4 documents: its raw idf is negative and rank_bm25 floors it
    corpus = [["a", "b"], ["a", "c"], ["a", "d"], ["e"]]
    ours = BM25Index.build(corpus)
    ref = BM25Okapi(corpus, b=DEFAULT_B)
    np.testing.assert_allclose(ours.scores(["a"]), ref.get_scores(["a"]), rtol=1e-5)
    assert ours.term_idf("a") == pytest.approx(ref.idf["a"])
    assert ours.term_idf("zzz") == 0.0


def test_top_k_and_persistence(corpus: list[list[str]], tmp_path: Path) -> None:
    index = BM25Index.build(corpus)
    idx, scores = index.top_k(tokenize("退货运费由谁承担"), 3)
    ref = BM25Okapi(corpus).get_scores(tokenize("退货运费由谁承担"))
    positive = int((ref > 0).sum())
    assert list(idx) == list(np.argsort(-ref, kind="stable")[: min(3, positive)])
    assert list(idx) == [1, 0]  # only documents with a positive score are returned
    assert list(scores) == sorted(scores, reverse=True)
    assert index.top_k(["unknown-token"], 3)[0].size == 0
    index.save(tmp_path)
    loaded = BM25Index.load(tmp_path)
    assert loaded.vocab == index.vocab
    np.testing.assert_allclose(loaded.scores(tokenize("运费")), index.scores(tokenize("运费")))
    np.testing.assert_allclose(loaded.idf, index.idf, atol=1e-5)


def test_empty_corpus() -> None:
    index = BM25Index.build([])
    assert index.scores(["a"]).shape == (0,)


def test_normalisations() -> None:
    np.testing.assert_allclose(normalize_cosine([0.82, 0.88, 0.94]), [0.0, 0.5, 1.0])
    assert list(normalize_cosine([0.9, 0.9])) == [1.0, 1.0]
    b = normalize_bm25([0.0, 1.0, 2.0])
    np.testing.assert_allclose(b, sigmoid(np.array([-1.224744871, 0.0, 1.224744871])))
    assert list(normalize_bm25([3.0])) == [0.5]
    assert normalize_bm25([]).size == 0


def test_weighted_fusion_extremes_and_mix() -> None:
    bm25 = [10.0, 0.0, 5.0]
    cos = [0.83, 0.93, 0.88]
    only_bm25 = weighted_fusion(bm25, cos, 1.0)
    only_cos = weighted_fusion(bm25, cos, 0.0)
    assert list(np.argsort(-only_bm25)) == [0, 2, 1]
    assert list(np.argsort(-only_cos)) == [1, 2, 0]
    mixed = weighted_fusion(bm25, cos, 0.5)
    np.testing.assert_allclose(mixed, 0.5 * normalize_bm25(bm25) + 0.5 * normalize_cosine(cos))
    with pytest.raises(ValueError):
        weighted_fusion(bm25, cos, 1.5)
    with pytest.raises(ValueError):
        weighted_fusion([1.0], cos, 0.5)


def test_rrf() -> None:
    scores = rrf_fusion([["a", "b", "c"], ["b", "d"]], k=60)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["d"] == pytest.approx(1 / 62)
    assert max(scores, key=scores.__getitem__) == "b"


def test_demote() -> None:
    from knowledge.fusion import demote

    scores = np.array([0.9, 0.5, 0.1])
    out = demote(scores, [True, False, False], 0.25)
    np.testing.assert_allclose(out, [0.9 - 0.25 * 0.8, 0.5, 0.1])
    assert scores[0] == 0.9  # input untouched
    np.testing.assert_allclose(demote(scores, [True, True, True], 0.0), scores)
    np.testing.assert_allclose(demote(scores, [False, False, False], 0.5), scores)
    # equal scores: the spread falls back to 1
    np.testing.assert_allclose(demote([0.4, 0.4], [False, True], 0.1), [0.4, 0.3])
    assert demote([], [], 0.3).size == 0
    with pytest.raises(ValueError):
        demote(scores, [True], 0.1)
    with pytest.raises(ValueError):
        demote(scores, [True, False, False], 1.5)


# bm25s-style: a tiny corpus with ids, the exact ranking expected for each setting
LENGTHS = {
    "one-word": ["运费"],
    "answer": ["运费", "券", "抵扣", "运费", "最高", "八", "元", "偏远", "二十", "元"],
    "refund": ["退款", "到账", "银行卡", "工作日"],
    "invoice": ["发票", "开具", "邮箱"],
    "price": ["价保", "差价", "申请"],
    "free": ["包邮", "门槛", "会员"],
}


def _ranking(index: BM25Index, query: list[str]) -> list[str]:
    ids = list(LENGTHS)
    return [ids[i] for i in index.top_k(query, 3)[0]]


def test_default_b_lets_the_answer_beat_a_one_word_passage() -> None:
    corpus = list(LENGTHS.values())
    # textbook b = 0.75: the one-word passage outranks the passage that uses the word twice
    assert _ranking(BM25Index.build(corpus, b=0.75), ["运费"]) == ["one-word", "answer"]
    # the default b = 0.3 weighs length less
    assert DEFAULT_B == 0.3
    assert _ranking(BM25Index.build(corpus), ["运费"]) == ["answer", "one-word"]
    # one match each, same idf: the shorter passage still ranks first
    assert _ranking(BM25Index.build(corpus), ["退款", "发票"]) == ["invoice", "refund"]
    assert _ranking(BM25Index.build(corpus), ["不存在"]) == []


def test_bm25_plus_delta(tmp_path: Path) -> None:
    corpus = list(LENGTHS.values())
    plain = BM25Index.build(corpus, b=0.75)
    plus = BM25Index.build(corpus, b=0.75, delta=1.0)
    # every matching term adds delta * idf, non-matching documents stay at 0
    idf = plain.term_idf("运费")
    np.testing.assert_allclose(plus.scores(["运费"]) - plain.scores(["运费"]),
                               [idf, idf, 0, 0, 0, 0], rtol=1e-5)
    plus.save(tmp_path)
    loaded = BM25Index.load(tmp_path)
    assert loaded.delta == 1.0
    np.testing.assert_allclose(loaded.scores(["运费"]), plus.scores(["运费"]))
