"""The tool registry: schemas generated from the argument models, argument validation with aliases."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field

from shop.decls import DECLS, REGISTRY, AfterSalesArgs
from tools.registry import ArgumentError, ToolDecl, ToolRegistry, canonical_key, json_schema
from tools.types import FORM_LISTING, FORM_RECORD, Answers


def test_schema_is_generated_from_the_model_not_hand_written() -> None:
    schema = json_schema(AfterSalesArgs)
    assert schema == {
        "type": "object",
        "properties": {
            "order_id": {"type": "string", "pattern": r"^SO\d{13}$", "description": "订单号，例如 SO2026110100123"},
            "kind": {"type": "string", "enum": ["return", "refund", "exchange"],
                     "description": "售后类型：return 退货退款，refund 仅退款，exchange 换货"},
            "reason": {"type": "string", "minLength": 1, "maxLength": 200, "description": "申请原因"},
        },
        "required": ["order_id", "kind", "reason"],
        "additionalProperties": False,
    }


def test_optional_field_is_described_by_its_type_and_not_required() -> None:
    lookup = next(s for s in REGISTRY.specs() if s.name == "order_lookup")
    assert lookup.parameters["required"] == []
    assert lookup.parameters["properties"]["order_id"]["type"] == "string"
    assert "anyOf" not in lookup.parameters["properties"]["order_id"]


def test_specs_carry_the_declarations() -> None:
    specs = {s.name: s for s in REGISTRY.specs()}
    assert [d.name for d in DECLS] == list(specs)
    assert {n for n, s in specs.items() if s.write} == {"after_sales_apply", "order_cancel"}
    lookup, tracking = specs["order_lookup"], specs["logistics_tracking"]
    assert lookup.id_arg == "order_id" and not lookup.needs_id
    assert tracking.needs_id and tracking.id_pattern() == r"^SO\d{13}$"
    assert FORM_LISTING in lookup.answers.forms and FORM_RECORD in tracking.answers.forms
    assert "carrier" in tracking.answers.fields and "status" in lookup.answers.fields
    assert tracking.answers.when_status and "待发货" not in tracking.answers.when_status
    assert specs["product_recommend"].id_arg is None


@pytest.mark.parametrize("key", ["order_id", "orderId", "OrderID", "order-id", "order_no", "orderNo",
                                 "order_number", "orderNumber", "id"])
def test_common_aliases_map_to_the_declared_field(key: str) -> None:
    assert REGISTRY.validate("order_cancel", {key: " so2026110100123 "}) == {"order_id": "SO2026110100123"}


def test_canonical_key_leaves_unknown_names_alone() -> None:
    assert canonical_key("colour", ["order_id"]) == "colour"
    assert canonical_key("id", ["order_id", "ticket_id"]) == "id"  # ambiguous: not guessed


@pytest.mark.parametrize("args", [{"user_id": "u1002", "order_id": "SO2026110100123"},
                                  {"userId": "u1002", "order_id": "SO2026110100123"}])
def test_an_argument_naming_the_user_is_refused(args: dict) -> None:
    with pytest.raises(ArgumentError) as info:
        REGISTRY.validate("order_cancel", args)
    assert "session" in str(info.value) and "user_id" in info.value.customer_message


@pytest.mark.parametrize(("name", "args", "english", "chinese"), [
    ("order_cancel", {}, "Field required", "缺少必填参数：order_id"),
    ("order_cancel", {"order_id": "12345"}, "pattern", "格式不正确（订单号，例如 SO2026110100123）"),
    ("order_cancel", {"order_id": "SO2026110100123", "note": "x"}, "Extra inputs", "不支持参数：note"),
    ("after_sales_apply", {"order_id": "SO2026110100123", "kind": "gift", "reason": "r"}, "kind", "参数 kind"),
    ("nope", {}, "unknown tool", "没有名为 nope 的功能"),
])
def test_bad_arguments_say_what_to_fix(name: str, args: dict, english: str, chinese: str) -> None:
    with pytest.raises(ArgumentError) as info:
        REGISTRY.validate(name, args)
    assert english in str(info.value)
    assert chinese in info.value.customer_message


def test_a_name_is_declared_once() -> None:
    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")
        q: str = Field(min_length=1)

    decl = ToolDecl(name="t", description="d", args=Args, answers=Answers(forms=("search",)))
    with pytest.raises(ValueError, match="declared twice"):
        ToolRegistry([decl, decl])
    registry = ToolRegistry([decl])
    assert registry.names() == ["t"] and "t" in registry and registry.get("x") is None
    assert registry.specs()[0].parameters["required"] == ["q"]


def test_answers_round_trip_through_json() -> None:
    for spec in REGISTRY.specs():
        assert Answers.from_json(spec.answers.to_json()) == spec.answers
        assert Answers.from_json(spec.answers.to_json()).labels == spec.answers.labels
