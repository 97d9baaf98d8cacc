"""The ``csagent`` command line: one subcommand per module in :mod:`csagent.commands`.

Each command module exposes ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``. Modules are imported lazily so ``csagent --help`` stays fast and a
broken optional dependency only affects the command that needs it. Packages beside the product
(``eval``) add commands through the ``csagent.commands`` entry-point group; a built-in command
wins on a name clash.

Every error the user can cause is one line on stderr (``csagent COMMAND: message``) and a
documented exit status (:data:`EXIT_CODES`, shown by ``--help``); a traceback is printed only
with ``-vv``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, NoReturn

from csagent import __version__
from csagent.errors import CsagentError

COMMANDS: dict[str, str] = {
    "ingest": "csagent.commands.ingest",
    "search": "csagent.commands.search",
    "ask": "csagent.commands.ask",
    "chat": "csagent.commands.chat",
    "demo": "csagent.commands.demo",
    "replay": "csagent.commands.replay",
    "trace": "csagent.commands.trace",
    "verify": "csagent.commands.verify",
    "llm": "csagent.commands.llm",
    "serve": "csagent.commands.serve",
}

ENTRY_POINT_GROUP = "csagent.commands"
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug, not the user's fault
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (0, "success"),
    (1, "done, but some input items were bad and skipped (replay, verify)"),
    (2, "usage or configuration error (bad option, bad CSAGENT_* setting, unusable path or input)"),
    (3, "the knowledge index is missing or damaged (run csagent ingest)"),
    (4, "the LLM endpoint is unavailable"),
    (EXIT_INTERNAL, "internal error (a bug: re-run with -vv for the traceback)"),
    (130, "interrupted (Ctrl-C)"),
)
EPILOG = "exit status:\n" + "\n".join(f"  {code:<4} {text}" for code, text in EXIT_CODES)

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


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line: ``csagent ask: error: … (see --help)``."""

    def error(self, message: str) -> NoReturn:
        """Print the error as one line and exit with status 2."""
        first = message.strip().splitlines()[0] if message.strip() else "bad arguments"
        self.exit(2, f"{self.prog}: error: {first} (see {self.prog} --help)\n")


def _command_modules() -> dict[str, ModuleType]:
    """Import the built-in commands, then the entry-point ones (built-ins win on a clash)."""
    modules: dict[str, ModuleType] = {}
    for name, module_name in COMMANDS.items():
        try:
            modules[name] = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue  # a command not built yet; the others still work
    try:
        found = list(entry_points(group=ENTRY_POINT_GROUP))
    except Exception as exc:  # noqa: BLE001 - broken metadata must not break the CLI
        logging.getLogger(__name__).debug("entry points unavailable: %s", exc)
        found = []
    for ep in found:
        if ep.name in modules:
            continue
        try:
            module = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plug-in only loses its own command
            logging.getLogger(__name__).warning("command %s unavailable: %s", ep.name, exc)
            continue
        if all(hasattr(module, a) for a in ("HELP", "add_arguments", "run")):
            modules[ep.name] = module
    return modules


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every subcommand registered."""
    parser = Parser(prog="csagent", description=__doc__.splitlines()[0], epilog=EPILOG,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"csagent {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, module in _command_modules().items():
        command = sub.add_parser(name, help=module.HELP, description=module.HELP, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def clean_argv(argv: Sequence[str]) -> list[str]:
    """Return ``argv`` with undecodable bytes and lone surrogates replaced by U+FFFD."""
    from strategies.rules.hygiene import clean_text

    return [clean_text(a) for a in argv]


def _safe_streams() -> None:
    """Never crash on writing text the terminal cannot encode (it is replaced instead)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):  # a closed or exotic stream: leave it
                pass


def _one_line(text: Any) -> str:
    lines = str(text).strip().splitlines()
    return lines[0] if lines else ""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code (see :data:`EXIT_CODES`)."""
    configure_process()
    _safe_streams()
    parser = build_parser()
    args = parser.parse_args(clean_argv(sys.argv[1:] if argv is None else argv))
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
        sys.stderr.write(f"csagent {args.command}: {_one_line(exc)}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except BrokenPipeError:  # `csagent search … | head`: the reader left, nothing to report
        return 0
    except OSError as exc:  # a path given by the user cannot be read or written
        where = f" {exc.filename}" if exc.filename else ""
        sys.stderr.write(f"csagent {args.command}: cannot use{where}: "
                         f"{exc.strerror or _one_line(exc)}\n")
        return 2
    except Exception as exc:  # noqa: BLE001 - the last resort: one line, no traceback
        if args.verbose >= 2:
            traceback.print_exc()
        sys.stderr.write(f"csagent {args.command}: internal error: {type(exc).__name__}: "
                         f"{_one_line(exc)[:300]} (re-run with -vv for the traceback)\n")
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
