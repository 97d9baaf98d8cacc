"""Tool results, specs and what a tool answers: re-exported from :mod:`contracts.tools`.

The declarations (:class:`Answers`, :class:`ToolSpec`) are maintained here by the tools layer's
owner but live at the bottom of the house, in ``contracts``, so every layer can read them.
"""

from __future__ import annotations

from contracts.tools import (
    CODE_BAD_ARGS,
    CODE_ERROR,
    CODE_FORBIDDEN,
    CODE_LOOP,
    CODE_NOT_FOUND,
    CODE_OK,
    CODE_REJECTED,
    CODE_TIMEOUT,
    CODE_UNAVAILABLE,
    FORM_LISTING,
    FORM_RECORD,
    FORM_SEARCH,
    FORMS,
    Answers,
    ToolResult,
    ToolSpec,
)

__all__ = [
    "CODE_BAD_ARGS", "CODE_ERROR", "CODE_FORBIDDEN", "CODE_LOOP", "CODE_NOT_FOUND", "CODE_OK",
    "CODE_REJECTED", "CODE_TIMEOUT", "CODE_UNAVAILABLE", "FORMS", "FORM_LISTING", "FORM_RECORD",
    "FORM_SEARCH", "Answers", "ToolResult", "ToolSpec",
]
