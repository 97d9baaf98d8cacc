"""Evidence items: knowledge-base chunks and tool results the answer may cite.

Every item is a JSON-serialisable dict keyed by ``id``; chunk ids look like ``doc#1a2b3c4d``,
tool evidence ids like ``tool:order_lookup#1`` (those carry ``result`` and ``args``).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from contracts.tools import ToolResult

EvidenceKind = Literal["chunk", "tool"]
EVIDENCE_RESET = "__reset__"  # the evidence reducer's "clear first" sentinel


class Scores(TypedDict, total=False):
    """Retrieval scores of a chunk (absent when a stage did not run)."""

    score: float
    bm25: float
    dense: float
    fused: float
    rerank: float


class Evidence(TypedDict):
    """One piece of evidence for this turn."""

    id: str
    kind: EvidenceKind
    doc_id: str
    title: str
    text: str
    source: str
    version: str
    effective_date: str
    superseded: bool
    conflict: bool
    table: bool
    scores: Scores
    superseded_by: NotRequired[str | None]
    version_frame: NotRequired[str]  # "in_force_old" | "not_yet_in_force": see strategies.rules.versions
    in_force_on_date: NotRequired[bool]  # its document governed the question's dated event (ditto)
    heading_path: NotRequired[list[str]]
    category: NotRequired[str]  # chunk evidence: its document's declared category (front matter), if any
    query_index: NotRequired[int]  # which rewritten query found it
    rank: NotRequired[int]  # its rank in that query's hits
    brief: NotRequired[str]  # tool evidence: the lines a short answer states (subset of text)
    result: NotRequired[ToolResult]  # tool evidence: the raw result
    args: NotRequired[dict[str, Any]]  # tool evidence: the call's arguments


class EvidenceSnippet(TypedDict):
    """Evidence as a human agent sees it in a handoff payload."""

    id: str
    title: str
    text: str
