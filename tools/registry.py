"""The tool registry: the only place tool names live.

A backend declares each tool once as a :class:`ToolDecl`: its name, a one-line description,
a pydantic model of its arguments (the JSON schema offered to an LLM and checked by the
backend is generated from it, never written by hand), whether it writes, the action labels
it covers and what it answers (:class:`tools.types.Answers`). :class:`ToolRegistry` turns the
declarations into :class:`ToolSpec` values and validates raw arguments, accepting the usual
spellings of a field name (``orderId``, ``order_no``, ``OrderID`` → ``order_id``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from tools.types import Answers, ToolSpec

_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_ID_SUFFIXES = ("_no", "_number", "_num", "_code", "id", "_sn")


class ArgumentError(ValueError):
    """Raw arguments do not fit a tool's model.

    ``str(error)`` is the detailed message returned to an LLM as an observation;
    ``customer_message`` is the same in one plain Chinese sentence.
    """

    def __init__(self, message: str, customer_message: str = "参数错误，无法办理") -> None:
        super().__init__(message)
        self.customer_message = customer_message


def _customer_message(tool: str, error: Mapping[str, Any], props: Mapping[str, Any]) -> str:
    """Return one Chinese sentence for a pydantic error (the field's description says the format)."""
    key = ".".join(map(str, error.get("loc") or ())) or tool
    description = (props.get(key) or {}).get("description")
    hint = f"（{description}）" if description else ""
    kind = str(error.get("type", ""))
    if kind == "missing":
        return f"缺少必填参数：{key}{hint}"
    if kind == "extra_forbidden":
        return f"{tool} 不支持参数：{key}"
    if kind == "string_pattern_mismatch":
        return f"参数 {key} 格式不正确{hint}"
    return f"参数 {key} 不正确{hint}"


@dataclass(frozen=True, kw_only=True)
class ToolDecl:
    """One tool as its backend declares it."""

    name: str
    description: str
    args: type[BaseModel]
    write: bool = False
    capabilities: tuple[str, ...] = ()
    answers: Answers = field(default_factory=Answers)

    def spec(self) -> ToolSpec:
        """Return the spec, with the JSON schema generated from the argument model."""
        return ToolSpec(name=self.name, description=self.description,
                        parameters=json_schema(self.args), write=self.write,
                        capabilities=self.capabilities, answers=self.answers)


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Return the model's JSON schema in the plain form tool-calling APIs expect.

    Titles are dropped, an optional field (``X | None``) is described by its non-null type,
    and a model that forbids extra fields says ``additionalProperties: false``.
    """
    schema = model.model_json_schema()
    props: dict[str, Any] = {}
    for key, rule in schema.get("properties", {}).items():
        rule = {k: v for k, v in rule.items() if k not in ("title", "default")}
        options = [o for o in rule.pop("anyOf", []) if o.get("type") != "null"]
        if len(options) == 1:
            rule = {**options[0], **rule}
        props[key] = rule
    out: dict[str, Any] = {"type": "object", "properties": props,
                           "required": list(schema.get("required", []))}
    if model.model_config.get("extra") == "forbid":
        out["additionalProperties"] = False
    return out


def canonical_key(key: str, known: Iterable[str]) -> str:
    """Return the declared field a raw argument name means, or the name itself.

    ``orderId`` / ``OrderID`` / ``order-id`` / ``order_no`` / ``orderNumber`` all mean
    ``order_id`` when the tool declares ``order_id``; a bare ``id`` means the one ``*_id``
    field when there is exactly one.
    """
    names = set(known)
    snake = _CAMEL_RE.sub("_", key.strip()).replace("-", "_").replace(" ", "_").lower()
    if snake in names:
        return snake
    id_fields = [n for n in names if n.endswith("_id")]
    if snake in ("id", "no", "number") and len(id_fields) == 1:
        return id_fields[0]
    for suffix in _ID_SUFFIXES:
        if snake.endswith(suffix):
            stem = snake[: -len(suffix)].rstrip("_")
            if f"{stem}_id" in names:
                return f"{stem}_id"
    return key


_USER_KEYS = frozenset({"user", "uid", "userid", "user_id", "customer", "customer_id", "buyer_id"})


def names_user(key: str) -> bool:
    """Return True for an argument naming the customer (``user_id``, ``userId``, ``uid`` …)."""
    snake = _CAMEL_RE.sub("_", key.strip()).replace("-", "_").replace(" ", "_").lower()
    return snake in _USER_KEYS or snake.startswith("user_")


class ToolRegistry:
    """The declared tools of one backend, in declaration order."""

    def __init__(self, decls: Iterable[ToolDecl]) -> None:
        """Register ``decls``; a repeated name is an error (one declaration per tool)."""
        self._decls: dict[str, ToolDecl] = {}
        for decl in decls:
            if decl.name in self._decls:
                raise ValueError(f"tool {decl.name!r} is declared twice")
            self._decls[decl.name] = decl

    def __contains__(self, name: object) -> bool:
        return name in self._decls

    def names(self) -> list[str]:
        """Return the tool names in declaration order."""
        return list(self._decls)

    def get(self, name: str) -> ToolDecl | None:
        """Return the declaration of ``name``, or None."""
        return self._decls.get(name)

    def specs(self) -> list[ToolSpec]:
        """Return every tool's spec (schemas generated from the argument models)."""
        return [d.spec() for d in self._decls.values()]

    def validate(self, name: str, raw: Mapping[str, Any] | None) -> dict[str, Any]:
        """Return ``raw`` as the tool's validated arguments (aliases mapped, ``None`` dropped).

        Raises:
            ArgumentError: Unknown tool, an argument naming the user, or arguments that do not
                fit the model; the message says what to fix.

        """
        decl = self._decls.get(name)
        if decl is None:
            raise ArgumentError(f"unknown tool {name!r}; available: {', '.join(self._decls)}",
                                f"没有名为 {name} 的功能")
        if raw is not None and not isinstance(raw, Mapping):
            raise ArgumentError(f"arguments of {name} must be a JSON object",
                                f"参数格式错误：{name} 的参数必须是对象（JSON object）")
        fields = decl.args.model_fields
        mapped: dict[str, Any] = {}
        for key, value in (raw or {}).items():
            target = canonical_key(str(key), fields)
            if names_user(str(key)):
                raise ArgumentError("user_id is not an argument: the customer comes from the session",
                                    "参数中不能包含 user_id：用户身份只取自当前登录会话")
            if value is not None:
                mapped[target] = value
        try:
            model = decl.args.model_validate(mapped)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or name}: {e['msg']}"
                                 for e in exc.errors())
            props = json_schema(decl.args)["properties"]
            first = _customer_message(name, exc.errors()[0], props) if exc.errors() else ""
            raise ArgumentError(f"bad arguments for {name}: {problems}", first) from None
        return model.model_dump(exclude_none=True)
