"""Re-export of :mod:`contracts.context` (per-run settings; call > environment > default)."""

from __future__ import annotations

from contracts.context import Context, env_default, make_context

__all__ = ["Context", "env_default", "make_context"]
