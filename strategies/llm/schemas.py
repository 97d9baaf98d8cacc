"""Structured LLM outputs: pydantic models with ``Literal`` fields, never free "yes"/"no" strings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

RouteName = Literal["answer", "tool", "confirm", "refuse", "clarify", "handoff", "chitchat"]


class BoundaryDecision(BaseModel):
    """The boundary router's decision for one customer message."""

    route: RouteName = Field(description="answer=知识库问答, tool=查询订单/物流/商品, confirm=退款退货换货或取消订单等写操作, refuse=风险领域或越界, clarify=意图不清, handoff=转人工, chitchat=寒暄")
    domain: str = Field(description="业务域或风险域名称，如 after_sales、logistics、medical")
    intent: str = Field(description="具体意图，如 refund、order_lookup、change_address")
    confidence: float = Field(ge=0.0, le=1.0, description="0到1之间的置信度")
    reason: str = Field(default="", description="一句话理由")


class RewrittenQueries(BaseModel):
    """One to three retrieval queries (the original question is added back by code)."""

    queries: list[str] = Field(min_length=1, max_length=3)


class GeneratedAnswer(BaseModel):
    """A grounded answer whose every factual sentence carries 【来源:id】."""

    answer: str = Field(description="简体中文回答；每个陈述事实的句子末尾带【来源:资料id】")
    cannot_answer: bool = Field(default=False, description="资料不足以回答时为 true")


class ClaimVerdict(BaseModel):
    """One atomic claim of an answer and whether the evidence supports it."""

    claim: str
    status: Literal["supported", "unsupported", "unknown"]
    evidence_ids: list[str] = Field(default_factory=list)
    reason: str = ""


class VerificationResult(BaseModel):
    """The LLM verifier's per-claim verdicts and overall judgement."""

    claims: list[ClaimVerdict]
    overall: Literal["pass", "fail", "need_recheck"]
