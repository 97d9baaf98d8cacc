"""Tracing: masking, trace records built from node updates, atomic write, read and render."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from csagent import tracing
from csagent.errors import UsageError


@pytest.fixture(autouse=True)
def _known_names():
    tracing.set_known_names(["张伟", "李娜"])
    yield
    tracing.set_known_names(None)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("我的手机是13812345678，请回电", "13812345678"),
        ("电话 139-1234-5678", "1234"),
        ("收货地址：浙江省杭州市西湖区文三路100号3栋501室", "文三路"),
        ("寄到上海市浦东新区张江路88号", "张江路88号"),
        ("地址是北京市朝阳区", "朝阳区"),
        ("我是张伟，订单还没到", "张伟"),
        ("收货人：王小明", "王小明"),
    ],
)
def test_mask_text_hides_personal_data(text: str, secret: str) -> None:
    masked = tracing.mask_text(text)
    assert secret not in masked
    assert masked != text


@pytest.mark.parametrize(
    "text",
    [
        "订单SO2026110100123已发货",
        "新疆、西藏等偏远地区不包邮，7天无理由退货",
        "Plus会员满99元包邮",
        "退款金额￥1999.00将在3个工作日内原路退回",
    ],
)
def test_mask_text_keeps_policy_text_and_order_ids(text: str) -> None:
    assert tracing.mask_text(text) == text


def test_mask_phone_keeps_prefix_and_suffix() -> None:
    assert tracing.mask_text("13812345678") == "138****5678"


def test_mask_data_recurses_into_nested_structures() -> None:
    data = {"a": ["张伟 13812345678", {"b": "李娜"}], "n": 3, "ok": True}
    masked = tracing.mask_data(data)
    assert masked == {"a": ["张* 138****5678", {"b": "李*"}], "n": 3, "ok": True}


def test_mask_data_masks_dictionary_keys_and_sets() -> None:
    """A term-weight map is keyed by the customer's own words (a phone number, a name)."""
    masked = tracing.mask_data({"answer_terms": {"13812345678": 1.0, "退货": 0.5}, "grams": {"张伟"}})
    dumped = str(masked)
    assert "13812345678" not in dumped and "138****5678" in dumped and "退货" in dumped
    assert masked["answer_terms"]["138****5678"] == 1.0


def test_new_trace_id_is_otel_compatible() -> None:
    ids = {tracing.new_trace_id() for _ in range(50)}
    assert len(ids) == 50
    for trace_id in ids:
        assert len(trace_id) == 32 and int(trace_id, 16) != 0


def _updates() -> list[tuple[str, dict, float]]:
    chunk = {"id": "returns#aa11bb22", "kind": "chunk", "doc_id": "returns", "text": "7天无理由退货",
             "scores": {"bm25": 3.2, "dense": 0.88, "fused": 0.71}}
    chunk2 = {"id": "plus#cc33dd44", "kind": "chunk", "doc_id": "plus", "text": "Plus会员",
              "scores": {"bm25": 1.0, "dense": 0.84, "fused": 0.52}}
    reranked = [dict(chunk, scores={**chunk["scores"], "rerank": 0.93})]
    verification = {"overall": "pass", "claims": [
        {"claim": "支持7天无理由退货", "status": "supported", "evidence_ids": ["returns#aa11bb22"],
         "reason": ""}]}
    return [
        ("route_boundary", {"route": "answer", "confidence": 0.91, "intent": "policy"}, 2.0),
        ("rewrite_query", {"queries": ["退货政策", "7天无理由"]}, 1.5),
        ("retrieve_hybrid", {"evidence": [{"id": "__reset__"}, chunk, chunk2]}, 20.0),
        ("rerank_evidence", {"evidence": reranked}, 5.0),
        ("generate_answer", {"draft": "支持7天无理由退货【来源:returns#aa11bb22】"}, 3.0),
        ("verify_answer", {"verification": {"overall": "fail", "claims": []}}, 1.0),
        ("reflect", {"feedback": ["删掉无依据的数字"], "reflections": 1}, 0.5),
        ("generate_answer", {"draft": "支持7天无理由退货【来源:returns#aa11bb22】"}, 2.5),
        ("verify_answer", {"verification": verification, "status": "answered",
                           "answer": "支持7天无理由退货【来源:returns#aa11bb22】"}, 1.0),
    ]


def test_build_trace_record_reads_every_section() -> None:
    record = tracing.build_trace_record(
        trace_id="t" * 32, thread_id="th1", user_id="u1001", question="能退货吗",
        updates=_updates(), final_state={"status": "answered", "fail_reason": None,
                                         "citations": [{"id": "returns#aa11bb22"}], "reflections": 1},
    )
    assert record["boundary"] == {"route": "answer", "confidence": 0.91, "intent": "policy"}
    assert record["queries"] == ["退货政策", "7天无理由"]
    assert [r["id"] for r in record["retrieval"]] == ["returns#aa11bb22", "plus#cc33dd44"]
    assert record["retrieval"][0]["bm25"] == 3.2 and record["retrieval"][0]["dense"] == 0.88
    assert record["retrieval"][1]["fused"] == 0.52
    assert record["rerank"] == [{"id": "returns#aa11bb22", "score": 0.93}]
    assert record["context"]["ids"] == ["returns#aa11bb22"]
    assert record["context"]["digest"].startswith("sha256:")
    assert len(record["generations"]) == 2
    assert record["verification"]["overall"] == "pass"
    assert [v["overall"] for v in record["verification_rounds"]] == ["fail", "pass"]
    assert record["reflections"] == {"count": 1, "feedback": ["删掉无依据的数字"]}
    assert record["status"] == "answered"
    assert record["latency_ms"]["generate_answer"] == pytest.approx(5.5)
    assert record["total_latency_ms"] == pytest.approx(36.5)
    json.dumps(record)


def test_build_trace_record_tolerates_missing_keys_and_interrupts() -> None:
    payload = {"type": "confirm", "action": {"tool": "order_cancel"}, "prompt": "确认取消吗？"}
    record = tracing.build_trace_record(
        trace_id="a" * 32, thread_id="th", user_id="u", question="取消订单",
        updates=[("route_boundary", {}, 1.0), ("__interrupt__", [type("I", (), {"value": payload})()], 0.0),
                 ("weird", None, 0.0)],  # type: ignore[list-item]
        final_state=None,
    )
    assert record["status"] == "needs_confirmation"
    assert record["interrupt"] == payload
    assert record["retrieval"] == [] and record["verification"] is None


def test_context_digest_changes_with_text() -> None:
    a = tracing.build_trace_record(trace_id="b" * 32, thread_id="t", user_id="u", question="q",
                                   updates=[("retrieve", {"evidence": [{"id": "x", "text": "1"}]}, 1)],
                                   final_state={})
    b = tracing.build_trace_record(trace_id="b" * 32, thread_id="t", user_id="u", question="q",
                                   updates=[("retrieve", {"evidence": [{"id": "x", "text": "2"}]}, 1)],
                                   final_state={})
    assert a["context"]["ids"] == b["context"]["ids"] == ["x"]
    assert a["context"]["digest"] != b["context"]["digest"]


def test_write_trace_masks_and_reads_back(tmp_path: Path) -> None:
    record = tracing.build_trace_record(
        trace_id=tracing.new_trace_id(), thread_id="th", user_id="u1001",
        question="我是张伟，手机13812345678，寄到杭州市西湖区文三路100号",
        updates=_updates(), final_state={"answer": "张伟您好，已为您查询"},
    )
    path = tracing.write_trace(tmp_path, record)
    assert path == tmp_path / f"{record['trace_id']}.jsonl"
    raw = path.read_text(encoding="utf-8")
    assert raw.count("\n") == 1
    for secret in ("张伟", "13812345678", "文三路"):
        assert secret not in raw
    assert list(tmp_path.iterdir()) == [path]  # no temporary files left behind
    back = tracing.read_trace(tmp_path, record["trace_id"][:8])
    assert back["trace_id"] == record["trace_id"]
    text = tracing.render_trace(back)
    assert "[boundary] route=answer" in text and "returns#aa11bb22" in text
    assert "status: answered" in text and "138****5678" in text


def test_read_trace_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no trace"):
        tracing.read_trace(tmp_path, "deadbeef")
    with pytest.raises(UsageError, match="invalid trace id"):
        tracing.read_trace(tmp_path, "../etc/passwd")
    (tmp_path / "abcd1111.jsonl").write_text('{"trace_id": "abcd1111"}\n', encoding="utf-8")
    (tmp_path / "abcd2222.jsonl").write_text("not json\n", encoding="utf-8")
    with pytest.raises(UsageError, match="ambiguous"):
        tracing.read_trace(tmp_path, "abcd")
    with pytest.raises(UsageError, match="unreadable"):
        tracing.read_trace(tmp_path, "abcd2222")


def test_callbacks_empty_without_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LANGFUSE_PUBLIC_KEY", raising=False)
    monkeypatch.delenv("LANGFUSE_SECRET_KEY", raising=False)
    assert tracing.callbacks_for_turn(user_id="u", thread_id="t", trace_id="c" * 32) == []


def test_boundary_node_decision_wins_over_turn_reset() -> None:
    record = tracing.build_trace_record(
        trace_id="d" * 32, thread_id="t", user_id="u", question="头孢能喝酒吗",
        updates=[("start_turn", {"route": "answer", "confidence": 0.0, "evidence": "__reset__"}, 1.0),
                 ("route_boundary", {"route": "refuse", "confidence": 0.97,
                                     "boundary_reason": "medical"}, 1.0),
                 ("refuse_request", {"status": "refused", "fail_reason": "out_of_scope"}, 1.0)],
        final_state={"status": "refused", "fail_reason": "out_of_scope"})
    assert record["boundary"] == {"route": "refuse", "confidence": 0.97, "boundary_reason": "medical"}
    assert record["status"] == "refused" and record["fail_reason"] == "out_of_scope"
    assert record["retrieval"] == [] and record["context"]["ids"] == []


def test_trace_command_prints_readable_and_json(tmp_path: Path, capsys) -> None:
    from csagent.cli import main

    record = tracing.build_trace_record(trace_id=tracing.new_trace_id(), thread_id="th", user_id="u1001",
                                        question="能退货吗", updates=_updates(), final_state={})
    tracing.write_trace(tmp_path, record)
    assert main(["trace", record["trace_id"][:10], "--traces-dir", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"trace {record['trace_id']}") and "[verification] overall=pass" in text
    assert main(["trace", record["trace_id"], "--json", "--traces-dir", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["queries"] == ["退货政策", "7天无理由"]
    assert main(["trace", "ffffffff", "--traces-dir", str(tmp_path)]) == 2
    assert "no trace 'ffffffff'" in capsys.readouterr().err


def test_the_gate_decision_behind_a_draft_is_in_the_trace_and_its_rendering() -> None:
    gate = {"slot": "amount", "subject": ["押金"], "anchors": ["押金"], "qualifiers": {"tier": ["学生"]},
            "answerable": False, "parts_covered": [], "reason": "",
            "units": [{"id": "deposit#1@0", "answers": False, "reason": "qualifier conflict", "fillers": ["200元"],
                       "found": ["押金"], "missing": [], "conflicts": {"tier": ["教师"]}}]}
    updates = [*_updates()[:4], ("generate_answer", {"draft": "当前知识库中没有找到相关信息。", "gate": gate}, 3.0)]
    record = tracing.build_trace_record(trace_id="c" * 32, thread_id="t", user_id="u", question="学生押金多少",
                                        updates=updates, final_state={"status": "refused"})
    assert record["generations"][-1]["gate"] == gate
    text = tracing.render_trace(record)
    assert "[gate] slot=amount subject=押金" in text
    assert "- deposit#1@0  qualifier conflict  found=押金  missing=-" in text and '"教师"' in text
    plain = tracing.build_trace_record(trace_id="d" * 32, thread_id="t", user_id="u", question="能退货吗",
                                       updates=_updates(), final_state={})
    assert all("gate" not in g for g in plain["generations"])  # no gate ran: nothing invented


def test_gate_terms_cut_from_a_personal_question_are_masked(tmp_path: Path) -> None:
    question = "我是张伟，手机13812345678，七天无理由退货的运费谁承担？"
    gate = {"slot": "person_org", "subject": ["张伟", "手机", "运费"], "anchors": ["运费"], "qualifiers": {},
            "answerable": False, "parts_covered": [], "reason": "",
            "units": [{"id": "r#1@0", "answers": False, "reason": "subject not bound", "fillers": [],
                       "found": ["运费"], "missing": ["张伟", "13812345678"], "conflicts": {}}]}
    record = tracing.build_trace_record(
        trace_id="e" * 32, thread_id="t", user_id="u", question=question,
        updates=[("generate_answer", {"draft": "当前知识库中没有找到相关信息。", "gate": gate}, 1.0)],
        final_state={})
    raw = tracing.write_trace(tmp_path, record).read_text(encoding="utf-8")
    assert "张伟" not in raw and "13812345678" not in raw
    masked = record["generations"][0]["gate"]
    assert masked["subject"] == ["张*", "手机", "运费"] and masked["units"][0]["found"] == ["运费"]
