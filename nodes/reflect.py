"""Reflection node: unsupported claims go back to generation as feedback; bounded in state."""

from __future__ import annotations

from contracts.state import State
from strategies.rules.verify import unsupported_claims


def reflect(state: State) -> State:
    """Record the unsupported claims as feedback and count one reflection round."""
    feedback = list(dict.fromkeys([*(state.get("feedback") or []),
                                   *unsupported_claims(state.get("verification") or {})]))
    return {"feedback": feedback, "reflections": (state.get("reflections") or 0) + 1}
