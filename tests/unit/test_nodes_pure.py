"""Pure helpers: normalisation, citations, fact extraction, risk rules, facts, LLM parsing, prompts."""

from __future__ import annotations

import re
import string

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from csagent.errors import UsageError
from graph.state import EVIDENCE_RESET, reduce_evidence
from shop.decls import REGISTRY
from strategies.llm import prompts
from strategies.llm.structured import logprob_confidence, parse_json_loosely
from strategies.rules.answer import sentence_units
from strategies.rules.claims import (
    NumberToken,
    claimed_actions,
    condition_pairs,
    extract_facts,
    number_supported,
    parse_citations,
    render_table_row,
    split_sentences,
    split_units,
    table_rows,
)
from strategies.rules.evidence import (
    mark_conflicts,
    render_evidence,
    render_tool_facts,
    tool_observation,
)
from strategies.rules.facts import is_elliptical, relevant_facts, render_fact, user_stated_facts
from strategies.rules.normalize import cn_to_int, normalize_for_compare
from strategies.rules.profiles import load_profile
from strategies.rules.rewrite import expand_query
from strategies.rules.risk import detect_action, find_order_id, is_explicit_yes, is_how_to
from strategies.rules.tools import parse_max_price

SPEC = {spec.name: spec for spec in REGISTRY.specs()}  # the demo tools' declarations


@pytest.mark.parametrize(("raw", "expected"), [
    ("七天无理由退货", "7天无理由退货"), ("十五天内", "15天内"), ("¥99.00", "99元"),
    ("１５％", "15%"), ("百分之五", "5%"), ("3至7个工作日", "3-7工作日"),
    ("2026年1月5日起", "2026-01-05起"), ("1月5日", "01-05"), ("7日内", "7天内"),
    ("每月1日", "每月1日"), ("一些问题", "一些问题"), ("新疆维吾尔自治区", "新疆"), ("正月初七", "正月初7"),
])
def test_normalize_for_compare(raw, expected):
    assert normalize_for_compare(raw) == expected
    assert normalize_for_compare(expected) == expected  # idempotent


def test_cn_to_int():
    assert [cn_to_int(t) for t in ("七", "十五", "三十", "一百零五", "两")] == [7, 15, 30, 105, 2]
    assert cn_to_int("些") is None


def test_citations_and_sentences():
    text = "运费由买家承担【来源:a#1】。支付宝1-3个工作日到账【来源:tool:x#1, b#2】。请问还有什么可以帮您？"
    sentences = split_sentences(text)
    assert len(sentences) == 3
    assert [parse_citations(s) for s in sentences] == [["a#1"], ["tool:x#1", "b#2"], []]
    # A tag after the full stop stays with its sentence.
    assert parse_citations(split_sentences("运费由买家承担。【来源:a#1】")[0]) == ["a#1"]


def test_extract_facts():
    facts = extract_facts("新疆、西藏满¥99包邮，Plus会员价保，订单SO2026110100123已发货，2026年1月1日起，5%")
    assert NumberToken("99", None, "元") in facts.numbers and NumberToken("5", None, "%") in facts.numbers
    assert facts.order_ids == ["SO2026110100123"] and facts.states == ["已发货"]
    assert set(facts.regions) == {"新疆", "西藏"} and facts.tiers == ["PLUS会员"]
    assert facts.dates == ["2026-01-01"] and "价保" in facts.terms


def test_number_supported_ranges_and_units():
    ev = extract_facts("支付宝1-3个工作日到账，银行卡3-7个工作日").numbers
    assert number_supported(NumberToken("1", "3", "工作日"), ev)
    assert number_supported(NumberToken("3", None, "工作日"), ev)
    assert not number_supported(NumberToken("1", "3", "天"), ev)
    assert not number_supported(NumberToken("2", "3", "工作日"), ev)


def test_condition_pairs_and_claimed_actions():
    assert condition_pairs("定制商品不支持7天无理由退货，无需寄回") == [(True, "支持"), (True, "需要")]
    assert (True, "可以") in condition_pairs("不能退")
    assert claimed_actions("已为您提交退款申请") and claimed_actions("我已经帮您修改了地址")
    assert not claimed_actions("订单状态为已取消") and not claimed_actions("取消成功后1小时内发起退款")


def test_split_units_and_table_rows():
    text = "时效说明。\n| 地区 | 时效 |\n|---|---|\n| 新疆 | 5-7天 |"
    assert split_units(text) == ["时效说明。", "地区：新疆，时效：5-7天"]
    assert sentence_units(text) == ["时效说明。", "地区：新疆，时效：5-7天"]
    assert render_table_row(["a", "b"], ["1", "2"]) == "a：1，b：2"
    assert [r.key for r in table_rows(text)] == ["新疆"]


def test_reduce_evidence_dedup_and_reset():
    merged = reduce_evidence([{"id": "a", "v": 1}], [{"id": "a", "v": 2}, {"id": "b"}])
    assert merged == [{"id": "a", "v": 2}, {"id": "b"}]
    assert reduce_evidence(merged, EVIDENCE_RESET) == []
    assert reduce_evidence(merged, [{"id": EVIDENCE_RESET}, {"id": "c"}]) == [{"id": "c"}]


def test_render_evidence_marks_superseded_and_conflicts():
    items = mark_conflicts([
        {"id": "new#1", "kind": "chunk", "doc_id": "new", "title": "新", "text": "30天价保",
         "heading_path": ["价保期限"], "superseded": False},
        {"id": "other#1", "kind": "chunk", "doc_id": "other", "title": "另", "text": "15天价保",
         "heading_path": ["价保期限"], "superseded": False},
        {"id": "old#1", "kind": "chunk", "doc_id": "old", "title": "旧", "text": "7天价保",
         "superseded": True},
        {"id": "tool:order_lookup#1", "kind": "tool", "title": "order_lookup", "text": "订单状态：运输中"},
    ])
    rendered = render_evidence(items)
    assert rendered.index("tool:order_lookup#1") < rendered.index("new#1")  # tools first
    assert "已失效的旧版本" in rendered.split('id="old#1"')[1].split("</evidence>")[0]
    assert "存在冲突" in rendered.split('id="new#1"')[1].split("</evidence>")[0]


def test_tool_rendering():
    ok = {"code": 0, "valid": True, "source": "order_lookup", "timestamp": 0.0, "message": "已查询到订单",
          "data": {"order_id": "SO1", "status": "运输中", "amount": 1000.0, "user_id": "u1"}}
    lines = render_tool_facts("order_lookup", ok, spec=SPEC["order_lookup"])
    # the asked (default: status) field first, every other field once, no repeated summary message
    assert lines == ["订单 SO1，订单状态：运输中", "金额：1000元"]
    asked = render_tool_facts("order_lookup", ok, question="SO1多少钱", spec=SPEC["order_lookup"])
    assert asked[0] == "订单 SO1，金额：1000元" and "运输中" in asked[1] and "1000" not in asked[1]
    failed = {"code": 500, "valid": False, "source": "logistics_tracking", "timestamp": 0.0,
              "message": "系统繁忙", "data": None}
    assert tool_observation("logistics_tracking", failed, SPEC["logistics_tracking"]) == "物流信息查询失败：系统繁忙"
    missing = dict(failed, code=404, message="")
    assert tool_observation("order_lookup", missing, SPEC["order_lookup"]).startswith("未查询到订单")


def test_risk_rules():
    shop = load_profile("shop")
    assert find_order_id("订单 so2026110100123 呢") == "SO2026110100123"
    assert detect_action("帮我改一下收货地址", shop)["intent"] == "change_address"
    assert detect_action("我的订单SO2026112500103到哪了", shop)["intent"] == "logistics"
    assert is_how_to("退款怎么申请", shop["how_to_markers"])
    assert not is_how_to("帮我申请退款吗", shop["how_to_markers"])
    assert parse_max_price("200元以内的耳机") == 200.0
    for yes in ("yes", "确认", True, {"confirm": True}, " 好的。"):
        assert is_explicit_yes(yes)
    for no in ("no", "算了", False, {"confirm": False}, "确认一下再说", None, 1):
        assert not is_explicit_yes(no)


def test_profiles_load_and_fail_clearly(tmp_path):
    assert load_profile("kb-only")["whitelist_mode"] == "kb_coverage"
    with pytest.raises(UsageError, match="not found"):
        load_profile("nope")
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    with pytest.raises(UsageError, match="lacks keys"):
        load_profile(str(bad))


def test_fact_carry_forward_uses_customer_words_only():
    assert {f["kind"] for f in user_stated_facts("我是Plus会员，在新疆，用支付宝付的 SO2026110100123")} == \
        {"order_id", "tier", "region", "payment"}
    known = [{"kind": "region", "value": "新疆", "source": "user"},
             {"kind": "order_id", "value": "SO1", "source": "tool:order_lookup"}]
    assert [render_fact(f) for f in relevant_facts("几天能到？", known, [])] == ["地区：新疆（客户陈述）"]
    assert [render_fact(f) for f in relevant_facts("上海几天能到？", known, [])] == []  # the question overrides
    history = [HumanMessage("江浙沪几天到"), AIMessage("（助手的话不会被带入）")]
    assert is_elliptical("那新疆呢？")
    assert [render_fact(f) for f in relevant_facts("那新疆呢？", known, history)][-1] == "上一个问题：江浙沪几天到"


def test_expand_query_keeps_original_first():
    queries = expand_query("七天无理由退货运费谁掏", [])
    assert queries[0] == "七天无理由退货运费谁掏"
    assert "退货运费" in queries[1] and "承担" in queries[1]
    assert expand_query("价保", []) == ["价保"]


def test_parse_json_loosely_and_logprobs():
    assert parse_json_loosely('好的：```json\n{"a": 1,}\n```') == {"a": 1}
    assert parse_json_loosely("{'a': 'b'}") == {"a": "b"}
    with pytest.raises(ValueError):
        parse_json_loosely("no json here")
    msg = AIMessage("x", response_metadata={"logprobs": {"content": [{"logprob": 0.0}, {"logprob": 0.0}]}})
    assert logprob_confidence(msg) == 1.0
    assert logprob_confidence(AIMessage("x")) is None


@pytest.mark.parametrize("name", [n for n in dir(prompts) if n.isupper()])
def test_every_prompt_renders_with_all_placeholders(name):
    template = getattr(prompts, name)
    fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
    rendered = template.format(**{f: f"<{f}>" for f in fields})
    assert all(f"<{f}>" in rendered for f in fields)
    assert re.search(r"\{[a-z_]+\}", rendered) is None


def test_ticket_fields_are_not_labelled_as_order_fields():
    from strategies.rules.evidence import render_tool_facts

    result = {"code": 0, "valid": True, "source": "after_sales_apply", "timestamp": 0.0,
              "message": "已提交退货退款申请",
              "data": {"ticket_id": "AS202611290001", "order_id": "SO2026112000102",
                       "status": "待审核", "created_at": "2026-11-29 10:00:00"}}
    text = "\n".join(render_tool_facts("after_sales_apply", result, spec=SPEC["after_sales_apply"]))
    assert "工单状态：待审核" in text and "申请时间：2026-11-29 10:00:00" in text
    assert "订单状态" not in text and "下单时间" not in text


@pytest.mark.parametrize(("question", "fields"), [
    ("SO2026112700204走的哪家快递", ["carrier"]),
    ("我那个SO2026101500101的快递单号是多少", ["tracking_no"]),
    ("SO2026112100403怎么这么慢，到哪了", ["latest"]),
    ("SO2026112000102签收了吗，谁签收的", ["signed_by", "status", "latest"]),
    ("SO2026112800104我是用什么付的钱来着", ["pay_method"]),
    ("SO2026102000201空调是哪天签收的", ["signed_at"]),
    ("SO2026111800302退款到哪一步了", ["status"]),
    ("查一下订单SO2026112500103", []),
])
def test_asked_fields(question, fields):
    from strategies.rules.tools import asked_fields

    assert asked_fields(question) == fields


def test_status_filter_and_order_matching():
    from strategies.rules.tools import match_orders, status_filter

    assert status_filter("我有个订单还没付钱，是哪个") == ("待付款",)
    assert status_filter("我最近有哪些订单还没发货") == ("待发货",)
    assert status_filter("我有没有已经发货还在路上的订单") == ("已发货", "运输中")
    assert status_filter("订单列表") == ()
    orders = [{"order_id": "A", "items": ["静享 Pro 主动降噪蓝牙耳机"]},
              {"order_id": "B", "items": ["老人手机 大字版"]}, {"order_id": "C", "items": ["保温杯"]}]
    assert match_orders("我买的那个降噪耳机到了没", orders) == ["A"]
    assert match_orders("老人手机那单走的什么快递", orders) == ["B"]
    assert match_orders("我的订单呢", orders) == []


def test_tool_facts_state_asked_fields_first_once():
    ship = {"code": 0, "valid": True, "source": "logistics_tracking", "timestamp": 0.0,
            "message": "订单 SO1 由中通快递承运，运单号 ZT1；最新：2026-11-27 10:00 上海 已到达上海中转部",
            "data": {"order_id": "SO1", "status": "运输中", "carrier": "中通快递", "tracking_no": "ZT1",
                     "shipped_at": "2026-11-26 09:00", "events": [],
                     "latest": {"time": "2026-11-27 10:00", "location": "上海", "description": "已到达上海中转部"}}}
    lines = render_tool_facts("logistics_tracking", ship, question="SO1快递单号多少", spec=SPEC["logistics_tracking"])
    assert lines[0] == "订单 SO1，运单号：ZT1"
    text = "\n".join(lines)
    for fact in ("中通快递", "运输中", "2026-11-26 09:00", "已到达上海中转部"):  # complete for the verifier
        assert text.count(fact) == 1  # … and every fact once (no repeated summary message)
    assert "订单状态" not in "\n".join(render_tool_facts("logistics_tracking", ship, omit=("status",), spec=SPEC["logistics_tracking"]))
    listing = {"code": 0, "valid": True, "source": "order_lookup", "timestamp": 0.0, "message": "已查询到您最近的 2 笔订单",
               "data": {"orders": [{"order_id": "SO1", "status": "已签收", "amount": 10.0, "items": ["书"]},
                                   {"order_id": "SO2", "status": "待付款", "amount": 20.0, "items": ["杯"]}],
                        "count": 2}}
    lines = render_tool_facts("order_lookup", listing, question="哪个订单还没付款", focus=["SO2"], spec=SPEC["order_lookup"])
    assert lines[0].startswith("订单号：SO2") and "待付款" in lines[0] and lines[1] == "其他订单：SO1（已签收）"
    none = render_tool_facts("order_lookup", listing, question="有没有退款中的订单", focus=[], spec=SPEC["order_lookup"])
    assert none[0] == "您最近的 2 笔订单中没有退款中的订单" and len(none) == 3


def test_follow_ups_keep_the_order_in_focus():
    from strategies.rules.facts import tool_facts

    assert is_elliptical("那SO2026103000401呢")  # the order id does not make it long
    assert is_elliptical("哦不对，我问的是SO2026112000102")
    known = [{"kind": "order_id", "value": "SO2026112400303", "source": "user"}]
    assert [render_fact(f) for f in relevant_facts("快递单号多少", known, [])] == ["订单号：SO2026112400303（客户陈述）"]
    assert [render_fact(f) for f in relevant_facts("这个订单是用什么付的", known, [])] == ["订单号：SO2026112400303（客户陈述）"]
    listing = {"name": "order_lookup", "args": {}, "result": {"valid": True}, "focus": ["SO2026112800304"]}
    assert tool_facts([listing]) == [{"kind": "order_id", "value": "SO2026112800304", "source": "tool:order_lookup"}]
    assert tool_facts([{**listing, "focus": ["A", "B"]}]) == []  # ambiguous: nothing carried
    assert tool_facts([{**listing, "result": {"valid": False}}]) == []


def test_brief_rendering_is_a_subset_of_the_complete_text():
    from strategies.rules.evidence import tool_to_evidence

    result = {"code": 0, "valid": True, "source": "order_lookup", "timestamp": 0.0, "message": "已查询到订单 SO1",
              "data": {"order_id": "SO1", "status": "已退款", "refund_status": "已退款", "pay_method": "花呗",
                       "items": [{"name": "书", "qty": 1}], "amount": 20.0, "created_at": "2026-11-01 10:00:00"}}
    item = tool_to_evidence("order_lookup", 1, result, {"order_id": "SO1"}, question="SO1用什么付的",
                            spec=SPEC["order_lookup"])
    assert item["text"].splitlines()[0] == item["brief"].splitlines()[0] == "订单 SO1，支付方式：花呗"
    assert "2026-11-01 10:00:00" in item["text"] and "2026-11-01 10:00:00" not in item["brief"]
    assert item["text"].count("已退款") == 1  # refund status equal to the order status: said once
    for fact in ("已退款", "书×1", "20元"):
        assert fact in item["brief"] and fact in item["text"]


def test_unreachable_endpoint_is_skipped_during_its_cool_down(monkeypatch):
    from langchain_core.messages import HumanMessage
    from pydantic import BaseModel

    from strategies.llm import structured as llm_mod
    from tests.fakes import ScriptedChatModel

    class Answer(BaseModel):
        text: str

    dead = ScriptedChatModel([ConnectionError("connection refused"), ConnectionError("again")])
    first = llm_mod.structured_call(dead, Answer, [HumanMessage("hi")], retries=2)
    assert first.value is None and "ConnectionError" in (first.error or "")
    assert dead.remaining == 1  # a connection failure is not retried at this level
    second = llm_mod.structured_call(dead, Answer, [HumanMessage("hi")])
    assert second.value is None and "cooling down after: ConnectionError" in (second.error or "")
    assert dead.remaining == 1  # skipped without calling the endpoint
    monkeypatch.setattr(llm_mod, "ENDPOINT_COOLDOWN_S", 0.0)
    llm_mod._mark_down(dead)
    llm_mod.structured_call(dead, Answer, [HumanMessage("hi")])
    assert dead.remaining == 0  # after the cool-down the endpoint is tried again


def test_agent_answers_must_cite_every_factual_sentence():
    from strategies.combined import check_answer

    evidence = [{"id": "r#1", "text": "质量问题退货，运费由商城承担。"},
                {"id": "r#2", "text": "7天无理由退货属于买家原因退货，寄回商品的运费由买家承担。"}]
    uncited = "无理由退货运费由商城承担。"
    # an answer written elsewhere is checked against all evidence ...
    assert check_answer("退货运费谁出", uncited, evidence)["overall"] in ("pass", "fail")
    # ... but the agent's own uncited factual sentence never passes
    strict = check_answer("退货运费谁出", uncited, evidence, require_citations=True)
    assert strict["overall"] == "fail"
    assert "没有标注来源" in strict["claims"][0]["reason"]
    cited = "7天无理由退货的寄回运费由买家承担【来源:r#2】。"
    assert check_answer("退货运费谁出", cited, evidence, require_citations=True)["overall"] == "pass"
