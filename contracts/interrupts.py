"""Interrupt payloads: what a waiting run shows the customer (confirm) or a human agent (handoff)."""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict

from contracts.evidence import EvidenceSnippet


class ConfirmPayload(TypedDict):
    """A write action waiting for the customer's yes (resumed with yes/no/bool/{"confirm": bool})."""

    type: Literal["confirm"]
    action: dict[str, Any]  # the pending action: tool, args, description (see PendingAction)
    prompt: str


class HandoffPayload(TypedDict):
    """What a human agent needs (resumed with the agent's reply: str or {"reply": str})."""

    type: Literal["handoff"]
    question: str
    summary: str
    reason: str
    evidence: list[EvidenceSnippet]
