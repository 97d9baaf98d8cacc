"""``csagent ask``: one customer turn from the command line (or the answer to a waiting thread).

A turn that stops at a confirmation or a human handoff prints the question and the exact command
that continues the thread, e.g. ``csagent ask --thread T --resume yes``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import uuid
from typing import TYPE_CHECKING, Any

from csagent.errors import UsageError

if TYPE_CHECKING:
    from csagent.api import CSAgent, TurnResult
    from csagent.config import Settings

HELP = "ask the agent one question (one turn); --resume answers a waiting confirmation or handoff"
DEMO_USER = "u1001"


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options ``ask`` and ``chat`` share (index, user, thread)."""
    parser.add_argument("--index", metavar="DIR", help="knowledge index dir (default: data_dir/index)")
    parser.add_argument("--user-id", default=DEMO_USER, metavar="U",
                        help=f"the authenticated customer (default: demo user {DEMO_USER})")
    parser.add_argument("--thread", metavar="T", help="conversation thread id (default: a new one)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``ask``'s arguments."""
    parser.add_argument("question", nargs="?", metavar="QUESTION", help="the customer's message")
    add_common_arguments(parser)
    parser.add_argument("--resume", metavar="VALUE",
                        help="answer the thread's waiting confirmation (确认 to run the action; "
                             "needs --thread)")
    parser.add_argument("--as-agent", metavar="AGENT_ID",
                        help="send QUESTION as a human agent's reply to a handed-off thread "
                             "(needs --thread; the customer cannot author it)")
    parser.add_argument("--json", action="store_true", help="print the TurnResult as JSON")


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Return settings from the environment with the command line's overrides."""
    from csagent.config import Settings

    try:
        return Settings.from_env(index_dir=getattr(args, "index", None))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def open_agent(args: argparse.Namespace) -> CSAgent:
    """Build the agent (loads the index: raises IndexNotFoundError with advice if missing)."""
    from csagent.api import CSAgent

    return CSAgent(settings_from_args(args))


def format_result(result: TurnResult, *, user_id: str, show_continue: bool = True) -> str:
    """Render a turn for people: the answer, its sources, status line, and how to continue."""
    lines = [result.answer.rstrip(), ""]
    if result.citations:
        lines.append("sources:")
        for i, cite in enumerate(result.citations, 1):
            title = cite.get("title") or ""
            version = f" ({cite['version']})" if cite.get("version") else ""
            lines.append(f"  [{i}] {cite.get('id', '')} {title}{version}".rstrip())
    meta = f"status: {result.status}"
    if result.fail_reason:
        meta += f" ({result.fail_reason})"
    lines.append(f"{meta}  thread: {result.thread_id}  trace: {result.trace_id}")
    payload = result.interrupt or {}
    if payload.get("type") == "handoff":
        lines.append("handoff for a human agent:")
        lines.append(f"  question: {payload.get('question', '')}")
        lines.append(f"  summary: {payload.get('summary', '')}")
        lines.append(f"  reason: {payload.get('reason', '')}")
        for item in payload.get("evidence") or []:
            lines.append(f"  evidence: {item.get('id', '')} {item.get('title', '')}")
    if show_continue and result.waiting:
        thread = shlex.quote(result.thread_id)
        user = "" if user_id == DEMO_USER else f" --user-id {shlex.quote(user_id)}"
        if payload.get("type") == "confirm":
            lines.append(f"to continue: csagent ask --thread {thread}{user} --resume yes"
                         "   (or --resume no)")
        else:
            lines.append(f"a human agent answers with: csagent ask --thread {thread} "
                         "--as-agent AGENT_ID '<reply>'  (or the desk of csagent serve)")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """Run one turn (or a resume) and print it."""
    if args.resume is None and not (args.question or "").strip():
        raise UsageError("give a QUESTION (or --thread T --resume VALUE to continue a thread)")
    if args.resume is not None and not args.thread:
        raise UsageError("--resume needs --thread T (the thread that is waiting)")
    if args.resume is not None and args.question:
        raise UsageError("give either a QUESTION or --resume, not both")
    if getattr(args, "as_agent", None) and (not args.thread or args.resume is not None):
        raise UsageError("--as-agent needs --thread T and the reply as QUESTION (no --resume)")
    thread = args.thread or uuid.uuid4().hex[:12]
    with open_agent(args) as agent:
        if getattr(args, "as_agent", None):
            result = agent.reply_as_agent(args.question, agent_id=args.as_agent, thread_id=thread)
        elif args.resume is not None:
            result = agent.resume(args.resume, user_id=args.user_id, thread_id=thread)
        else:
            result = agent.ask(args.question, user_id=args.user_id, thread_id=thread)
    if args.json:
        out: dict[str, Any] = result.to_json()
        sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(format_result(result, user_id=args.user_id))
    return 0
