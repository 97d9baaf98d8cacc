"""``csagent chat``: an interactive conversation on one thread, read line by line from stdin.

Works with a terminal or a pipe (prompts are only shown on a terminal). Confirmations are answered
inline (the next line is the yes/no); at a handoff the next line is typed as the human agent's
reply. Commands: ``/quit`` (or end of input) leaves, ``/new`` starts a new thread, ``/help``.
Empty lines are ignored.
"""

from __future__ import annotations

import argparse
import sys
import uuid

from csagent.commands.ask import add_common_arguments, format_result, open_agent
from csagent.errors import UsageError

HELP = "chat with the agent interactively (stdin lines; /quit to leave)"
COMMANDS_HELP = "commands: /quit leave, /new new thread, /help this help\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``chat``'s arguments."""
    add_common_arguments(parser)


def _prompt(text: str, interactive: bool) -> None:
    if interactive:
        sys.stdout.write(text)
        sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    """Read customer lines until /quit or end of input; answer each on the same thread."""
    stdin = sys.stdin
    interactive = stdin.isatty()
    thread = args.thread or uuid.uuid4().hex[:12]
    user_id = args.user_id
    with open_agent(args) as agent:
        waiting = agent.pending(user_id=user_id, thread_id=thread)
        sys.stdout.write(f"csagent chat: user {user_id}, thread {thread}. {COMMANDS_HELP}")
        while True:
            kind = (waiting or {}).get("type")
            label = "确认(是/否)> " if kind == "confirm" else "人工客服> " if kind else "你> "
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
                if waiting is not None:
                    result = agent.resume(text, user_id=user_id, thread_id=thread)
                else:
                    result = agent.ask(text, user_id=user_id, thread_id=thread)
            except UsageError as exc:
                sys.stdout.write(f"! {exc}\n")
                continue
            sys.stdout.write(format_result(result, user_id=user_id, show_continue=False))
            waiting = result.interrupt
            if waiting and waiting.get("type") != "confirm":
                sys.stdout.write("(the next line is sent as the human agent's reply)\n")
            sys.stdout.write("\n")
            sys.stdout.flush()
    return 0
