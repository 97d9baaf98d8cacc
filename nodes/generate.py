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
    robust_terms,
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
    """Return weighted content terms (jieba): the question's weigh 1.0, expansions' 0.5.

    jieba's out-of-dictionary guesses are split or down-weighted (:func:`nodes.extract.robust_terms`).
    """
    def terms(text: str) -> list[str]:
        found = [t for t in tokenize(text) if len(t) >= 2 and not t.isdigit() and t not in QUERY_STOPWORDS]
        # jieba's search mode also yields pieces of a city's name (「哈尔」 of 「哈尔滨」): a city is
        # covered by its province (term_in), its pieces are not content
        return [t for t in found
                if not any(t != o and t in o and province_of(o) for o in found)]

    weights = robust_terms(terms(question), 1.0)
    for query in queries[1:]:
        for term, weight in robust_terms(terms(query), 0.5).items():
            weights.setdefault(term, weight)
    return weights


def term_coverage(weights: dict[str, float], text: str) -> float:
    """Return the weighted share of ``weights``' terms that occur in (normalised) ``text``."""
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if term_in(t, text)) / total if total else 0.0


RELAXED_SHARE = 0.6  # relaxed gate: this share of min_coverage …
MIN_BIGRAM_COVERAGE = 0.4  # … plus this share of the question's bigrams (chosen on the dev sets)
SLOT_WEIGHT = 1.5  # regions, tiers and payment methods the question names
# Semantic gate: the retrieval signal vouches for the top chunk when the dense and BM25 rankings
# put the same document first and the top chunk's cosine similarity reaches MIN_DENSE; then a
# lower lexical bar (SEMANTIC_SHARE of min_coverage) suffices. Chosen on the TUNE half of the dev
# sets only (cases with sha1("suite/case-id") even; multi-turn turns go with their conversation):
# among gate-refused questions that pass the other two tests, the answerable ones there have a
# top-chunk cosine ≥ 0.905 and the one answered wrongly 0.882 with the bundled embedder: the
# threshold is the midpoint (0.89–0.90 gave the same TUNE result; the CHECK half confirmed it and
# that the agreement test is needed: without it CHECK lets out-of-KB questions through). The cosine scale is the embedder's: another embedding model needs
# its own value; profiles override both ("min_dense_similarity" (null disables),
# "semantic_coverage_share").
MIN_DENSE = 0.894
SEMANTIC_SHARE = 0.5


def answer_terms(question: str, queries: list[str]) -> dict[str, float]:
    """Return the weighted terms an answer should cover: question 1.0, slots 1.5, expansions 0.5.

    Numbers stay ordinary terms (「7天」 in 「连续签到7天」); a slot replaces its own parts.
    (Unlike the gate's :func:`query_terms`, no :func:`nodes.extract.robust_terms` here: on the
    TUNE half it lowered accuracy, since sentence scoring already gives long terms partial credit.)
    """
    weights = dict.fromkeys(content_terms(tokenize(normalize_for_compare(question))), 1.0)
    for slot in slot_terms(question):
        weights = {t: w for t, w in weights.items() if t == slot or t not in slot}
        weights[slot] = SLOT_WEIGHT  # also when jieba already produced it as a token
    for query in queries[1:]:
        for term in content_terms(tokenize(normalize_for_compare(query))):
            weights.setdefault(term, 0.5)
    return weights


def retrieval_vouches(evidence: list[dict[str, Any]], min_dense: float = MIN_DENSE) -> bool:
    """Return True when the retrieval scores agree that the top current chunk is on topic.

    Both rankings must put the same document first among the current chunks (highest BM25
    score and highest dense cosine), and the top-ranked current chunk's dense cosine must reach
    ``min_dense``. Items without a dense score (BM25-only retrieval, tool results) never vouch.
    """
    current = [e for e in evidence if e.get("kind") != "tool" and not e.get("superseded")
               and (e.get("scores") or {}).get("dense") is not None]
    if not current:
        return False
    top_dense = max(current, key=lambda e: float(e["scores"]["dense"]))
    top_bm25 = max(current, key=lambda e: float(e["scores"].get("bm25", 0.0)))
    if top_dense.get("doc_id") != top_bm25.get("doc_id"):
        return False
    return float(current[0]["scores"]["dense"]) >= min_dense


def passes_gate(term_cov: float, bigram_cov: float, min_coverage: float,
                min_bigram: float = MIN_BIGRAM_COVERAGE, *, vouched: bool = False,
                semantic_share: float = SEMANTIC_SHARE) -> bool:
    """Return True when the best chunk covers the question well enough to answer from it.

    Either its query-term coverage reaches ``min_coverage``, or (colloquial wording that
    jieba splits differently from the KB) it reaches ``RELAXED_SHARE`` of that while the
    chunk contains at least ``min_bigram`` of the question's character bigrams, or (unseen
    phrasing) the retrieval scores vouch for the chunk (``vouched``, see
    :func:`retrieval_vouches`) and it covers ``semantic_share`` of ``min_coverage``.
    """
    if term_cov >= min_coverage:
        return True
    if vouched and term_cov >= semantic_share * min_coverage:
        return True
    return term_cov >= RELAXED_SHARE * min_coverage and bigram_cov >= min_bigram


def select_sentences(question: str, queries: list[str], evidence: list[dict[str, Any]],
                     min_coverage: float, dropped: set[str], *,
                     min_bigram: float = MIN_BIGRAM_COVERAGE, min_dense: float | None = MIN_DENSE,
                     semantic_share: float = SEMANTIC_SHARE) -> list[tuple[str, str]]:
    """Return up to three (sentence, evidence id) pairs that best answer the question.

    The gate (:func:`passes_gate`): the best current chunk (title, headings and text) must
    cover ``min_coverage`` of the weighted query terms, or most of that plus ``min_bigram``
    of the question's character bigrams, or ``semantic_share`` of it when the retrieval
    scores vouch for the top chunk (:func:`retrieval_vouches`). Sentences are then scored and
    chosen by :mod:`nodes.extract` (IDF-weighted term coverage, FAQ headings, table row
    headers, the asked answer type) and returned in evidence order within a chunk.

    Args:
        question: The customer's question.
        queries: The rewritten queries (expansion terms count half).
        evidence: Ranked evidence; superseded chunks are never used.
        min_coverage: Minimum weighted share of query terms the best chunk must cover.
        dropped: Sentences the verifier rejected (never produced again).
        min_bigram: Bigram share for the relaxed gate.
        min_dense: Dense cosine for the semantic gate (None disables it).
        semantic_share: Share of ``min_coverage`` the semantic gate requires.

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
    vouched = min_dense is not None and retrieval_vouches(current, min_dense)
    if not candidates or not passes_gate(best_chunk, best_grams, min_coverage, min_bigram,
                                         vouched=vouched, semantic_share=semantic_share):
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
                    min_bigram: float = MIN_BIGRAM_COVERAGE, min_dense: float | None = MIN_DENSE,
                    semantic_share: float = SEMANTIC_SHARE) -> tuple[str, str | None]:
    """Return (draft, fail_reason) for the offline path: tool facts first, then KB sentences."""
    evidence = state.get("evidence") or []
    dropped = {strip_citations(f).strip(_TERMINATORS) for f in state.get("feedback") or []}
    sentences: list[str] = []
    fail_reason = None
    for item in (e for e in evidence if e.get("kind") == "tool"):
        if not (item.get("result") or {}).get("valid"):
            fail_reason = "tool_failure"
        for line in (item.get("brief") or item.get("text", "")).splitlines():
            plain = line.strip().strip(_TERMINATORS)
            if plain and plain not in dropped:
                sentences.append(f"{plain}【来源:{item['id']}】。")
    has_tools = any(e.get("kind") == "tool" for e in evidence)
    if not has_tools or state.get("needs_kb"):
        for plain, eid in select_sentences(state["question"], state.get("queries") or [],
                                           evidence, min_coverage, dropped, min_bigram=min_bigram,
                                           min_dense=min_dense, semantic_share=semantic_share):
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
    dense = profile.get("min_dense_similarity", MIN_DENSE)
    min_dense = None if dense is None else float(dense)  # null in a profile disables the semantic gate
    share = float(profile.get("semantic_coverage_share", SEMANTIC_SHARE))
    evidence = state.get("evidence") or []
    if deps.llm is None or not evidence:
        draft, reason = compose_offline(state, min_cov, min_bigram=min_bigram,
                                        min_dense=min_dense, semantic_share=share)
        return {"draft": draft, "fail_reason": reason}
    feedback = state.get("feedback") or []
    prompt = GENERATE_USER.format(
        evidence=render_evidence(evidence), facts="；".join(state.get("facts") or []) or "无",
        feedback=REFLECT_FEEDBACK.format(claims="\n".join(f"- {c}" for c in feedback)) if feedback else "",
        question=state["question"])
    outcome = structured_call(deps.llm, GeneratedAnswer, [SystemMessage(GENERATE_SYSTEM), HumanMessage(prompt)])
    if outcome.value is None:
        draft, reason = compose_offline(state, min_cov, min_bigram=min_bigram,
                                        min_dense=min_dense, semantic_share=share)
        return {"draft": draft, "fail_reason": reason, "llm_error": f"generate: {outcome.error}"}
    if outcome.value.cannot_answer or not outcome.value.answer.strip():
        return {"draft": NO_ANSWER, "fail_reason": "no_evidence"}
    failed = any(not (e.get("result") or {}).get("valid") for e in evidence if e.get("kind") == "tool")
    return {"draft": outcome.value.answer.strip(), "fail_reason": "tool_failure" if failed else None}
