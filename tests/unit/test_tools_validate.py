"""Schema-only validation of raw (LLM) arguments: any backend's spec, no pydantic model needed."""

from __future__ import annotations

from typing import Any

import pytest

from shop.decls import REGISTRY
from tools.registry import ArgumentError
from tools.validate import validate_args

SPECS = {s.name: s for s in REGISTRY.specs()}


@pytest.mark.parametrize(("name", "raw", "clean"), [
    ("order_lookup", None, {}),
    ("order_lookup", {"orderId": " so2026110100123 "}, {"order_id": "SO2026110100123"}),
    ("order_lookup", {"order_id": ""}, {}),
    ("product_recommend", {"query": "耳机", "max_price": "300"}, {"query": "耳机", "max_price": 300.0}),
    ("after_sales_apply", {"order_no": "SO2026110100123", "kind": "return", "reason": "坏了"},
     {"order_id": "SO2026110100123", "kind": "return", "reason": "坏了"}),
])
def test_clean_arguments(name: str, raw: Any, clean: dict[str, Any]) -> None:
    assert validate_args(SPECS[name], raw) == clean


@pytest.mark.parametrize(("name", "raw", "english", "chinese"), [
    ("order_lookup", ["SO2026110100123"], "JSON object", "必须是对象"),
    ("order_lookup", {"uid": "u1002"}, "session", "user_id"),
    ("order_lookup", {"order_id": "SO123"}, "must match", "格式不正确"),
    ("order_lookup", {"order_id": 2026110100123}, "must be a string", "必须是字符串"),
    ("order_cancel", {}, "needs order_id", "缺少必填参数：order_id"),
    ("order_cancel", {"order_id": "SO2026110100123", "force": True}, "has no argument 'force'", "不支持参数"),
    ("after_sales_apply", {"order_id": "SO2026110100123", "kind": "gift", "reason": "x"}, "one of", "只能是"),
    ("after_sales_apply", {"order_id": "SO2026110100123", "kind": "return", "reason": "x" * 201}, "length", "长度"),
    ("product_recommend", {"query": "耳机", "max_price": "cheap"}, "must be a number", "必须是数字"),
    ("product_recommend", {"query": "耳机", "max_price": 0}, "too small", "过小"),
    ("product_recommend", {"query": "耳机", "max_price": True}, "must be a number", "必须是数字"),
])
def test_bad_arguments(name: str, raw: Any, english: str, chinese: str) -> None:
    with pytest.raises(ArgumentError) as info:
        validate_args(SPECS[name], raw)
    assert english in str(info.value) and chinese in info.value.customer_message
