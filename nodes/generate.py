"""Cited generation: a grounded LLM answer, or offline an extractive answer with citations.

Every factual sentence carries 【来源:id】; tool results are stated as plain facts citing
``tool:<name>#n``; a tool failure or empty result is said as such; superseded policy versions
are never cited as current; nothing relevant → the fixed no-answer reply.

Offline, the sentences are chosen by :mod:`nodes.extract` (IDF-weighted coverage of the
question's terms, FAQ headings, table row headers, the asked answer type, complements for a
missing part, the current rule after a sentence about the old one) behind a coverage gate
(:func:`passes_gate`); the verifier checks every chosen sentence as before.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from graph.context import Context
from graph.deps import Deps
from graph.state import State
from knowledge.gazetteer import province_of
from knowledge.normalize import normalize_text, tokenize
from nodes.claims import split_units, strip_citations
from nodes.evidence import render_evidence
from nodes.extract import (
    asked_types,
    build_candidates,
    choose,
    content_terms,
    question_bigrams,
    score_candidates,
    slot_terms,
    term_in,
)
from nodes.llm import structured_call
from nodes.normalize import normalize_for_compare
from nodes.profiles import load_profile
from nodes.prompts import GENERATE_SYSTEM, GENERATE_USER, REFLECT_FEEDBACK
from nodes.respond import NO_ANSWER
from nodes.schemas import GeneratedAnswer

QUESTION_FILLERS = ("请问", "你们", "我的", "我", "吗", "呢", "怎么", "什么", "多少", "能不能",
                    "可不可以", "一下", "啊", "呀", "吧", "哪些", "如何", "是否", "想问", "知道")
CANNOT_CONFIRM = "其余内容无法确认，如需进一步核实可以为您转人工客服。"
MAX_SENTENCES = 3
_LIST_MARKER_RE = re.compile(r"^(?:[-*•]\s*|\d{1,2}[.、)]\s*(?!\d)|[（(]\d{1,2}[)）]\s*)")
_TERMINATORS = "。！？!?；;，, "


def sentence_units(text: str) -> list[str]:
    """Return the answerable units of a chunk: prose sentences and readable table rows."""
    units = (_LIST_MARKER_RE.sub("", u).strip() for u in split_units(text))
    return [u for u in units if not u.startswith("#") and len(strip_citations(u)) >= 4
            and not u.endswith(("：", ":"))]


QUERY_STOPWORDS = frozenset(QUESTION_FILLERS + ("多久", "可以", "能否", "需要", "有没有", "一般",
                                               "东西", "时候", "这个", "那个", "买"))


def query_terms(question: str, queries: list[str]) -> dict[str, float]:
    """Return weighted content terms (jieba): the question's weigh 1.0, expansions' 0.5."""
    def terms(text: str) -> list[str]:
        found = [t for t in tokenize(text) if len(t) >= 2 and not t.isdigit() and t not in QUERY_STOPWORDS]
        # jieba's search mode also yields pieces of a city's name (「哈尔」 of 「哈尔滨」): a city is
        # covered by its province (term_in), its pieces are not content
        return [t for t in found
                if not any(t != o and t in o and province_of(o) for o in found)]

    weights = dict.fromkeys(terms(question), 1.0)
    for query in queries[1:]:
        for term in terms(query):
            weights.setdefault(term, 0.5)
    return weights


def term_coverage(weights: dict[str, float], text: str) -> float:
    """Return the weighted share of ``weights``' terms that occur in (normalised) ``text``."""
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if term_in(t, text)) / total if total else 0.0


RELAXED_SHARE = 0.6  # relaxed gate: this share of min_coverage …
MIN_BIGRAM_COVERAGE = 0.4  # … plus this share of the question's bigrams (chosen on the dev sets)
SLOT_WEIGHT = 1.5  # regions, tiers and payment methods the question names


def answer_terms(question: str, queries: list[str]) -> dict[str, float]:
    """Return the weighted terms an answer should cover: question 1.0, slots 1.5, expansions 0.5.

    Numbers stay ordinary terms (「7天」 in 「连续签到7天」); a slot replaces its own parts.
    """
    weights = dict.fromkeys(content_terms(tokenize(normalize_for_compare(question))), 1.0)
    for slot in slot_terms(question):
        weights = {t: w for t, w in weights.items() if t == slot or t not in slot}
        weights[slot] = SLOT_WEIGHT  # also when jieba already produced it as a token
    for query in queries[1:]:
        for term in content_terms(tokenize(normalize_for_compare(query))):
            weights.setdefault(term, 0.5)
    return weights


def passes_gate(term_cov: float, bigram_cov: float, min_coverage: float,
                min_bigram: float = MIN_BIGRAM_COVERAGE) -> bool:
    """Return True when the best chunk covers the question well enough to answer from it.

    Either its query-term coverage reaches ``min_coverage``, or (colloquial wording that
    jieba splits differently from the KB) it reaches ``RELAXED_SHARE`` of that while the
    chunk contains at least ``min_bigram`` of the question's character bigrams.
    """
    if term_cov >= min_coverage:
        return True
    return term_cov >= RELAXED_SHARE * min_coverage and bigram_cov >= min_bigram


def select_sentences(question: str, queries: list[str], evidence: list[dict[str, Any]],
                     min_coverage: float, dropped: set[str], *,
                     min_bigram: float = MIN_BIGRAM_COVERAGE) -> list[tuple[str, str]]:
    """Return up to three (sentence, evidence id) pairs that best answer the question.

    The gate (:func:`passes_gate`): the best current chunk (title, headings and text) must
    cover ``min_coverage`` of the weighted query terms, or most of that plus ``min_bigram``
    of the question's character bigrams. Sentences are then scored and
    chosen by :mod:`nodes.extract` (IDF-weighted term coverage, FAQ headings, table row
    headers, the asked answer type) and returned in evidence order within a chunk.

    Args:
        question: The customer's question.
        queries: The rewritten queries (expansion terms count half).
        evidence: Ranked evidence; superseded chunks are never used.
        min_coverage: Minimum weighted share of query terms the best chunk must cover.
        dropped: Sentences the verifier rejected (never produced again).
        min_bigram: Bigram share for the relaxed gate.

    """
    weights = query_terms(question, queries)
    own = query_terms(question, [])
    current = [e for e in evidence if e.get("kind") != "tool" and not e.get("superseded")]
    best_chunk, best_grams = 0.0, 0.0
    grams = question_bigrams(question)
    for item in current:
        whole = normalize_text(f"{item.get('title', '')} {' '.join(item.get('heading_path') or [])} "
                               f"{item.get('text', '')}")
        best_chunk = max(best_chunk, term_coverage(weights, whole), term_coverage(own, whole))
        norm = normalize_for_compare(whole).lower()
        best_grams = max(best_grams, sum(1 for g in grams if g in norm) / len(grams) if grams else 0.0)
    candidates = build_candidates(current, sentence_units, dropped,
                                  lambda u: strip_citations(u).strip(_TERMINATORS))
    if not candidates or not passes_gate(best_chunk, best_grams, min_coverage, min_bigram):
        return []
    terms = answer_terms(question, queries)
    score_candidates(question, terms, candidates, " ".join(queries[1:]))
    own_terms = frozenset(t for t, w in terms.items() if w >= 1.0)
    chosen = choose(candidates, MAX_SENTENCES, required=own_terms,
                    asked=frozenset(asked_types(question)))
    order = {id(c): i for i, c in enumerate(candidates)}
    groups = list(dict.fromkeys(c.evidence_id for c in chosen))
    chosen.sort(key=lambda c: (groups.index(c.evidence_id), order[id(c)]))
    return [(c.text, c.evidence_id) for c in chosen]


def compose_offline(state: State, min_coverage: float, *,
                    min_bigram: float = MIN_BIGRAM_COVERAGE) -> tuple[str, str | None]:
    """Return (draft, fail_reason) for the offline path: tool facts first, then KB sentences."""
    evidence = state.get("evidence") or []
    dropped = {strip_citations(f).strip(_TERMINATORS) for f in state.get("feedback") or []}
    sentences: list[str] = []
    fail_reason = None
    for item in (e for e in evidence if e.get("kind") == "tool"):
        if not (item.get("result") or {}).get("valid"):
            fail_reason = "tool_failure"
        for line in item.get("text", "").splitlines():
            plain = line.strip().strip(_TERMINATORS)
            if plain and plain not in dropped:
                sentences.append(f"{plain}【来源:{item['id']}】。")
    has_tools = any(e.get("kind") == "tool" for e in evidence)
    if not has_tools or state.get("needs_kb"):
        for plain, eid in select_sentences(state["question"], state.get("queries") or [],
                                           evidence, min_coverage, dropped, min_bigram=min_bigram):
            sentences.append(f"{plain}【来源:{eid}】。")
    if not sentences:
        return NO_ANSWER, "no_evidence" if not has_tools else (fail_reason or "no_evidence")
    if dropped:
        sentences.append(CANNOT_CONFIRM)
    return "".join(sentences), fail_reason


def generate_answer(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Write the draft answer from this turn's evidence (LLM when configured, else extractive)."""
    ctx = runtime.context or Context()
    profile = load_profile(ctx.domain_profile)
    min_cov = float(profile.get("min_coverage", 0.5))
    min_bigram = float(profile.get("min_bigram_coverage", MIN_BIGRAM_COVERAGE))
    evidence = state.get("evidence") or []
    if deps.llm is None or not evidence:
        draft, reason = compose_offline(state, min_cov, min_bigram=min_bigram)
        return {"draft": draft, "fail_reason": reason}
    feedback = state.get("feedback") or []
    prompt = GENERATE_USER.format(
        evidence=render_evidence(evidence), facts="；".join(state.get("facts") or []) or "无",
        feedback=REFLECT_FEEDBACK.format(claims="\n".join(f"- {c}" for c in feedback)) if feedback else "",
        question=state["question"])
    outcome = structured_call(deps.llm, GeneratedAnswer, [SystemMessage(GENERATE_SYSTEM), HumanMessage(prompt)])
    if outcome.value is None:
        draft, reason = compose_offline(state, min_cov, min_bigram=min_bigram)
        return {"draft": draft, "fail_reason": reason, "llm_error": f"generate: {outcome.error}"}
    if outcome.value.cannot_answer or not outcome.value.answer.strip():
        return {"draft": NO_ANSWER, "fail_reason": "no_evidence"}
    failed = any(not (e.get("result") or {}).get("valid") for e in evidence if e.get("kind") == "tool")
    return {"draft": outcome.value.answer.strip(), "fail_reason": "tool_failure" if failed else None}
