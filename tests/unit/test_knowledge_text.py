"""Normaliser, tokenizer, loaders (bad input) and chunker on tiny inline inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge.chunking import chunk_document, make_chunk_id, split_text
from knowledge.loaders import Document, load_documents
from knowledge.normalize import chinese_to_int, normalize_text, tokenize

# -- normalisation ---------------------------------------------------------------------------



@pytest.fixture(autouse=True, scope="module")
def jieba_cache_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Keep jieba's dictionary cache out of the user's data dir (if jieba is not loaded yet)."""
    from knowledge.normalize import configure_jieba

    configure_jieba(tmp_path_factory.mktemp("jieba"))

@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("七天无理由退货", "7天无理由退货"),
        ("十五个工作日內退款", "15个工作日内退款"),
        ("兩年保修", "2年保修"),
        ("ＰＬＵＳ會員１２３", "plus会员123"),
        ("满一百九十九元包邮", "满199元包邮"),
        ("一起 购买", "一起 购买"),  # 一 not before a counter stays
        ("  多个   空格 ", "多个 空格"),
        ("单笔最高5万元", "单笔最高50000元"),  # not 「50元」: a digit before 万 scales it
        ("1.5万元", "15000元"),
        ("三万元", "30000元"),
        ("两千块", "2000块"),
        ("5千克", "5千克"),  # 千克 is a unit, not a thousand
        ("租VIP包厢一天", "租vip包厢1天"),
        ("VIP一年", "vip 1年"),  # a converted numeral does not run on from a Latin word (not 「vip1」)
        ("A320机型", "a320机型"),  # a Latin word with its own digits stays one
    ],
)
def test_normalize_text(raw: str, expected: str) -> None:
    assert normalize_text(raw) == expected


@pytest.mark.parametrize(
    ("raw", "value"),
    [("七", 7), ("十", 10), ("十五", 15), ("二十", 20), ("一百二十", 120), ("三千零五", 3005),
     ("两万", 20000), ("二〇二六", 2026), ("", None), ("七x", None)],
)
def test_chinese_to_int(raw: str, value: int | None) -> None:
    assert chinese_to_int(raw) == value


def test_tokenize_spellings_meet() -> None:
    a = set(tokenize("七天无理由退货运费谁出"))
    b = set(tokenize("7天無理由退貨的運費"))
    assert {"7天", "7天无理由退货", "运费", "退货"} <= a
    assert {"7天", "7天无理由退货", "运费"} <= b
    assert "的" not in b  # stop word
    assert "plus会员" in tokenize("Ｐｌｕｓ会员有什么权益？")
    assert "运费险" in tokenize("运费险怎么赔")
    assert "15个工作日" in tokenize("十五个工作日到账")
    assert tokenize("，。！？ ") == []


# -- loaders ---------------------------------------------------------------------------------

GOOD_MD = """---
id: returns-7day
title: 七天无理由退货
version: "2.0"
effective_date: 2026-01-01
category: after-sales
---
# 七天无理由退货

签收后7天内可退。
"""


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_load_documents_reports_bad_input_by_file_and_line(tmp_path: Path) -> None:
    write(tmp_path / "good.md", GOOD_MD)
    write(tmp_path / "empty.md", "")
    write(tmp_path / "binary.txt", b"\x00\x01\x02binary")
    write(tmp_path / "broken.md", "---\nid: x\ntitle: [unclosed\n---\n正文\n")
    write(tmp_path / "unclosed.md", "---\nid: y\n正文\n")
    write(tmp_path / "nofm.md", "# 标题\n正文\n")
    write(tmp_path / "plain.txt", "没有前言的纯文本，id 取文件名。")
    write(tmp_path / "faq.jsonl",
          '{"id": "faq-1", "title": "发票", "text": "电子发票24小时内开具。"}\n'
          "not json\n"
          '{"id": "faq-2", "title": "缺正文"}\n'
          "\n"
          '{"id": "faq-3", "text": "有正文", "metadata": {"category": "faq"}}\n')
    write(tmp_path / "ignored.pdf", "x")
    docs, skipped = load_documents([tmp_path, tmp_path / "missing-folder"])
    assert sorted(d.doc_id for d in docs) == ["faq-1", "faq-3", "nofm", "plain", "returns-7day"]
    where = {(Path(s.path).name, s.line) for s in skipped}
    assert where == {
        ("empty.md", None),
        ("binary.txt", None),
        ("broken.md", 3),
        ("unclosed.md", 1),
        ("faq.jsonl", 2),
        ("faq.jsonl", 3),
        ("missing-folder", None),
    }
    reasons = {Path(s.path).name + str(s.line): s.reason for s in skipped}
    assert "empty" in reasons["empty.mdNone"]
    assert "binary" in reasons["binary.txtNone"]
    assert "not JSON" in reasons["faq.jsonl2"]
    assert "text" in reasons["faq.jsonl3"]
    good = next(d for d in docs if d.doc_id == "returns-7day")
    assert (good.title, good.version, good.effective_date) == ("七天无理由退货", "2.0", "2026-01-01")
    assert good.metadata["category"] == "after-sales"
    faq3 = next(d for d in docs if d.doc_id == "faq-3")
    assert faq3.title == "faq-3" and faq3.metadata == {"category": "faq"}


# -- chunking --------------------------------------------------------------------------------

POLICY = """# 退货政策

本政策适用于自营商品。

## 七天无理由退货

签收之日起7天内，商品完好可退货。

### 运费

| 情形 | 运费承担方 |
|---|---|
| 无理由退货 | 买家 |
| 质量问题 | 商家 |

以上为运费说明。
"""


def test_chunk_document_headings_tables_and_ids() -> None:
    doc = Document(doc_id="returns", title="退货政策", text=POLICY, source="x.md", version="1")
    chunks = chunk_document(doc)
    assert [c.chunk_id for c in chunks] == [
        "returns#2dc619f2",
        "returns#11d75b69",
        "returns#fd1bf972",
        "returns#bb82d4ca",
    ]
    assert [c.kind for c in chunks] == ["text", "text", "table", "text"]
    assert chunks[1].heading_path == ("退货政策", "七天无理由退货")
    table = chunks[2]
    assert table.heading_path == ("退货政策", "七天无理由退货", "运费")
    assert table.text.startswith("| 情形 | 运费承担方 |")
    first_line = table.retrieval_text.split("\n")[0]
    assert first_line == "表格：退货政策 > 七天无理由退货 > 运费，列：情形、运费承担方，共2行。"
    assert "情形: 质量问题；运费承担方: 商家。" in table.retrieval_text
    assert chunks[1].retrieval_text == "退货政策 > 七天无理由退货\n签收之日起7天内，商品完好可退货。"
    for c in chunks:
        assert c.chunk_id == make_chunk_id("returns", c.heading_path, c.text)
        assert (c.doc_id, c.title, c.source, c.version) == ("returns", "退货政策", "x.md", "1")
    # same content → same ids; changed text → only that chunk's id changes
    again = chunk_document(doc)
    assert [c.chunk_id for c in again] == [c.chunk_id for c in chunks]
    edited = Document(doc_id="returns", title="退货政策", source="x.md",
                      text=POLICY.replace("7天内", "10天内"))
    ids = [c.chunk_id for c in chunk_document(edited)]
    assert ids[0] == chunks[0].chunk_id and ids[2] == chunks[2].chunk_id
    assert ids[1] != chunks[1].chunk_id


def test_large_table_split_by_rows_with_header() -> None:
    rows = "\n".join(f"| 城市{i} | {i}天 |" for i in range(40))
    text = f"# 时效\n\n| 城市 | 时效 |\n|---|---|\n{rows}\n"
    doc = Document(doc_id="eta", title="时效", text=text, source="")
    chunks = chunk_document(doc, chunk_size=120, chunk_overlap=10)
    assert len(chunks) > 1 and all(c.kind == "table" for c in chunks)
    for c in chunks:
        assert c.text.startswith("| 城市 | 时效 |\n|---|---|")
        assert len(c.text) <= 120 + 20
    joined = "\n".join(c.text for c in chunks)
    assert all(f"| 城市{i} |" in joined for i in range(40))


def test_split_text_size_and_overlap() -> None:
    text = "".join(f"第{i}句话的内容在这里。" for i in range(30))
    pieces = split_text(text, 60, 15)
    assert all(len(p) <= 60 for p in pieces)
    assert pieces[0].startswith("第0句") and pieces[-1].endswith("第29句话的内容在这里。")
    for prev, nxt in zip(pieces, pieces[1:], strict=False):
        first_sentence = nxt.split("。")[0] + "。"
        assert prev.endswith(first_sentence)  # overlap: the next piece repeats the last sentence
    # a single very long sentence is windowed
    long = "".join(chr(0x4E00 + i) for i in range(200))
    windows = split_text(long, 64, 16)
    assert [len(w) for w in windows] == [64, 64, 64, 56]
    assert windows[1].startswith(windows[0][-16:]) and windows[-1].endswith(long[-10:])
    assert split_text("短文本", 512, 64) == ["短文本"]


def test_bm25_terms_add_cjk_bigrams() -> None:
    from knowledge.normalize import bm25_terms, cjk_bigrams

    assert cjk_bigrams("退钱了吗") == ["退钱", "钱了", "了吗"]
    assert cjk_bigrams("ab 七天") == []  # normalised to 「7天」: a single Chinese character left
    terms = bm25_terms("内裤拆封")
    assert terms[: len(tokenize("内裤拆封"))] == tokenize("内裤拆封")
    assert {"内裤", "裤拆", "拆封"} <= set(terms)


def test_table_rows_grouped_to_fit_the_passage_window() -> None:
    from knowledge.chunking import TABLE_CHARS

    rows = "\n".join(f"| 支付方式{i} | {i}个工作日到账，原路退回 |" for i in range(12))
    text = f"# 退款\n\n| 支付方式 | 到账时间 |\n|---|---|\n{rows}\n"
    chunks = chunk_document(Document(doc_id="refund", title="退款", text=text, source=""))
    assert len(chunks) > 1
    for c in chunks:
        facts = c.retrieval_text.split("\n", 1)[1]
        assert len(facts) <= TABLE_CHARS
        assert c.retrieval_text.startswith("表格：退款（第")
    assert sum(c.retrieval_text.count("支付方式: ") for c in chunks) == 12


# -- gazetteer and query features ------------------------------------------------------------


def test_gazetteer_province_of() -> None:
    from knowledge.gazetteer import CITY_TO_PROVINCE, PROVINCE_CITIES, province_of

    assert province_of("哈尔滨") == "黑龙江"
    assert province_of("海口市") == "海南"
    assert province_of("乌鲁木齐") == "新疆"
    assert province_of("北京") == "北京"
    assert province_of("纽约") is None
    # every province-level region is covered and its capital maps back to it
    assert len(PROVINCE_CITIES) == 34
    for capital, province in [("石家庄", "河北"), ("呼和浩特", "内蒙古"), ("南宁", "广西"),
                              ("拉萨", "西藏"), ("银川", "宁夏"), ("西宁", "青海")]:
        assert CITY_TO_PROVINCE[capital] == province


@pytest.mark.parametrize(
    ("query", "regions"),
    [
        ("发哈尔滨要几天", ("黑龙江",)),
        ("寄到海口要几天", ("海南",)),
        ("齐齐哈尔和大连都能次日达吗", ("黑龙江", "辽宁")),
        ("北京下单几天到", ()),  # a municipality names its own region
        ("广州到广东其他城市", ()),  # the region is already named
        ("七天无理由退货", ()),
    ],
)
def test_expand_places(query: str, regions: tuple[str, ...]) -> None:
    from knowledge.gazetteer import expand_places

    assert expand_places(query) == regions


def test_place_terms_are_region_terms() -> None:
    from knowledge.normalize import bm25_terms, place_terms

    assert place_terms("发哈尔滨要几天") == tuple(bm25_terms("黑龙江"))
    assert "黑龙江" in place_terms("發哈爾濱要幾天")  # traditional spelling meets too
    assert place_terms("运费险怎么赔") == ()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("旧版价保的差价退到哪里", True),
        ("2024版运费险江浙沪赔付多少", True),
        ("价保按旧规则怎么算", True),
        ("以前的政策是几天", True),
        ("以旧换新补贴多少", False),
        ("以前的手机号停用了 怎么换绑", False),
        ("原来那张银行卡注销了 退款退到哪", False),
    ],
)
def test_asks_for_old_version(query: str, expected: bool) -> None:
    from knowledge.normalize import asks_for_old_version

    assert asks_for_old_version(query) is expected


def test_plain_markdown_without_front_matter_is_ingested(tmp_path):
    from knowledge.loaders import load_file

    path = tmp_path / "return-faq.md"
    path.write_text("# 退货常见问题\n\n## 运费\n\n退货运费由买家承担。\n", encoding="utf-8")
    docs, skipped = load_file(path)
    assert skipped == []
    assert [d.doc_id for d in docs] == ["return-faq"]
    assert docs[0].title == "退货常见问题"
