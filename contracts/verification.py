"""The verifier's verdict: per-claim results, named checks and the overall outcome."""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

ClaimStatus = Literal["supported", "unsupported", "unknown"]
Overall = Literal["pass", "fail", "need_recheck"]


class ClaimResult(TypedDict):
    """One claim of an answer: the sentence, its verdict, the evidence it rests on and why."""

    claim: str
    status: ClaimStatus
    evidence_ids: list[str]
    reason: str
    source: NotRequired[Literal["code", "llm"]]  # absent: the code checks
    unit_ids: NotRequired[list[str]]  # [answer] the evidence units (``<id>@<n>``) that support it


class Check(TypedDict):
    """A named pass/fail check over the whole answer (``error`` when an LLM check failed)."""

    name: str
    ok: bool
    error: NotRequired[str | None]


class Verification(TypedDict):
    """``overall``: any unsupported claim fails; any unknown one needs a recheck; else pass."""

    overall: Overall
    claims: list[ClaimResult]
    checks: list[Check]
    # [llm] LLM verdicts recorded but not counted: about sentences the code verified as evidence
    # text (``strategies.rules.anchored``); a small model's "unsupported" there is no veto
    advisory: NotRequired[list[ClaimResult]]


def overall_of(claims: list[ClaimResult]) -> Overall:
    """Return the overall verdict of a list of claim results."""
    statuses = {c["status"] for c in claims}
    if "unsupported" in statuses:
        return "fail"
    return "need_recheck" if "unknown" in statuses else "pass"


def fixed_reply_verification(check: str) -> Verification:
    """Return the verdict of a fixed reply (nothing to verify) recorded under ``check``."""
    return {"overall": "pass", "claims": [], "checks": [{"name": check, "ok": True}]}
