"""The verifier node with value binding: a value must play the claim's role in its evidence."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.runtime import Runtime

from graph.context import Context
from graph.deps import Deps
from nodes.verify import verify_answer
from shop.tools import ShopToolbox
from strategies.rules.question import analyze_question, build_vocabulary
from strategies.rules.verify import code_claims
from tests.fakes import fixture_index

RECORD = {"id": "tool:x#1", "kind": "tool", "title": "x",
          "text": "订单号：AB123，发货时间：2026-01-03 09:30:00\n商品金额：96元，运费：0元，金额：88元"}
FEES = {"id": "f#1", "kind": "chunk", "title": "寄回费用", "heading_path": ["寄回费用"],
        "text": "| 线路 | 费用 |\n|---|---|\n| 省内 | 6元 |\n| 省外 | 9元 |"}


@pytest.fixture()
def deps(tmp_path: Path) -> Deps:
    return Deps(retriever=fixture_index(), shop=ShopToolbox(tmp_path / "shop.sqlite"))


def _verify(draft: str, deps: Deps) -> dict:
    state = {"question": "q", "draft": draft, "evidence": [RECORD, FEES], "tool_calls": [], "reflections": 0}
    return verify_answer(state, Runtime(context=Context()), deps)["verification"]


def test_node_passes_values_in_their_own_field_and_names_the_units(deps: Deps) -> None:
    result = _verify("订单号：AB123，金额：88元【来源:tool:x#1】。线路：省外，费用：9元【来源:f#1】。", deps)
    assert result["overall"] == "pass", result["claims"]
    assert [c["unit_ids"] for c in result["claims"]] == [["tool:x#1@0", "tool:x#1@1"], ["f#1@1"]]


def test_node_flags_a_value_taken_from_another_field_or_row(deps: Deps) -> None:
    result = _verify("订单号：AB123，金额：0元【来源:tool:x#1】。线路：省外，费用：6元【来源:f#1】。", deps)
    assert result["overall"] == "fail"
    reasons = [c["reason"] for c in result["claims"]]
    assert "「0元」在资料中不是「金额」的值" in reasons[0]
    assert reasons[1]


def test_attribution_applies_to_uncited_claims() -> None:
    vocab = build_vocabulary([["退货", "跨境商品"], ["退货", "国内商品"]], ["签收后7天内可以退货。"])
    evidence = {"b#1": {"id": "b#1", "title": "退货", "heading_path": ["国内商品"], "text": "签收后7天内可以退货。"}}
    question = "跨境商品几天内可以退货"
    claims, _ = code_claims(question, "签收后7天内可以退货。", evidence, False,  # type: ignore[arg-type]
                            analysis=analyze_question(question, vocab=vocab), vocab=vocab)
    assert claims[0]["status"] == "unsupported" and "国内商品" in claims[0]["reason"]
    assert claims[0]["unit_ids"] == ["b#1@0"]
