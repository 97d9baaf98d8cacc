"""Claim binding: a claim's value is supported only by a unit that also carries its subject."""

from __future__ import annotations

from typing import Any

from strategies.rules.answerability import evidence_units
from strategies.rules.binding import (
    attribution_problems,
    binding,
    claim_binding,
    comparator_conflicts,
    displaced_values,
    field_problems,
    fields,
    record_of,
    supporting_units,
    tool_field_supports,
    value_kind,
    value_role_problems,
    value_tokens,
)
from strategies.rules.question import analyze_question, build_vocabulary

KB: list[dict[str, Any]] = [
    {"id": "refund#1", "doc_id": "refund", "title": "退款到账时间", "heading_path": ["到账时间"],
     "text": "| 支付方式 | 到账时间 |\n|---|---|\n| 支付宝 | 1-3个工作日 |\n| 信用卡 | 3-15个工作日 |"},
    {"id": "returns#1", "doc_id": "returns", "title": "七天无理由退货", "heading_path": ["申请期限"],
     "text": "商品签收后7天内可以申请无理由退货。退货运费由买家承担。"},
]


def test_binding_needs_value_and_subject_in_one_unit() -> None:
    units = evidence_units(KB)
    assert binding(["支付宝"], "1-3个工作日", units) is not None
    assert binding(["支付宝"], "3-15个工作日", units) is None
    assert binding([], "7天", units) is not None


def test_claim_binding_flags_a_swapped_value() -> None:
    evidence = [{"id": "s#1", "text": "普通会员实付满99元包邮，新疆、西藏满199元。", "title": "运费"}]
    units = evidence_units(evidence)
    assert claim_binding("新疆满199元包邮【来源:s#1】", units) == []
    assert claim_binding("新疆满99元包邮【来源:s#1】", units)
    assert claim_binding("满99元包邮", units) == []


def test_supporting_units_prefer_the_exact_row() -> None:
    units = evidence_units(KB[:1])
    support = supporting_units("支付方式：支付宝，到账时间：1-3个工作日【来源:refund#1】。", units)
    assert [u.id for u in support] == ["refund#1@0"]


def test_tool_value_must_come_from_the_named_field() -> None:
    record = {"signed_at": "2026-11-20 10:00", "created_at": "2026-11-22 09:00"}
    labels = {"signed_at": "签收时间", "created_at": "申请时间"}
    assert tool_field_supports("签收时间", "2026-11-20", record, labels)
    assert not tool_field_supports("签收时间", "2026-11-22", record, labels)


def test_claim_binding_flags_a_value_of_another_predicate() -> None:
    evidence = [{"id": "m#1", "text": "普通会员实付满99元包邮，不满收取8元运费。", "title": "包邮"}]
    units = evidence_units(evidence)
    assert claim_binding("不满99元收取8元运费【来源:m#1】", units) == []
    assert claim_binding("实付满8元包邮【来源:m#1】", units)
    row = evidence_units([{"id": "t#1", "text": "| 地区 | 时效 |\n|---|---|\n| 华东 | 1-2天 |"}])
    assert claim_binding("华东标准配送时效1-2天", row) == []  # a row's header is a column away


# --------------------------------------------------------------------------- value roles

RECORD = ("订单号：AB123，下单时间：2026-01-02 10:00:00，发货时间：2026-01-03 09:30:00\n"
          "商品金额：96元，运费：0元，优惠：8元，金额：88元，最新动态：2026-01-05 08:00:00 已签收")
TOOL = [{"id": "tool:x#1", "kind": "tool", "title": "x", "text": RECORD}]
FEES = [{"id": "f#1", "title": "寄回费用", "text": "| 线路 | 费用 |\n|---|---|\n| 省内 | 6元 |\n| 省外 | 9元 |"}]


def test_value_kind_and_tokens() -> None:
    assert value_kind("3-15工作日") == "工作日"
    assert value_kind("2026-01-02") == "date" and value_kind("8:30") == "clock"
    assert value_tokens("满 99 元，包邮") == value_tokens("满99元包邮") == ["满", "\x01元\x0199元", "包", "邮"]
    assert value_tokens("花呗额度")[0] == "\x01q:payment\x01花呗"


def test_displaced_value_restated_from_another_clause() -> None:
    evidence = ["超过3天未发货可申请赔付；超过7天未发货可直接取消订单。"]
    assert displaced_values("超过3天未发货可直接取消订单", evidence) == [("3天", "7天")]
    assert displaced_values("超过7天未发货可直接取消订单", evidence) == []
    assert displaced_values("超过5天未发货可直接取消订单", evidence) == []  # absent: presence checks


def test_displaced_value_from_another_row() -> None:
    rows = ["线路:省内,费用:6元", "线路:省外,费用:9元"]
    assert displaced_values("线路省外的费用为6元", rows) == [("6元", "9元")]
    assert displaced_values("线路省外的费用为9元", rows) == []


def test_displaced_qualifier_word() -> None:
    evidence = ["花呗订单取消后恢复花呗额度；银行卡订单取消后退回银行卡账户。"]
    assert displaced_values("银行卡订单取消后恢复花呗额度", evidence) == [("银行卡", "花呗")]
    assert displaced_values("花呗订单取消后恢复花呗额度", evidence) == []


def test_comparator_must_not_be_reversed() -> None:
    evidence = ["5件及以下免运费，6件及以上每件加收2元。"]
    assert comparator_conflicts("5件及以上每件加收2元", evidence) == ["5件及以上"]
    assert comparator_conflicts("6件及以上每件加收2元", evidence) == []
    assert comparator_conflicts("买5件免运费", evidence) == []


def test_fields_run_to_the_next_label() -> None:
    parsed = [(label, value) for _, _, label, value in fields("手续费:3期2%,6期4%,最低金额:100元")]
    assert parsed == [("手续费", "3期2%,6期4%"), ("最低金额", "100元")]
    assert record_of("时间：2026-01-02 10:00:00，状态：已签收") == {"时间": ["2026-01-02 10:00:00"], "状态": ["已签收"]}


def test_tool_value_must_sit_under_the_claimed_label() -> None:
    units = evidence_units(TOOL, include_tools=True)
    assert field_problems("金额:88元", units) == []
    assert field_problems("金额:0元", units)  # the shipping fee's value
    assert field_problems("金额:96元", units)  # the goods amount's: an exact label exists
    assert field_problems("最新动态:2026-01-03 08:00:00 已签收", units)
    assert field_problems("最新动态:2026-01-05 08:00:00 已签收", units) == []
    assert field_problems("退款金额:88元", units) == []  # a label the record lacks: not judged here


def test_row_fields_must_come_from_one_row() -> None:
    units = evidence_units(FEES)
    assert field_problems("线路:省外,费用:9元", units) == []
    assert field_problems("线路:省外,费用:6元", units)


def test_tool_field_supports_lists_and_digit_boundaries() -> None:
    record = {"金额": ["172元"], "运费": ["0元", "2元"]}
    assert not tool_field_supports("金额", "72元", record)
    assert tool_field_supports("运费", "2元", record)
    assert tool_field_supports("金额", "172 元", record)


def test_claim_binding_reports_value_roles_for_tools() -> None:
    units = evidence_units(TOOL, include_tools=True)
    assert claim_binding("订单号：AB123，金额：88元【来源:tool:x#1】", units) == []
    assert claim_binding("订单号：AB123，金额：0元【来源:tool:x#1】", units)
    assert claim_binding("发货时间：2026-01-05 09:30:00【来源:tool:x#1】", units)


def test_a_bound_qualifier_outweighs_shared_wording() -> None:
    units = evidence_units([{"id": "s#1", "text": "普通会员实付满99元包邮，新疆、西藏满199元。"}])
    assert value_role_problems("新疆满199元包邮", units) == []
    assert value_role_problems("实付满199元包邮", units)


def test_governor_is_not_the_end_of_a_longer_word() -> None:
    units = evidence_units([{"id": "c#1", "text": "公司在三个城市设有4个门店，每个门店营业到21:00。"}])
    assert claim_binding("公司4个门店都营业到21:00", units) == []


def test_governor_is_read_past_linking_words_in_the_evidence_too() -> None:
    units = evidence_units([{"id": "c#1", "text": "满199元的订单减最多20元，单台最高100元。"}])
    assert claim_binding("单台最高100元", units) == []  # verbatim: 「台」 governs 100元 there too
    assert claim_binding("满199元的订单减最多20元", units) == []
    assert claim_binding("满199元的订单返最多20元", units)  # another governor


def test_attribution_checks_every_supporting_unit() -> None:
    vocab = build_vocabulary([["退货", "跨境商品"], ["退货", "国内商品"]], ["签收后7天内可以退货。"])
    evidence = [{"id": "a#1", "title": "退货", "heading_path": ["跨境商品"], "text": "签收后7天内可以退货。"},
                {"id": "b#1", "title": "退货", "heading_path": ["国内商品"], "text": "签收后7天内可以退货。"}]
    units = evidence_units(evidence)
    question = analyze_question("跨境商品几天内可以退货", vocab=vocab)
    assert attribution_problems(question, units[:1], vocab) == []
    assert attribution_problems(question, units, vocab)  # the second unit is the domestic rule
    assert attribution_problems(question, units[1:], None) == []  # no vocabulary: no regime dimension


def test_a_unit_that_excepts_the_asked_region_does_not_support_a_claim_for_it() -> None:
    units = evidence_units([{"id": "a#1", "title": "售后手册", "text": "大陆地区（海南、西藏除外）上门维修费50元。"},
                            {"id": "b#1", "title": "售后手册", "text": "海南、西藏上门维修费80元。"}])
    question = analyze_question("海南上门维修费多少钱")
    assert attribution_problems(question, units[:1]) == ["资料属于其他适用范围（海南除外）"]
    assert attribution_problems(question, units[1:]) == []
    assert attribution_problems(analyze_question("西安上门维修费多少钱"), units[:1]) == []
