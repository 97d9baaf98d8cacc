"""Per-run settings read by nodes through ``runtime.context`` (no secrets, no clients)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(kw_only=True)
class Context:
    """Run-time configuration for one invocation.

    ``user_id`` is the chat backend's authenticated user: tools take it from here, never from
    the message or the LLM.
    """

    user_id: str = "anonymous"
    domain_profile: str = "shop"
    retrieval_mode: str = "hybrid"
    top_k: int = 5
    recall_k: int = 30
    rerank: bool | None = None  # None: the index's measured default
    max_reflections: int = 2
    llm_verify: bool = True  # run the LLM claim check after the code checks (when an LLM is set)
