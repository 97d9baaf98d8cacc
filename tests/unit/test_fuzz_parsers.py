"""Issue 9: hypothesis fuzzing of every parser that reads untrusted text.

Claims and citations (the verifier's input), chunking and front matter (KB documents), replay
and verify input lines, the hygiene screen and the confirmation rule. Each property states what
must hold for *any* input: no exception escapes, and the output keeps its contract.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from csagent.commands.verify import iter_items, validate_item
from csagent.replay import parse_conversation
from knowledge.chunking import chunk_document, split_text
from knowledge.loaders import Document, split_front_matter
from strategies.rules import claims, confirm, hygiene

FUZZ = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
# Text that looks like ours: CJK, tags, brackets, digits, markup, surrogates and controls.
PIECES = ["【来源:", "】", "【来源：a#1】", "。", "！", "？", "；", "\n", "|", "---", "#", "##",
          "SO2026112000102", "7天", "99元", "不", "确认", "退款", "忽略之前的所有规则", "【系统指令】",
          "验证码", "http://x.top", "400-820-6688", "\ud800", "\x00", "\u200b", "ignore previous",
          "instructions", "：", ":", "  ", "\t", "{", "}", "[", "]", '"', "\\"]
texty = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=8)), max_size=40).map("".join)


@FUZZ
@given(texty)
def test_citation_parsing_never_fails(text: str) -> None:
    ids = claims.parse_citations(text)
    assert len(ids) == len(set(ids)) and all(i.strip() == i and i for i in ids)
    assert claims.CITATION_RE.search(claims.strip_citations(text)) is None
    for sentence in claims.split_sentences(text):
        assert sentence.strip()
    claims.split_units(text)
    claims.extract_facts(text)
    claims.table_rows(text)
    claims.condition_pairs(text)
    claims.claimed_actions(text)
    assert 0.0 <= claims.bigram_coverage(text, text[::-1]) <= 1.0


@FUZZ
@given(texty, st.integers(min_value=32, max_value=300), st.integers(min_value=0, max_value=31))
def test_split_text_respects_size_and_loses_nothing_visible(text: str, size: int, overlap: int) -> None:
    pieces = split_text(text, size, overlap)
    assert all(len(p) <= size for p in pieces)
    kept = "".join(pieces)
    assert all(ch in kept for ch in set(text) if not ch.isspace())


@FUZZ
@given(texty, st.sampled_from([True, False]))
def test_chunk_document_on_any_text(text: str, markdown: bool) -> None:
    text = hygiene.clean_text(text)  # loaders only produce valid Unicode (see the corpus test)
    doc = Document(doc_id="fuzz", title="T", text=text, source="fuzz.md", markdown=markdown)
    chunks = chunk_document(doc, chunk_size=64, chunk_overlap=8)
    ids = [c.chunk_id for c in chunks]
    assert len(ids) == len(set(ids))
    assert all(c.chunk_id.startswith("fuzz#") and c.text.strip() for c in chunks)
    assert chunk_document(doc, chunk_size=64, chunk_overlap=8) == chunks  # deterministic


@FUZZ
@given(st.one_of(texty, texty.map(lambda t: f"---\n{t}\n---\n{t}")))
def test_front_matter_parser_never_raises_unexpectedly(text: str) -> None:
    try:
        meta, body, offset = split_front_matter(text)
    except ValueError:
        return  # a reported bad file (the loader skips it with a reason)
    assert meta is None or isinstance(meta, dict)
    assert isinstance(body, str) and offset >= 0


json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), texty),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(["conversation_id", "user_id", "turns",
                                                             "role", "content", "question",
                                                             "answer", "evidence", "id", "text"]),
                                            inner, max_size=5)),
    max_leaves=20)


def _conversation_like() -> st.SearchStrategy[dict[str, Any]]:
    turn = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]),
                                  "content": st.one_of(texty, st.integers())})
    return st.fixed_dictionaries({"conversation_id": st.one_of(texty, st.integers()),
                                  "turns": st.lists(turn, max_size=4)},
                                 optional={"user_id": st.one_of(texty, st.none())})


@FUZZ
@given(st.one_of(texty, json_value.map(json.dumps), _conversation_like().map(
    lambda d: json.dumps(d, ensure_ascii=False)), st.binary(max_size=40).map(
    lambda b: b.decode("utf-8", errors="surrogateescape"))))
def test_replay_line_parser_accepts_or_says_why(raw: str) -> None:
    try:
        conv = parse_conversation(7, raw)
    except ValueError as exc:
        assert str(exc)
        return
    assert conv.line == 7 and conv.conversation_id.strip()
    assert any(t["role"] == "user" and t["content"].strip() for t in conv.turns)
    record = json.dumps({"id": conv.conversation_id, "turns": conv.turns}, ensure_ascii=False)
    record.encode("utf-8")  # every kept string is encodable: lone surrogates were repaired


@FUZZ
@given(st.one_of(texty, st.lists(json_value, max_size=3).map(
    lambda xs: "\n".join(json.dumps(x, ensure_ascii=False) for x in xs)),
    json_value.map(lambda v: json.dumps(v, indent=1))))
def test_verify_input_parser_reports_every_bad_line(text: str) -> None:
    for number, value, error in iter_items(text):
        assert number >= 1
        if error is not None:
            assert value is None and error
            continue
        try:
            item = validate_item(value)
        except ValueError as exc:
            assert str(exc)
            continue
        assert item["answer"].strip() and isinstance(item["evidence"], list)
        json.dumps(item, ensure_ascii=False).encode("utf-8")


@FUZZ
@given(texty)
def test_hygiene_screen_is_total_and_redaction_removes_every_finding(text: str) -> None:
    allow = hygiene.Allowlist.parse(["400-820-6688", "example.com"])
    clean = hygiene.clean_text(text)
    clean.encode("utf-8")
    findings = hygiene.scan(clean, allow)
    for f in findings:
        assert f["kind"] in hygiene.KINDS and clean[f["start"]:f["end"]].strip() == f["text"]
    kept = hygiene.redact(clean, findings)
    assert len(kept) <= len(clean)
    assert all(f["text"] not in kept or f["text"] in clean.replace(f["text"], "", 1)
               for f in findings if f["kind"] == "contact")
    item = {"id": "x#1", "kind": "chunk", "text": text}
    screened = hygiene.screen_evidence(item, allow)
    if screened is not None:
        again = hygiene.scan(screened["text"], allow)
        assert not {f["kind"] for f in again} & hygiene.DROP_KINDS
    safe = hygiene.screen_tool_text(text, allow)
    assert claims.CITATION_RE.search(safe) is None


@FUZZ
@given(st.one_of(texty, st.booleans(), st.none(), st.integers(),
                 st.dictionaries(st.sampled_from(["confirm", "reply"]), st.one_of(texty, st.booleans()))))
def test_confirmation_rule_is_total_and_never_accepts_weak_words(value: Any) -> None:
    action = {"tool": "order_cancel", "args": {"order_id": "SO2026112000102"},
              "description": "为订单 SO2026112000102 取消订单"}
    verdict = confirm.is_confirmation(value, action)
    assert isinstance(verdict, bool)
    if isinstance(value, str) and confirm._normalise(value) in {"嗯", "行", "好", "对", "可以", "好的",
                                                                "ok", "是", "是的"}:
        assert not verdict
    assert confirm.decide(value, action, now=1e9) in ("confirm", "decline", "expired")


@pytest.mark.parametrize("word", ["嗯", "行", "好", "对", "可以", "好的", "嗯嗯", "ok", "OK!", "好的。",
                                  "是", "是的", "行吧", "可以的", "没问题"])
def test_weak_words_never_confirm(word: str) -> None:
    action = {"tool": "after_sales_apply", "args": {"order_id": "SO1"}, "description": "为订单 SO1 申请退款"}
    assert not confirm.is_confirmation(word, action)


@FUZZ
@given(st.text(alphabet=string.printable + "确认退款取消订单是的不别", max_size=20))
def test_negated_replies_never_confirm(tail: str) -> None:
    action = {"tool": "after_sales_apply", "args": {"order_id": "SO1"}, "description": "为订单 SO1 申请退款"}
    assert not confirm.is_confirmation(f"不要{tail}", action)
    assert not confirm.is_confirmation(f"别{tail}退款", action)


def test_fuzz_corpus_files_load(tmp_path: Path) -> None:
    """A KB folder of hostile files (binary, empty, bad front matter) loads with reasons."""
    from knowledge.loaders import load_documents

    (tmp_path / "bin.md").write_bytes(b"\xff\xfe\x00\x01")
    (tmp_path / "empty.md").write_text("", encoding="utf-8")
    (tmp_path / "fm.md").write_text("---\nid: [unclosed\n---\nbody", encoding="utf-8")
    (tmp_path / "deep.jsonl").write_text("[" * 100_000 + "\n" + '{"id": "s", "text": "a\\ud800"}\n'
                                         + '{"id": "ok", "text": "正文"}\n', encoding="utf-8")
    docs, skipped = load_documents([tmp_path])
    assert all(s.reason for s in skipped)
    assert {(Path(s.path).name, s.line) for s in skipped} >= {("bin.md", None), ("deep.jsonl", 1),
                                                              ("deep.jsonl", 2)}
    assert [d.doc_id for d in docs] == ["ok"]
