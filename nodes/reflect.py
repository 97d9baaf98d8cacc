"""Reflection: unsupported claims go back to generation as feedback; bounded in state."""

from __future__ import annotations

from typing import Any

from graph.state import State


def unsupported_claims(verification: dict[str, Any]) -> list[str]:
    """Return the claim texts the verifier marked unsupported."""
    return [c["claim"] for c in verification.get("claims", []) if c.get("status") == "unsupported"]


def reflect(state: State) -> dict[str, Any]:
    """Record the unsupported claims as feedback and count one reflection round."""
    feedback = list(dict.fromkeys([*(state.get("feedback") or []),
                                   *unsupported_claims(state.get("verification") or {})]))
    return {"feedback": feedback, "reflections": (state.get("reflections") or 0) + 1}
