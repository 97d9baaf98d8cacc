"""``csagent chat``: an interactive conversation on one thread, read line by line from stdin.

Works with a terminal or a pipe (prompts are only shown on a terminal). Confirmations are answered
inline (the next line is the answer). At a handoff the customer's next line is a new message: only
a human agent answers a handoff, with ``csagent chat --as-agent AGENT_ID --thread T`` (each line is
delivered as the agent's reply) or the desk of ``csagent serve``.
Commands: ``/quit`` (or end of input) leaves, ``/new`` starts a new thread, ``/help``.
Empty lines are ignored.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import Any

from csagent.commands.ask import add_common_arguments, format_result, open_agent
from csagent.errors import UsageError

HELP = "chat with the agent interactively (stdin lines; /quit to leave)"
COMMANDS_HELP = "commands: /quit leave, /new new thread, /help this help\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``chat``'s arguments."""
    add_common_arguments(parser)
    parser.add_argument("--as-agent", metavar="AGENT_ID",
                        help="be the human agent: each line is a reply to the handed-off --thread")


def _prompt(text: str, interactive: bool) -> None:
    if interactive:
        sys.stdout.write(text)
        sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    """Read customer lines until /quit or end of input; answer each on the same thread."""
    stdin = sys.stdin
    reconfigure = getattr(stdin, "reconfigure", None)
    if callable(reconfigure):
        reconfigure(errors="replace")  # a non-UTF-8 line becomes U+FFFD, not a crash
    interactive = stdin.isatty()
    thread = args.thread or uuid.uuid4().hex[:12]
    user_id = args.user_id
    if getattr(args, "as_agent", None):
        return _run_as_agent(args, stdin, interactive)
    with open_agent(args) as agent:
        waiting = agent.pending(user_id=user_id, thread_id=thread)
        sys.stdout.write(f"csagent chat: user {user_id}, thread {thread}. {COMMANDS_HELP}")
        while True:
            kind = (waiting or {}).get("type")
            label = "确认(回复「确认」办理)> " if kind == "confirm" else "人工客服> " if kind else "你> "
            _prompt(label, interactive)
            line = stdin.readline()
            if not line:
                break
            text = line.strip()
            if not text:
                continue
            if text in ("/quit", "/exit", "/q"):
                break
            if text == "/help":
                sys.stdout.write(COMMANDS_HELP)
                continue
            if text == "/new":
                thread, waiting = uuid.uuid4().hex[:12], None
                sys.stdout.write(f"new thread {thread}\n")
                continue
            try:
                if waiting is not None and waiting.get("type") == "confirm":
                    result = agent.resume(text, user_id=user_id, thread_id=thread)
                else:
                    result = agent.ask(text, user_id=user_id, thread_id=thread)
            except UsageError as exc:
                sys.stdout.write(f"! {exc}\n")
                continue
            sys.stdout.write(format_result(result, user_id=user_id, show_continue=False))
            waiting = result.interrupt
            if waiting and waiting.get("type") != "confirm":
                sys.stdout.write("(handed off: a human agent will reply)\n")
            sys.stdout.write("\n")
            sys.stdout.flush()
    return 0


def _run_as_agent(args: argparse.Namespace, stdin: Any, interactive: bool) -> int:
    """Read a human agent's reply lines and deliver each to the handed-off thread."""
    if not args.thread:
        raise UsageError("--as-agent needs --thread T (the handed-off thread)")
    with open_agent(args) as agent:
        sys.stdout.write(f"csagent chat: agent {args.as_agent}, thread {args.thread}. "
                         f"{COMMANDS_HELP}")
        while True:
            _prompt("人工客服> ", interactive)
            line = stdin.readline()
            if not line:
                break
            text = line.strip()
            if text in ("/quit", "/exit", "/q"):
                break
            if not text or text.startswith("/"):
                continue
            try:
                result = agent.reply_as_agent(text, agent_id=args.as_agent, thread_id=args.thread)
            except UsageError as exc:
                sys.stdout.write(f"! {exc}\n")
                continue
            sys.stdout.write(f"delivered ({result.status}, answered_by={result.answered_by})\n")
            sys.stdout.flush()
    return 0
