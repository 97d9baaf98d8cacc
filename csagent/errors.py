"""User-facing errors (defined in :mod:`contracts.errors`; re-exported for the app)."""

from __future__ import annotations

from contracts.errors import CsagentError, IndexNotFoundError, LLMUnavailableError, UsageError

__all__ = ["CsagentError", "IndexNotFoundError", "LLMUnavailableError", "UsageError"]
