"""Validate raw tool arguments (e.g. an LLM's) against a spec's generated JSON schema.

Works for any backend's :class:`ToolSpec`, with or without its pydantic models: aliases are
mapped (``orderId``/``order_no`` → ``order_id``), an argument naming the customer is refused,
and the schema subset the registry generates is checked (object, properties, required, type,
enum, pattern, minLength, maxLength, exclusiveMinimum, minimum, additionalProperties=false).
Record ids (``*_id`` strings) are stripped and upper-cased first, as the backends do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tools.registry import ArgumentError, canonical_key, names_user
from tools.types import ToolSpec


def validate_args(spec: ToolSpec, raw: Any) -> dict[str, Any]:
    """Return ``raw`` as clean arguments for ``spec``.

    Raises:
        ArgumentError: What is wrong, for the model (``str``) and for the customer.

    """
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ArgumentError(f"arguments of {spec.name} must be a JSON object",
                            f"参数格式错误：{spec.name} 的参数必须是对象（JSON object）")
    schema = spec.parameters or {}
    props: dict[str, Any] = schema.get("properties", {})
    clean: dict[str, Any] = {}
    for key, value in raw.items():
        if names_user(str(key)):
            raise ArgumentError("user_id is not an argument: the customer comes from the session",
                                "参数中不能包含 user_id：用户身份只取自当前登录会话")
        target = canonical_key(str(key), props)
        if target not in props:
            if schema.get("additionalProperties", True) is False:
                raise ArgumentError(f"{spec.name} has no argument {key!r}; arguments: {', '.join(props)}",
                                    f"{spec.name} 不支持参数：{key}")
            continue
        if isinstance(value, str):
            value = value.strip()
            if target.endswith("_id"):
                value = value.upper()
        if value not in (None, ""):
            clean[target] = _check(spec.name, target, props[target], value)
    missing = [k for k in schema.get("required", []) if k not in clean]
    if missing:
        hint = props[missing[0]].get("description", "")
        raise ArgumentError(f"{spec.name} needs {', '.join(missing)}",
                            f"缺少必填参数：{missing[0]}" + (f"（{hint}）" if hint else ""))
    return clean


def _check(tool: str, key: str, rule: Mapping[str, Any], value: Any) -> Any:
    """Return ``value`` checked (and numbers converted) against one property's ``rule``."""
    kind, hint = rule.get("type"), rule.get("description", "")

    def bad(why: str, customer: str) -> ArgumentError:
        return ArgumentError(f"{tool}.{key}: {why}", f"参数 {key} {customer}" + (f"（{hint}）" if hint else ""))

    if kind == "string":
        if not isinstance(value, str):
            raise bad("must be a string", "必须是字符串")
        if "pattern" in rule and not re.search(rule["pattern"], value):
            raise bad(f"must match {rule['pattern']}", "格式不正确")
        if len(value) < rule.get("minLength", 0) or len(value) > rule.get("maxLength", len(value)):
            raise bad(f"length must be {rule.get('minLength', 0)}..{rule.get('maxLength', '')}", "长度不符合要求")
    elif kind in ("number", "integer"):
        try:
            number = float(value) if isinstance(value, str) else value
        except ValueError:
            raise bad("must be a number", "必须是数字") from None
        if isinstance(number, bool) or not isinstance(number, int | float) or number != number:
            raise bad("must be a number", "必须是数字")
        if ("exclusiveMinimum" in rule and number <= rule["exclusiveMinimum"]) or \
                ("minimum" in rule and number < rule["minimum"]):
            raise bad("is too small", "过小")
        value = int(number) if kind == "integer" else float(number)
    if "enum" in rule and value not in rule["enum"]:
        raise bad(f"must be one of {rule['enum']}", f"只能是 {' / '.join(map(str, rule['enum']))} 之一")
    return value
