"""User-facing errors: the CLI prints their message (no traceback) and exits non-zero."""

from __future__ import annotations


class CsagentError(Exception):
    """An error with a clear message for the user; ``exit_code`` is the process exit status."""

    exit_code = 1


class UsageError(CsagentError):
    """Bad input from the user (empty query, malformed file, unknown option value)."""

    exit_code = 2


class IndexNotFoundError(CsagentError):
    """The knowledge index does not exist (run ``csagent ingest`` first)."""

    exit_code = 3


class LLMUnavailableError(CsagentError):
    """The configured LLM endpoint failed after bounded retries."""

    exit_code = 4
