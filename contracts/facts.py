"""Facts carried across turns: what the customer said and what valid tool results confirmed.

Facts are structured (kind, value, source); they are rendered to text only for a prompt or a
handoff summary (``strategies.rules.facts.render_facts``), never parsed back.
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

FactKind = Literal["order_id", "region", "payment", "tier", "previous_question"]


class Fact(TypedDict):
    """One fact: ``source`` is ``"user"`` (the customer said it) or ``"tool:<name>"`` (verified)."""

    kind: FactKind
    value: str
    source: str
