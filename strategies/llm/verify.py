"""The LLM claim checker: the model splits the answer into atomic claims and judges each one."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from contracts.evidence import Evidence
from contracts.verification import Check, ClaimResult, Verification, overall_of
from strategies.llm.prompts import VERIFY_SYSTEM, VERIFY_USER
from strategies.llm.schemas import VerificationResult
from strategies.llm.structured import structured_call
from strategies.protocols import CheckRequest
from strategies.rules.claims import parse_citations
from strategies.rules.evidence import render_evidence


def cited_evidence(request: CheckRequest) -> list[Evidence]:
    """Return the evidence the answer cites (all of it when it cites none): what the check needs."""
    cited = set(parse_citations(request.answer))
    return [e for e in request.evidence if str(e["id"]) in cited] or list(request.evidence)


class LLMClaimChecker:
    """Per-claim verdicts from the chat model; a failed call is a failed ``llm_claims`` check.

    Used alone it trusts the model; :class:`strategies.combined.CodeThenLLMChecker` runs the
    code checks first and merges both (the default with an LLM).
    """

    def __init__(self, llm: BaseChatModel) -> None:
        self.llm = llm

    def check(self, request: CheckRequest) -> Verification:
        """Return the model's claims and an ``llm_claims`` check (``error`` when the call failed)."""
        ev_ids = {str(e["id"]) for e in request.evidence}
        messages = [SystemMessage(VERIFY_SYSTEM),
                    HumanMessage(VERIFY_USER.format(evidence=render_evidence(cited_evidence(request)),
                                                    question=request.question, answer=request.answer))]
        outcome = structured_call(self.llm, VerificationResult, messages)
        result = outcome.value
        check: Check = {"name": "llm_claims", "ok": result is not None and result.overall == "pass",
                        "error": outcome.error}
        claims: list[ClaimResult] = [
            {"claim": v.claim, "status": v.status, "source": "llm",
             "evidence_ids": [i for i in v.evidence_ids if i in ev_ids], "reason": v.reason}
            for v in (result.claims if result is not None else [])]
        return {"overall": overall_of(claims), "claims": claims, "checks": [check]}
