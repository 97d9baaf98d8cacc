"""Whole-graph paths, compiled with InMemorySaver: real index, real shop DB, scripted LLM."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from graph.builder import build_graph
from graph.context import Context
from graph.deps import Deps
from shop.tools import ShopToolbox
from strategies.combined import select
from strategies.protocols import AnswerRequest, Draft
from tests.fakes import ChatSession, ScriptedChatModel, fixture_index

ANSWER_PATH = ["start_turn", "route_boundary", "rewrite_query", "retrieve_hybrid",
               "rerank_evidence", "generate_answer", "verify_answer", "finalize_answer"]
RETURNS_FEE = "returns-7day"


@pytest.fixture(scope="module")
def index():
    return fixture_index()


@pytest.fixture()
def shop(tmp_path: Path) -> ShopToolbox:
    return ShopToolbox(tmp_path / "shop.sqlite")


def make_chat(index, shop, llm=None, *, user_id="u1001", thread_id="t1", **ctx) -> ChatSession:
    graph = build_graph(Deps(retriever=index, shop=shop, llm=llm)).compile(checkpointer=InMemorySaver())
    return ChatSession(graph, thread_id=thread_id, context=Context(user_id=user_id, **ctx))


def chunk_id(index, doc_id: str, needle: str) -> str:
    return next(c.chunk_id for c in index.chunks() if c.doc_id == doc_id and needle in c.text)


def db_count(shop: ShopToolbox, table: str) -> int:
    with sqlite3.connect(shop.db_path) as conn:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


# ------------------------------------------------------------------------------ offline paths

def test_offline_cited_answer(index, shop):
    chat = make_chat(index, shop)
    chat >> "七天无理由退货运费谁出"
    assert chat.nodes == ANSWER_PATH
    assert chat.status == "answered"
    chat << "买家承担"
    fee_chunk = chunk_id(index, RETURNS_FEE, "运费由买家承担")
    assert f"【来源:{fee_chunk}】" in chat.answer
    assert [c["id"] for c in chat.state["citations"]] == [fee_chunk]
    assert chat.state["verification"]["overall"] == "pass"


def test_offline_table_answer_and_superseded_version_never_cited(index, shop):
    chat = make_chat(index, shop)
    chat >> "支付宝退款多久到账"
    chat << "1-3个工作日"
    assert chat.answer.startswith("支付方式：支付宝，到账时间：1-3个工作日【来源:refund-times#")
    chat >> "买了东西降价了能补差价吗"
    chat << "30天"
    assert "15天" not in chat.answer
    assert all(not c["id"].startswith("price-protection-v1") for c in chat.state["citations"])


def test_blacklisted_question_refused(index, shop):
    chat = make_chat(index, shop)
    chat >> "我吃了头孢今晚能喝酒吗"
    assert chat.nodes == ["start_turn", "route_boundary", "refuse_request"]
    assert chat.status == "refused" and chat.state["fail_reason"] == "out_of_scope"
    chat << "医疗"


def test_action_without_tool_refused_honestly(index, shop):
    chat = make_chat(index, shop)
    chat >> "帮我把收货地址改成北京市朝阳区"
    assert chat.nodes == ["start_turn", "route_boundary", "refuse_request"]
    assert chat.status == "refused" and chat.state["fail_reason"] == "no_capability"
    chat << "这里无法为您办理修改收货地址"
    chat << "人工客服"
    assert "已修改" not in chat.answer and "已为您" not in chat.answer


def test_unknown_question_gets_no_answer_reply(index, shop):
    chat = make_chat(index, shop)
    chat >> "怎么注销账号"
    assert chat.status == "refused" and chat.state["fail_reason"] == "no_evidence"
    chat << "当前知识库中没有找到相关信息"


def test_own_order_lookup_cites_tool(index, shop):
    chat = make_chat(index, shop)
    chat >> "我的订单SO2026112500103现在什么状态"
    assert chat.nodes == ["start_turn", "route_boundary", "call_tools", "generate_answer",
                          "verify_answer", "finalize_answer"]
    chat << "运输中"
    assert "【来源:tool:order_lookup#1】" in chat.answer


def test_other_users_order_denied(index, shop):
    chat = make_chat(index, shop, user_id="u1001")
    chat >> "查一下订单SO2026110100123"  # belongs to u1003
    assert chat.state["tool_calls"][0]["result"]["code"] == 403
    chat << "未查询到"
    assert "已退款" not in chat.answer  # that order's real status is never revealed
    assert chat.state["verification"]["overall"] == "pass"


def test_tool_that_returns_nothing(index, shop):
    chat = make_chat(index, shop)
    chat >> "我的订单SO2026112900105到哪了"  # 待付款: not shipped
    assert chat.state["tool_calls"][0]["name"] == "logistics_tracking"
    assert chat.state["tool_calls"][0]["result"]["code"] == 404
    chat << "未查询到物流信息"
    assert chat.state["fail_reason"] == "tool_failure"


def test_tool_that_throws(index, shop):
    with sqlite3.connect(shop.db_path) as conn:
        conn.execute("DROP TABLE shipment_events")  # the real tool now raises inside
    chat = make_chat(index, shop)
    chat >> "我的订单SO2026112500103到哪了"
    assert chat.state["tool_calls"][0]["result"]["code"] == 500
    chat << "物流信息查询失败"
    assert chat.state["fail_reason"] == "tool_failure"


def test_refund_confirmation_approved_writes_once(index, shop):
    tickets = db_count(shop, "after_sales_tickets")
    chat = make_chat(index, shop)
    chat >> "我要退款，订单SO2026112000102"
    assert chat.nodes == ["start_turn", "route_boundary"]
    assert chat.status == "needs_confirmation"
    assert chat.interrupt["type"] == "confirm"
    assert chat.interrupt["action"]["tool"] == "after_sales_apply"
    assert chat.interrupt["action"]["args"]["order_id"] == "SO2026112000102"
    assert "SO2026112000102" in chat.interrupt["prompt"]
    assert db_count(shop, "after_sales_tickets") == tickets  # nothing before the yes
    chat.resume("确认")
    assert chat.nodes == ["confirm_high_risk", "generate_answer", "verify_answer", "finalize_answer"]
    assert db_count(shop, "after_sales_tickets") == tickets + 1
    assert chat.status == "answered"
    chat << "提交"
    assert chat.state["verification"]["overall"] == "pass"


@pytest.mark.parametrize("reply", ["no", "算了", False, {"confirm": False}, "确认一下再说吧"])
def test_refund_confirmation_denied_writes_nothing(index, shop, reply):
    tickets, audit = db_count(shop, "after_sales_tickets"), db_count(shop, "audit_log")
    chat = make_chat(index, shop)
    chat >> "我要退款，订单SO2026112000102"
    chat.resume(reply)
    assert chat.nodes == ["confirm_high_risk", "finalize_answer"]
    assert (db_count(shop, "after_sales_tickets"), db_count(shop, "audit_log")) == (tickets, audit)
    chat << "未做任何更改"
    assert "已为您" not in chat.answer


def test_cancel_without_order_id_asks_for_it(index, shop):
    chat = make_chat(index, shop)
    chat >> "帮我取消订单"
    assert chat.nodes == ["start_turn", "route_boundary", "ask_clarification"]
    chat << "订单号"


def test_bare_yes_with_nothing_pending_is_not_answered_from_policy(index, shop):
    from strategies.rules.router import NOTHING_PENDING_REPLY

    chat = make_chat(index, shop)
    chat >> "好的"
    assert chat.nodes == ["start_turn", "route_boundary", "reply_chitchat"]
    assert chat.answer == NOTHING_PENDING_REPLY and chat.state["citations"] == []


def test_handoff_request_and_human_reply(index, shop):
    chat = make_chat(index, shop)
    chat >> "转人工"
    assert chat.status == "handoff"
    assert chat.interrupt["type"] == "handoff"
    assert set(chat.interrupt) == {"type", "question", "summary", "reason", "evidence"}
    chat.resume({"reply": "您好，我是人工客服小王。"})
    assert chat.nodes == ["handoff_to_human"]
    assert chat.status == "answered" and chat.state["answered_by"] == "human"
    chat << "小王"


def test_multi_turn_follow_up_and_order_id_carried(index, shop):
    chat = make_chat(index, shop)
    chat >> "我的订单是SO2026112500103，江浙沪几天到？"
    chat >> "那新疆呢？"
    chat << "5-7天"
    chat >> "帮我取消吧"  # the order id comes from the customer's own earlier message
    assert chat.interrupt["action"]["args"]["order_id"] == "SO2026112500103"


def test_kb_only_profile(index, shop):
    chat = make_chat(index, shop, domain_profile="kb-only")
    chat >> "七天无理由退货运费谁出"
    chat << "买家承担"
    chat >> "比特币现在能买吗"
    assert chat.status == "refused"


# ------------------------------------------------------------------------ with a scripted LLM

def boundary(route="answer", intent="knowledge", confidence=0.95, domain="after_sales") -> str:
    return json.dumps({"route": route, "domain": domain, "intent": intent,
                       "confidence": confidence, "reason": "test"})


def rewrite(*queries: str) -> str:
    return json.dumps({"queries": list(queries)})


def answer(text: str) -> str:
    return json.dumps({"answer": text, "cannot_answer": False}, ensure_ascii=False)


def test_llm_cited_answer(index, shop):
    fee = chunk_id(index, RETURNS_FEE, "运费由买家承担")
    llm = ScriptedChatModel([boundary(), rewrite("退货运费 承担"),
                             answer(f"七天无理由退货的运费由买家承担【来源:{fee}】。")])
    chat = make_chat(index, shop, llm, llm_verify=False)
    chat >> "七天无理由退货运费谁掏"
    assert chat.nodes == ANSWER_PATH
    chat << "买家承担"
    assert chat.state["queries"][0] == "七天无理由退货运费谁掏"
    generate_prompt = llm.prompts[2][-1].content
    assert f'<evidence id="{fee}"' in generate_prompt
    assert llm.remaining == 0


def test_llm_blacklist_needs_no_llm_call(index, shop):
    llm = ScriptedChatModel([])
    chat = make_chat(index, shop, llm)
    chat >> "推荐一只能涨停的股票"
    assert chat.status == "refused" and llm.prompts == []


def test_llm_fabricated_number_caught_and_fixed_by_reflection(index, shop):
    fee = chunk_id(index, RETURNS_FEE, "运费由买家承担")
    terms = chunk_id(index, RETURNS_FEE, "签收后7天内")
    llm = ScriptedChatModel([
        boundary(), rewrite("七天无理由退货"),
        answer(f"签收后15天内可以申请七天无理由退货【来源:{terms}】。"),
        answer(f"签收后7天内可以申请七天无理由退货【来源:{terms}】。"),
    ])
    chat = make_chat(index, shop, llm, llm_verify=False)
    chat >> "签收后几天内可以无理由退货？"
    assert chat.nodes == ANSWER_PATH[:-1] + ["reflect", "generate_answer", "verify_answer",
                                             "finalize_answer"]
    chat << "7天内"
    assert "15天" not in chat.answer
    retry_prompt = llm.prompts[3][-1].content
    assert "签收后15天内可以申请七天无理由退货" in retry_prompt  # the feedback went back
    assert chat.state["reflections"] == 1
    del fee


def test_llm_failed_rounds_end_in_the_verified_extractive_answer(index, shop):
    """Issue 10.2: after the model's drafts fail, the last round is the extractive answer."""
    terms = chunk_id(index, RETURNS_FEE, "签收后7天内")
    bad = answer(f"签收后15天内可以申请七天无理由退货【来源:{terms}】。")
    llm = ScriptedChatModel([boundary(), rewrite("七天无理由退货"), bad, bad])
    chat = make_chat(index, shop, llm, llm_verify=False)
    chat >> "签收后几天内可以无理由退货？"
    # the model repeats the rejected claim in its reflection draft: it cannot fix it, so the
    # extractive answer comes in that round (no second verification of a known verdict)
    assert chat.nodes.count("reflect") == 1
    assert chat.nodes[-1] == "finalize_answer"
    assert chat.status == "answered" and "15天" not in chat.answer and "7天" in chat.answer
    assert "签收后15天内可以申请七天无理由退货" in llm.prompts[-1][-1].content  # feedback went back


class _StubbornAnswerer:
    """An answerer (through the Deps seam) that repeats one unsupported draft every round."""

    def __init__(self, text: str) -> None:
        self.text, self.rounds = text, 0

    def answer(self, request: AnswerRequest) -> Draft:
        self.rounds += 1
        return Draft(text=self.text)


def test_two_failed_rounds_end_in_handoff(index, shop):
    """A draft that stays unverifiable after the bounded rounds hands the customer to a human."""
    terms = chunk_id(index, RETURNS_FEE, "签收后7天内")
    stubborn = _StubbornAnswerer(f"签收后15天内可以申请七天无理由退货【来源:{terms}】。")
    deps = Deps(retriever=index, shop=shop,
                strategies=dataclasses.replace(select(None), answerer=stubborn))
    chat = ChatSession(build_graph(deps).compile(checkpointer=InMemorySaver()),
                       context=Context(user_id="u1001", llm_verify=False), thread_id="t1")
    chat >> "签收后几天内可以无理由退货？"
    assert chat.nodes.count("reflect") == 2
    assert chat.nodes[-1] == "verify_answer"
    assert chat.status == "handoff" and chat.state["fail_reason"] == "reflection_exhausted"
    assert chat.interrupt["type"] == "handoff" and stubborn.rounds == 3
    assert "15天" in chat.interrupt["summary"]  # the human sees what could not be verified


def test_llm_verifier_claims_merged(index, shop):
    terms = chunk_id(index, RETURNS_FEE, "签收后7天内")
    verdict = json.dumps({"overall": "pass", "claims": [
        {"claim": "签收后7天内可以申请退货", "status": "supported", "evidence_ids": [terms], "reason": ""}]})
    llm = ScriptedChatModel([boundary(), rewrite("七天无理由退货"),
                             answer(f"签收后7天内可以申请七天无理由退货【来源:{terms}】。"), verdict])
    chat = make_chat(index, shop, llm)
    chat >> "签收后几天内可以无理由退货？"
    claims = chat.state["verification"]["claims"]
    assert any(c.get("source") == "llm" for c in claims)
    assert chat.state["verification"]["overall"] == "pass"


def test_llm_broken_output_falls_back_offline(index, shop):
    llm = ScriptedChatModel(["not json", "still not json", "{", "{", RuntimeError("endpoint down"),
                             RuntimeError("endpoint down"), "{", "{"])
    chat = make_chat(index, shop, llm, llm_verify=False)
    chat >> "七天无理由退货运费谁出"
    assert chat.status == "answered"
    chat << "买家承担"
    assert chat.state["llm_error"]


def test_llm_low_confidence_route_is_left_to_the_rules(index, shop):
    from langgraph.runtime import Runtime

    from nodes.boundary import route_boundary

    llm = ScriptedChatModel([boundary(route="refuse", confidence=0.2)])
    deps = Deps(retriever=index, shop=shop, llm=llm)
    update = route_boundary({"question": "那个东西呢", "facts": []}, Runtime(context=Context()), deps)
    assert llm.remaining == 0  # the model was asked …
    assert update["route"] == "answer" and update.get("status") != "refused"  # … and overruled


def test_multi_turn_wrong_assistant_statement_does_not_snowball(index, shop):
    fee = chunk_id(index, RETURNS_FEE, "运费由买家承担")
    llm = ScriptedChatModel([boundary(), rewrite("退货运费 承担"),
                             answer(f"七天无理由退货的运费由买家承担【来源:{fee}】。")])
    graph = build_graph(Deps(retriever=index, shop=shop, llm=llm)).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "snowball"}}
    history = [HumanMessage("我是Plus会员，订单SO2026112000102"),
               AIMessage("Plus会员退货运费全部由商家承担，30天内都能退。"),  # wrong, unverified
               HumanMessage("那七天无理由退货的运费到底谁出？")]
    result = graph.invoke({"messages": history}, config, context=Context(user_id="u1001", llm_verify=False))
    assert "买家承担" in result["answer"]
    prompts = "\n".join(str(m.content) for p in llm.prompts for m in p)
    assert "30天内都能退" not in prompts and "全部由商家承担" not in prompts
    facts = graph.get_state(config).values["facts"]
    assert any(f["kind"] == "tier" and "PLUS" in f["value"].upper() for f in facts)
    assert any(f == {"kind": "order_id", "value": "SO2026112000102", "source": "user"} for f in facts)


@pytest.mark.xfail(strict=True, reason="known gap (issue 8): the offline answerability gate binds the "
                   "subject lexically, so 收到货 does not bind to 签收 and the paraphrase is declined")
def test_paraphrased_subject_still_reaches_the_llm(index, shop):
    terms = chunk_id(index, RETURNS_FEE, "签收后7天内")
    llm = ScriptedChatModel([boundary(), rewrite("七天无理由退货"),
                             answer(f"签收后7天内可以申请七天无理由退货【来源:{terms}】。")])
    chat = make_chat(index, shop, llm, llm_verify=False)
    chat >> "收到货几天内可以无理由退？"
    assert chat.status == "answered" and "7天" in chat.answer
