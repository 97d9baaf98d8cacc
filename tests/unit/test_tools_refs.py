"""Order references in every written form, resolved only against the customer's own orders."""

from __future__ import annotations

import pytest

from tools.refs import Ref, clean_text, find_refs, id_shape, match_fragment

PATTERN = r"^SO\d{13}$"
OWN = ["SO2026112900105", "SO2026112800104", "SO2026112500103", "SO2026112000102", "SO2026101500101"]


@pytest.mark.parametrize("text", [
    "SO2026112800104到哪了",
    "订单2026112800104到哪了",
    "so 2026112800104",
    "So2026112800104",
    "订单20261128\u200b00104到哪了",  # zero-width space pasted inside
    "订单2026\u200d1128\ufeff00104",
    "订单２０２６１１２８００１０４到哪了",  # full-width digits
    "ＳＯ２０２６１１２８００１０４",
    "SO-2026112800104",
    "订单 2026-1128-00104",
])
def test_whole_id_in_any_form_is_exact(text: str) -> None:
    assert find_refs(text, PATTERN) == [Ref("exact", "SO2026112800104", find_refs(text, PATTERN)[0].raw)]


@pytest.mark.parametrize(("text", "value", "suffix"), [
    ("尾号0104的订单到哪了", "0104", True),
    ("订单号后四位是0104", "0104", True),
    ("订单2026112到哪了", "2026112", False),  # too short: a fragment
    ("SO20261128001045发货了吗", "20261128001045", False),  # too long: malformed
    ("so2026", "2026", False),
    ("订单尾号01的订单发货了吗", "01", True),  # too short to match anything: asked back
    ("我的订单123", "123", False),
])
def test_fragments_are_partial(text: str, value: str, suffix: bool) -> None:
    refs = find_refs(text, PATTERN)
    assert [(r.kind, r.value, r.suffix) for r in refs] == [("partial", value, suffix)]


@pytest.mark.parametrize("text", [
    "200元以内的耳机", "我手机13800138000", "运单SF1402688910231到哪了", "2026年11月28日下的单",
    "iPhone 15 怎么样", "我有2个订单", "满299减30",
])
def test_other_numbers_are_not_order_references(text: str) -> None:
    assert find_refs(text, PATTERN) == []


def test_no_pattern_finds_nothing() -> None:
    assert find_refs("SO2026112800104", None) == []


def test_id_shape_and_cleaning() -> None:
    assert id_shape(PATTERN) == ("SO", 13)
    assert id_shape(r"^\d{10}$") == ("", 10)
    assert clean_text("１２\u200b３") == "123"


def test_a_fragment_matches_only_own_orders() -> None:
    assert match_fragment(Ref("partial", "0104", "0104", suffix=True), OWN) == ["SO2026112800104"]
    assert match_fragment(Ref("partial", "2026112", "2026112"), OWN) == OWN[:4]  # ambiguous
    assert match_fragment(Ref("partial", "0203", "0203", suffix=True), OWN) == []  # another user's
    assert match_fragment(Ref("partial", "20261128001045", "x"), OWN) == []  # malformed
    assert match_fragment(Ref("partial", "01", "01"), OWN) == []  # too short to mean anything


@pytest.mark.parametrize(("text", "expected"), [
    ("so 2026112800104", "SO2026112800104"), ("SO-2026112800104呢", "SO2026112800104"),
    ("ＳＯ２０２６１１２８００１０４", "SO2026112800104"), ("SO2026\u200b112800104", "SO2026112800104"),
    ("运单SF1402688910231", None), ("订单2026112800104", None),  # bare digits: the planner's job
])
def test_the_carried_fact_reader_accepts_the_same_forms(text: str, expected: str | None) -> None:
    from strategies.rules.risk import find_order_id

    assert find_order_id(text) == expected
