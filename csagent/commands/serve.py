"""``csagent serve``: the HTTP chat service and the human agents' desk (FastAPI + uvicorn).

Customer endpoints under ``/v1/threads/…`` (JSON or Server-Sent Events), the desk at ``/desk``,
the OpenAPI schema at ``/openapi.json``. Identities come from bearer tokens (``--auth-file``,
default: the demo tokens in ``csagent/service/demo_auth.json``) or from your own authenticator
(``--authenticator module:factory``). Conversations, the desk's queue and the per-thread locks
are SQLite files in the data dir, or Postgres with ``CSAGENT_DATABASE_URL=postgresql://…``
(then any number of workers on any number of machines can share them; see docs/DEPLOY.md).
Each worker runs its turns in ``--run-processes`` turn processes of its own (each with
``--run-threads`` turns in flight), so its event loop answers new requests at once.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
from pathlib import Path
from typing import Any

from csagent.errors import UsageError

HELP = "run the HTTP chat service and the human-agent desk (FastAPI + uvicorn)"
logger = logging.getLogger(__name__)

ENV_AUTH_FILE = "CSAGENT_AUTH_FILE"
ENV_AUTHENTICATOR = "CSAGENT_AUTHENTICATOR"
ENV_MAX_BODY = "CSAGENT_MAX_BODY_BYTES"
ENV_RUN_THREADS = "CSAGENT_RUN_THREADS"
ENV_RUN_PROCESSES = "CSAGENT_RUN_PROCESSES"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``serve``'s arguments."""
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--workers", type=int, default=1,
                        help="worker processes on this port (default 1; they share the store)")
    parser.add_argument("--index", metavar="DIR", help="knowledge index dir (default: data_dir/index)")
    parser.add_argument("--auth-file", metavar="FILE",
                        help=f"JSON file of bearer tokens (env {ENV_AUTH_FILE}; default: demo tokens)")
    parser.add_argument("--authenticator", metavar="MODULE:FACTORY",
                        help=f"your own authenticator factory (env {ENV_AUTHENTICATOR})")
    parser.add_argument("--max-body-bytes", type=int, metavar="N",
                        help=f"largest request body (env {ENV_MAX_BODY}; default 65536)")
    parser.add_argument("--run-processes", type=int, metavar="N",
                        help=f"turn processes per worker (env {ENV_RUN_PROCESSES}; default 2; 0: "
                             "turns in threads of the worker)")
    parser.add_argument("--run-threads", type=int, metavar="N",
                        help=f"turns in flight per turn process (env {ENV_RUN_THREADS}; default 3)")


def app_from_env() -> Any:
    """Build the app from ``CSAGENT_*`` environment variables (what each uvicorn worker runs)."""
    from csagent.api import CSAgent
    from csagent.config import Settings
    from csagent.service.app import ServiceConfig, create_app
    from csagent.service.auth import load_authenticator

    auth_file = os.environ.get(ENV_AUTH_FILE)
    authenticator = load_authenticator(os.environ.get(ENV_AUTHENTICATOR),
                                       Path(auth_file) if auth_file else None)
    defaults = ServiceConfig()
    processes = os.environ.get(ENV_RUN_PROCESSES)
    config = ServiceConfig(
        max_body_bytes=int(os.environ.get(ENV_MAX_BODY) or defaults.max_body_bytes),
        run_processes=int(processes) if processes else defaults.run_processes,
        run_threads=int(os.environ.get(ENV_RUN_THREADS) or defaults.run_threads))
    settings = Settings.from_env()
    # Postgres pools sized to what each process runs at once (many processes share the server);
    # the factories are partials of CSAgent so that turn processes (spawned) can rebuild them.
    http_agent = functools.partial(CSAgent, settings, db_connections=config.io_threads)
    run_agent = functools.partial(CSAgent, settings, db_connections=config.run_threads + 1)
    return create_app(http_agent, authenticator, config, run_factory=run_agent)


def run(args: argparse.Namespace) -> int:
    """Start uvicorn; return its exit code."""
    import uvicorn

    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be 1-65535, got {args.port}")
    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    if args.run_processes is not None and args.run_processes < 0:
        raise UsageError(f"--run-processes must be 0 or more, got {args.run_processes}")
    if args.run_processes is not None:
        os.environ[ENV_RUN_PROCESSES] = str(args.run_processes)
    for flag, env, value in (("--auth-file", ENV_AUTH_FILE, args.auth_file),
                             ("--authenticator", ENV_AUTHENTICATOR, args.authenticator),
                             ("--max-body-bytes", ENV_MAX_BODY, args.max_body_bytes),
                             ("--run-threads", ENV_RUN_THREADS, args.run_threads),
                             ("--index", "CSAGENT_INDEX_DIR", args.index)):
        if value is not None:
            if isinstance(value, int) and value < 1:
                raise UsageError(f"{flag} must be positive, got {value}")
            os.environ[env] = str(value)
    app_from_env_check()
    logging.getLogger(__name__).warning(
        "csagent serve on http://%s:%d (desk: /desk, schema: /openapi.json)", args.host, args.port)
    uvicorn.run("csagent.commands.serve:app_from_env", factory=True, host=args.host,
                port=args.port, workers=args.workers, log_level="warning", access_log=False,
                timeout_graceful_shutdown=5)
    return 0


def app_from_env_check() -> None:
    """Fail fast (exit 2) on a bad auth configuration, before uvicorn starts its workers."""
    from csagent.service.auth import load_authenticator

    auth_file = os.environ.get(ENV_AUTH_FILE)
    load_authenticator(os.environ.get(ENV_AUTHENTICATOR), Path(auth_file) if auth_file else None)
