"""Per-run settings read by nodes through ``runtime.context`` (no secrets, no clients).

Precedence, whichever entry point runs the graph (``langgraph dev``, the API, the CLI, replay):
a value passed with the call > the environment (``CSAGENT_*``) > the default below. Every
field's default is read from the environment by :func:`env_default` when a ``Context`` is
built, so ``CSAGENT_TOP_K=3 langgraph dev`` takes effect for runs that do not pass ``top_k``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from datetime import date
from typing import Any, Literal, TypeVar

from contracts.errors import UsageError

RetrievalMode = Literal["bm25", "vector", "hybrid"]
RETRIEVAL_MODES: tuple[RetrievalMode, ...] = ("bm25", "vector", "hybrid")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
# Field → (environment variable, built-in default).
ENV_VARS: dict[str, tuple[str, Any]] = {
    "user_id": ("", "anonymous"),  # never from the environment: the backend's authenticated user
    "domain_profile": ("CSAGENT_DOMAIN_PROFILE", "shop"),
    "retrieval_mode": ("CSAGENT_RETRIEVAL_MODE", "hybrid"),
    "top_k": ("CSAGENT_TOP_K", 5),
    "recall_k": ("CSAGENT_RECALL_K", 30),
    "rerank": ("CSAGENT_RERANK", None),  # None: the index's measured default
    "max_reflections": ("CSAGENT_MAX_REFLECTIONS", 2),
    "llm_verify": ("CSAGENT_LLM_VERIFY", True),
    "today": ("CSAGENT_TODAY", ""),  # "": the system date; a fixed day replays old logs as of their day
}
T = TypeVar("T")


def _parse(name: str, var: str, raw: str, default: Any) -> Any:
    value = raw.strip()
    if name == "rerank" or isinstance(default, bool):
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise UsageError(f"{var}={raw!r}: expected true or false")
    if isinstance(default, int):
        try:
            number = int(value)
        except ValueError:
            raise UsageError(f"{var}={raw!r}: expected an integer") from None
        if number < (0 if name == "max_reflections" else 1):
            raise UsageError(f"{var}={raw!r}: out of range")
        return number
    if name == "today" and value:
        try:
            date.fromisoformat(value)
        except ValueError:
            raise UsageError(f"{var}={raw!r}: expected a date YYYY-MM-DD") from None
    if name == "retrieval_mode" and value not in RETRIEVAL_MODES:
        raise UsageError(f"{var}={raw!r}: expected one of {', '.join(RETRIEVAL_MODES)}")
    return value


def env_default(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """Return the default of Context field ``name``: its ``CSAGENT_*`` variable when set, else built-in.

    Raises:
        UsageError: when the variable is set to a value of the wrong type.

    """
    var, default = ENV_VARS[name]
    raw = (os.environ if environ is None else environ).get(var) if var else None
    if raw is None or not raw.strip():
        return default
    return _parse(name, var, raw, default)


def _from_env(name: str) -> Callable[[], Any]:
    return lambda: env_default(name)


@dataclass(kw_only=True)
class Context:
    """Run-time configuration for one invocation.

    ``user_id`` is the chat backend's authenticated user: tools take it from here, never from
    the message or the LLM.
    """

    user_id: str = field(default_factory=_from_env("user_id"))
    domain_profile: str = field(default_factory=_from_env("domain_profile"))
    retrieval_mode: RetrievalMode = field(default_factory=_from_env("retrieval_mode"))
    top_k: int = field(default_factory=_from_env("top_k"))
    recall_k: int = field(default_factory=_from_env("recall_k"))
    rerank: bool | None = field(default_factory=_from_env("rerank"))
    max_reflections: int = field(default_factory=_from_env("max_reflections"))
    llm_verify: bool = field(default_factory=_from_env("llm_verify"))  # LLM claim check after code
    today: str = field(default_factory=_from_env("today"))  # which policy version is in force for dated questions


def make_context(**overrides: Any) -> Context:
    """Return a Context: the given (non-None) values, the environment for the rest.

    Raises:
        UsageError: for an unknown field name or a bad environment value.

    """
    known = {f.name for f in fields(Context)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise UsageError(f"unknown context setting(s): {', '.join(unknown)}")
    return Context(**{k: v for k, v in overrides.items() if v is not None})
