"""Issue 9.4: an order id not written as ``SO…`` resolves against the customer's OWN orders only.

Through the whole offline graph: every written form of a whole id answers about that order; a
partial, malformed or ambiguous reference gets the customer's own matching order or a question
back, and never another order (before the fix, digits matched a product name of another order).
"""

from __future__ import annotations

import re

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graph.builder import build_graph
from graph.context import Context
from graph.deps import Deps
from shop import seed
from shop.tools import ShopToolbox
from tests.fakes import ChatSession, fixture_index

TARGET = "SO2026112800104"  # u1001, 待发货
OWN = {o["id"] for o in seed.ORDERS if o["user_id"] == "u1001"}
OTHERS = {o["id"] for o in seed.ORDERS if o["user_id"] != "u1001"}


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory):
    shop = ShopToolbox(tmp_path_factory.mktemp("refs") / "shop.sqlite")
    return build_graph(Deps(retriever=fixture_index(), shop=shop)).compile(checkpointer=InMemorySaver())


def ask(graph, *questions: str, user: str = "u1001") -> ChatSession:
    chat = ChatSession(graph, thread_id=f"{user}-{hash(questions)}", context=Context(user_id=user))
    for question in questions:
        chat >> question
    return chat


def ids_in(text: str) -> set[str]:
    return set(re.findall(r"SO\d{13}", text))


@pytest.mark.parametrize("question", [
    "订单2026112800104到哪了",
    "so 2026112800104",
    "so 2026112800104发货了吗",
    "订单20261128\u200b00104到哪了",
    "订单２０２６１１２８００１０４到哪了",
    "ＳＯ２０２６１１２８００１０４发货没",
    "尾号0104的订单到哪了",
])
def test_every_form_of_an_own_order_answers_about_that_order(graph, question: str) -> None:
    chat = ask(graph, question)
    assert chat.status == "answered"
    assert ids_in(chat.answer) <= {TARGET}, chat.answer  # 「到哪了」 may answer from the shipment alone
    assert "待发货" in chat.answer or "尚未发货" in chat.answer


def test_a_fragment_matching_one_own_order_is_that_order(graph) -> None:
    chat = ask(graph, "订单号是20261128的那个发货了吗")
    assert ids_in(chat.answer) == {TARGET} and "待发货" in chat.answer


@pytest.mark.parametrize("question", ["订单2026112到哪了", "订单号是202611的那个发货了吗"])
def test_an_ambiguous_fragment_asks_back_naming_only_own_orders(graph, question: str) -> None:
    chat = ask(graph, question)
    assert "完整的订单号" in chat.answer
    named = ids_in(chat.answer)
    assert named and named <= OWN and not named & OTHERS


def test_a_too_short_fragment_is_asked_back(graph) -> None:
    chat = ask(graph, "订单尾号01的订单发货了吗")
    assert "太短" in chat.answer and "完整的订单号" in chat.answer and not ids_in(chat.answer)


@pytest.mark.parametrize("question", [
    "SO20261128001045发货了吗",  # one digit too many
    "尾号0203的订单到哪了",  # the ending of another customer's order
    "订单号2026112300203到哪了",  # another customer's whole order id
])
def test_malformed_or_foreign_references_never_reach_another_order(graph, question: str) -> None:
    chat = ask(graph, question)
    assert not ids_in(chat.answer) & OTHERS, chat.answer
    assert "未查询到" in chat.answer or "没有找到" in chat.answer
    assert "大闸蟹" not in chat.answer  # the other order's goods


def test_a_written_id_beats_the_order_carried_from_an_earlier_turn(graph) -> None:
    chat = ask(graph, "SO2026112000102签收了吗", "那订单2026112800104呢")
    assert TARGET in chat.answer and "SO2026112000102" not in chat.answer


def test_the_same_forms_for_another_customer_see_nothing_of_u1001(graph) -> None:
    chat = ask(graph, "so 2026112800104到哪了", user="u1002")
    assert "未查询到" in chat.answer and "三体" not in chat.answer
