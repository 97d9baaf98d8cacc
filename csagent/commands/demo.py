"""``csagent demo``: a scripted tour of the agent on the demo shop as demo customer u1001.

Seven turns show each behaviour: a cited policy answer, an order lookup, logistics tracking, a
risk-domain question refused, an address change honestly refused (there is no such tool), a
refund that waits for the customer's confirmation (the demo answers 「确认」), and a hand-off to a
human agent (the demo types the agent's reply). The tour runs on a fresh copy of the demo shop
database and an in-memory conversation store, so it can be repeated and changes nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from csagent.commands.ask import format_result, settings_from_args

HELP = "a scripted tour on the demo shop (cited answers, tools, refusals, confirmation, handoff)"
DEMO_USER = "u1001"
DEMO_AGENT = "demo-agent"
HUMAN_REPLY = "您好，我是人工客服小优。您的投诉已登记，我们会在24小时内电话联系您处理，给您带来不便非常抱歉。"


@dataclass(frozen=True)
class Step:
    """One scripted turn: what it shows, the customer's message, and how to answer a wait."""

    title: str
    message: str
    confirm: str | None = None  # the customer's reply if the agent asks for confirmation
    human_reply: str | None = None  # the human agent's reply if the agent hands off


STEPS: tuple[Step, ...] = (
    Step("policy question, answered with citations", "七天无理由退货的话，退货运费谁来出？"),
    Step("order lookup (tool, the user comes from the run context)",
         "帮我查一下订单 SO2026112500103 现在什么状态"),
    Step("logistics tracking", "SO2026112500103 这个快递到哪了？"),
    Step("risk domain: refused politely", "我最近老是头疼失眠，应该吃什么药？"),
    Step("action with no tool: refused honestly",
         "帮我把订单 SO2026112800104 的收货地址改成北京市朝阳区建国路1号"),
    Step("refund: the write waits for the customer's explicit yes",
         "订单 SO2026112000102 的耳机我不想要了，帮我申请退货退款", confirm="确认"),
    Step("hand-off to a human agent", "你们的服务太差了，我要投诉，马上给我转人工！",
         human_reply=HUMAN_REPLY),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``demo``'s arguments."""
    parser.add_argument("--index", metavar="DIR", help="knowledge index dir (default: data_dir/index)")


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    """Play the tour and print every turn with its status and citations."""
    from langgraph.checkpoint.memory import InMemorySaver

    from csagent.api import CSAgent

    with tempfile.TemporaryDirectory(prefix="csagent-demo-") as tmp:
        settings = dataclasses.replace(  # always the demo shop, on a throwaway copy
            settings_from_args(args).with_overrides(shop_db=Path(tmp) / "shop.sqlite"), tools=None)
        _write("csagent demo: 优选汇商城 customer service, demo customer u1001 "
               f"({'LLM ' + str(settings.llm_model) if settings.llm_configured else 'offline mode'})\n")
        statuses: list[str] = []
        with CSAgent(settings, checkpointer=InMemorySaver()) as agent:
            for number, step in enumerate(STEPS, 1):
                thread = f"demo-{uuid.uuid4().hex[:8]}"
                _write(f"\n── {number}/{len(STEPS)} {step.title} ──\n顾客> {step.message}\n")
                result = agent.ask(step.message, user_id=DEMO_USER, thread_id=thread)
                _write(format_result(result, user_id=DEMO_USER, show_continue=False))
                kind = (result.interrupt or {}).get("type")
                reply = step.confirm if kind == "confirm" else step.human_reply if kind else None
                if reply is not None:
                    who = "顾客" if kind == "confirm" else "人工客服"
                    _write(f"{who}> {reply}\n")
                    if kind == "confirm":
                        result = agent.resume(reply, user_id=DEMO_USER, thread_id=thread)
                    else:  # a human reply enters only through the agent-side entry point
                        result = agent.reply_as_agent(reply, agent_id=DEMO_AGENT, thread_id=thread)
                    _write(format_result(result, user_id=DEMO_USER, show_continue=False))
                statuses.append(result.status)
        summary = ", ".join(f"{i}:{s}" for i, s in enumerate(statuses, 1))
        _write(f"\ndone: {len(statuses)} turns ({summary})\n")
    return 0
