"""Load the tool backend a deployment names: ``CSAGENT_TOOLS=package.module:factory``.

The factory is called with the process :class:`csagent.config.Settings` (any object: the loader
does not look inside it) and returns a :class:`tools.backend.ToolBackend`. Unset, the demo
SQLite shop is used (``DEFAULT_SPEC``). A spec that cannot be loaded raises
:class:`ToolsConfigError` with one clear sentence, never an import traceback.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
from typing import Any

from tools.backend import ToolBackend, is_backend

logger = logging.getLogger(__name__)

ENV_VAR = "CSAGENT_TOOLS"
DEFAULT_SPEC = "shop.tools:sqlite_backend"
HTTP_SPEC = "shop.http_client:http_backend"
_SPEC_RE = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")


class ToolsConfigError(ValueError):
    """``CSAGENT_TOOLS`` does not name a usable backend factory (exit code 2 in the CLI)."""

    exit_code = 2


def backend_spec(settings: Any = None) -> str:
    """Return the factory spec in force.

    Settings with a ``tools`` field decide alone (they already read ``CSAGENT_TOOLS``; ``None``
    means the demo shop, so ``dataclasses.replace(settings, tools=None)`` forces it); for any
    other object the environment variable, else the default.
    """
    if settings is not None and hasattr(settings, "tools"):
        configured = settings.tools
    else:
        configured = os.environ.get(ENV_VAR, "").strip()
    return str(configured).strip() if configured else DEFAULT_SPEC


def load_factory(spec: str) -> Any:
    """Import and return the factory ``spec`` names (``package.module:callable``).

    Raises:
        ToolsConfigError: Malformed spec, missing module, missing or non-callable attribute.

    """
    spec = spec.strip()
    if not _SPEC_RE.match(spec):
        raise ToolsConfigError(
            f"{ENV_VAR}={spec!r} is not of the form package.module:factory "
            f"(for example {DEFAULT_SPEC})")
    module_name, attr = spec.split(":", 1)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ToolsConfigError(f"{ENV_VAR}: cannot import module {module_name!r} ({exc})") from None
    factory = getattr(module, attr, None)
    if factory is None or not callable(factory):
        raise ToolsConfigError(f"{ENV_VAR}: module {module_name!r} has no callable {attr!r}")
    return factory


def load_backend(settings: Any = None, spec: str | None = None) -> ToolBackend:
    """Build the tool backend: ``factory(settings)`` for the configured spec.

    Args:
        settings: Handed to the factory unchanged.
        spec: Overrides the configured spec (call > environment > default).

    Raises:
        ToolsConfigError: The spec cannot be loaded, the factory failed, or what it returned
            has no ``specs()``/``call()``.

    """
    spec = spec or backend_spec(settings)
    factory = load_factory(spec)
    try:
        backend = factory(settings)
    except ToolsConfigError:
        raise
    except Exception as exc:
        raise ToolsConfigError(f"{ENV_VAR}: factory {spec} failed: {type(exc).__name__}: {exc}") from None
    if not is_backend(backend):
        raise ToolsConfigError(
            f"{ENV_VAR}: {spec} returned {type(backend).__name__}, which has no specs()/call()")
    logger.info("tool backend %s: %s", spec, ", ".join(s.name for s in backend.specs()))
    return backend
