"""The LLM tool planner: the model picks tools from the registry's schemas, code checks every call.

:class:`LLMToolPlanner` offers the registered tools to the chat model (``bind_tools`` with the
generated JSON schemas) and checks each proposed call before it becomes a plan:

* arguments are validated against the tool's schema (:func:`tools.validate.validate_args`):
  common aliases accepted (``orderId``, ``order_no`` → ``order_id``), a ``user_id`` refused;
* a record id must be one the customer wrote this turn (any written form, :mod:`tools.refs`)
  or one carried from earlier turns (what the customer said or a valid tool result confirmed);
  the backend then answers only the customer's own records;
* a write is planned only when the request's action is that write (it then goes to the
  confirmation node; this planner never runs anything), and alone;
* a rejected call goes back to the model as a ``ToolMessage`` observation saying what to fix,
  for at most ``max_steps`` rounds. A model error or no valid plan raises :class:`StepFailed`;
  :class:`FallbackToolPlanner` then runs the rules planner.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from contracts.tools import ToolCallPlan, ToolSpec
from strategies.llm.prompts import TOOL_PLANNER_SYSTEM, TOOL_PLANNER_USER
from strategies.protocols import StepFailed, ToolPlanner, ToolRequest
from strategies.rules.tools import action_tool, question_refs
from tools.registry import ArgumentError
from tools.validate import validate_args

logger = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 3


def tool_schemas(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """Return the tools in the OpenAI function-calling format (the registry's generated schemas)."""
    return [{"type": "function", "function": {"name": s.name, "description": s.description,
                                              "parameters": s.parameters}} for s in tools]


def allowed_ids(request: ToolRequest) -> set[str]:
    """Return the record ids a call may name: written this turn, or carried from earlier turns."""
    question = request.turn.question["text"]
    ids = {r.value for r in question_refs(question, request.turn.tools) if r.kind == "exact"}
    ids.update(str(f["value"]) for f in request.turn.facts if f.get("kind") == "order_id")
    if request.order_id:
        ids.add(request.order_id)
    return ids


def check_call(name: str, raw: Any, request: ToolRequest, write_ok: ToolSpec | None) -> ToolCallPlan:
    """Return the proposed call as a plan, or raise :class:`ArgumentError` saying what to fix."""
    spec = next((s for s in request.turn.tools if s.name == name), None)
    if spec is None:
        raise ArgumentError(f"there is no tool {name!r}; tools: {', '.join(s.name for s in request.turn.tools)}")
    if spec.write and spec != write_ok:
        raise ArgumentError(f"{name} changes data and the customer did not ask for it; plan only read tools")
    args = validate_args(spec, raw)
    record_id = args.get(spec.id_arg) if spec.id_arg else None
    if record_id is not None:
        allowed = allowed_ids(request)
        if record_id not in allowed:
            options = f"use one of {sorted(allowed)}" if allowed else "no id was given"
            omit = "; or omit it to list the customer's own records" if not spec.needs_id else ""
            raise ArgumentError(f"{spec.id_arg} {record_id} was not given by the customer ({options}{omit})")
    return {"name": name, "args": args}


class LLMToolPlanner:
    """Plans tool calls with the chat model's tool calling, checked by code."""

    def __init__(self, llm: BaseChatModel, *, max_steps: int = DEFAULT_MAX_STEPS) -> None:
        """Use ``llm`` for at most ``max_steps`` rounds (a round = one model call) per plan."""
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.llm = llm
        self.max_steps = max_steps

    def plan(self, request: ToolRequest) -> list[ToolCallPlan]:
        """Return the checked calls.

        Raises:
            StepFailed: The model failed, proposed nothing, or nothing valid within the budget.

        """
        tools = list(request.turn.tools)
        action = action_tool(request.action, tools)
        write_ok = action if action is not None and action.write else None
        model = self.llm.bind_tools(tool_schemas(tools))
        messages: list[BaseMessage] = [
            SystemMessage(TOOL_PLANNER_SYSTEM),
            HumanMessage(TOOL_PLANNER_USER.format(
                question=request.turn.question["text"],
                facts="；".join(f"{f['kind']}={f['value']}" for f in request.turn.facts) or "无",
                action=request.action.get("label", request.action.get("intent", "")),
                ids="、".join(sorted(allowed_ids(request))) or "无"))]
        for step in range(self.max_steps):
            reply = self._ask(model, messages)
            if not reply.tool_calls:
                raise StepFailed("tool planner: the model proposed no tool call")
            messages.append(reply)
            plans, problems = self._check(reply, request, write_ok, messages)
            if not problems:
                return plans
            logger.info("tool planner round %d rejected: %s", step + 1, "; ".join(problems))
        raise StepFailed(f"tool planner: no valid plan within {self.max_steps} steps")

    def _ask(self, model: Any, messages: list[BaseMessage]) -> AIMessage:
        try:
            reply = model.invoke(messages)
        except Exception as exc:  # a dead endpoint, a timeout: the rules planner takes over
            raise StepFailed(f"tool planner: {type(exc).__name__}: {exc}") from exc
        if not isinstance(reply, AIMessage):
            raise StepFailed("tool planner: the model did not return a message")
        return reply

    @staticmethod
    def _check(reply: AIMessage, request: ToolRequest, write_ok: ToolSpec | None,
               messages: list[BaseMessage]) -> tuple[list[ToolCallPlan], list[str]]:
        """Check every proposed call; answer each with an observation; return plans and problems."""
        plans: list[ToolCallPlan] = []
        problems: list[str] = []
        for call in reply.tool_calls:
            try:
                plans.append(check_call(call["name"], call.get("args"), request, write_ok))
                note = "ok"
            except ArgumentError as exc:
                problems.append(str(exc))
                note = f"error: {exc}"
            messages.append(ToolMessage(note, tool_call_id=call.get("id") or call["name"]))
        writes = [p for p in plans if write_ok is not None and p["name"] == write_ok.name]
        if writes and len(plans) > 1:
            problems.append("a write must be planned alone")
            messages.append(HumanMessage("error: plan the write call alone, without other calls"))
        elif write_ok is not None and not writes and not problems:
            problems.append(f"the customer asked for {write_ok.name}")
            messages.append(HumanMessage(f"error: the customer asked for {write_ok.name}; plan that call alone"))
        return plans, problems


class FallbackToolPlanner:
    """The primary planner; the fallback's plan when it fails (the reason is logged)."""

    def __init__(self, primary: ToolPlanner, fallback: ToolPlanner) -> None:
        self.primary = primary
        self.fallback = fallback

    def plan(self, request: ToolRequest) -> list[ToolCallPlan]:
        """Return the primary's plan, else the fallback's."""
        try:
            return self.primary.plan(request)
        except StepFailed as failed:
            logger.warning("LLM tool planner failed (%s); rules plan used", failed.reason)
            return self.fallback.plan(request)
