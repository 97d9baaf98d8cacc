"""The loop breaker cuts off identical repeated tool calls exactly at ``max_repeats``."""

from __future__ import annotations

import pytest

from tools.guard import (
    LOOP_MESSAGE,
    LoopBreaker,
    canonical_args,
    is_repeated_call,
    loop_breaker_result,
)

CALL = {"name": "order_lookup", "args": {"order_id": "SO2026110100123"}}


def test_first_call_is_never_repeated() -> None:
    assert is_repeated_call([], "order_lookup", {"order_id": "SO2026110100123"}) is False


def test_default_cuts_off_the_second_identical_call() -> None:
    assert is_repeated_call([CALL], "order_lookup", {"order_id": "SO2026110100123"}) is True


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("order_lookup", {"order_id": "SO2026112000102"}),
        ("logistics_tracking", {"order_id": "SO2026110100123"}),
        ("order_lookup", {}),
    ],
)
def test_different_calls_are_not_cut_off(name: str, args: dict[str, str]) -> None:
    assert is_repeated_call([CALL], name, args) is False


def test_identity_is_canonical() -> None:
    history = [
        {
            "name": "after_sales_apply",
            "args": {"kind": "return", "order_id": "SO2026110100123", "reason": "坏了"},
        }
    ]
    same = {"reason": " 坏了 ", "order_id": " so2026110100123", "kind": "return"}
    assert is_repeated_call(history, "after_sales_apply", same) is True
    assert canonical_args({"a": None, "b": 1}) == canonical_args({"b": 1})
    assert is_repeated_call([{"name": "order_lookup", "args": None}], "order_lookup", {}) is True


@pytest.mark.parametrize(("previous", "expected"), [(0, False), (1, False), (2, True), (3, True)])
def test_boundary_at_max_repeats_three(previous: int, expected: bool) -> None:
    history = [CALL] * previous
    assert (
        is_repeated_call(history, "order_lookup", {"order_id": "SO2026110100123"}, max_repeats=3)
        is expected
    )


def test_max_repeats_below_two_is_rejected() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        is_repeated_call([], "order_lookup", {}, max_repeats=1)


def test_loop_breaker_result() -> None:
    result = loop_breaker_result("logistics_tracking")
    assert result["code"] == 429 and result["valid"] is False
    assert result["source"] == "logistics_tracking" and result["data"] is None
    assert result["message"] == LOOP_MESSAGE and result["timestamp"] > 0


def test_loop_breaker_object_tracks_a_turn() -> None:
    breaker = LoopBreaker(max_repeats=2)
    args = {"order_id": "SO2026110100123"}
    assert breaker.check("order_lookup", args) is None
    breaker.record("order_lookup", args)
    cut = breaker.check("order_lookup", dict(args))
    assert cut is not None and cut["code"] == 429
    assert breaker.check("logistics_tracking", args) is None
