"""The ``csagent`` command line: one subcommand per module in :mod:`csagent.commands`.

Each command module exposes ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``. Modules are imported lazily so ``csagent --help`` stays fast and a
broken optional dependency only affects the command that needs it.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from csagent import __version__
from csagent.errors import CsagentError

COMMANDS: dict[str, str] = {
    "ingest": "csagent.commands.ingest",
    "search": "csagent.commands.search",
    "ask": "csagent.commands.ask",
    "chat": "csagent.commands.chat",
    "demo": "csagent.commands.demo",
    "eval": "csagent.commands.eval_cmd",
    "replay": "csagent.commands.replay",
    "trace": "csagent.commands.trace",
    "verify": "csagent.commands.verify",
}

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "LANGSMITH_TRACING": "false",
    "LANGFUSE_TRACING_ENABLED": "false" if not os.environ.get("LANGFUSE_PUBLIC_KEY") else "true",
    "TOKENIZERS_PARALLELISM": "false",
}


def configure_process() -> None:
    """Apply the offline-safe environment defaults (never overriding what the user set)."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every subcommand registered."""
    parser = argparse.ArgumentParser(prog="csagent", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"csagent {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue  # a command not built yet; the others still work
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    configure_process()
    parser = build_parser()
    args = parser.parse_args(argv)
    base = logging.getLevelName(os.environ.get("CSAGENT_LOG_LEVEL", "WARNING").upper())
    base = base if isinstance(base, int) else logging.WARNING
    level = base - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "_run", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args._run(args) or 0)
    except CsagentError as exc:
        sys.stderr.write(f"csagent {args.command}: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
