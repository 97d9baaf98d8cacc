"""Re-export of :mod:`contracts.state` (the typed graph state lives below the nodes)."""

from __future__ import annotations

from contracts.routing import FailReason, Route, Status
from contracts.state import (
    EVIDENCE_RESET,
    Citation,
    InputState,
    OutputState,
    State,
    reduce_evidence,
    replace_evidence,
)

__all__ = ["EVIDENCE_RESET", "Citation", "FailReason", "InputState", "OutputState", "Route", "State",
           "Status", "reduce_evidence", "replace_evidence"]
