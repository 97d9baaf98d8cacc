"""Evaluation metrics: pure functions over per-case results (no graph, no I/O).

Each metric's docstring is its definition (the README quotes them). The per-case judges
(:func:`judge_turn`, :func:`judge_verifier_case`) turn one agent turn or one verifier item into
plain fields; :func:`compute_metrics` aggregates a list of judged cases into the fractions of
``results.json``. Facts are extracted by the evaluation's own code (:mod:`eval.facts`), never
by the verifier it measures: numbers with units, dates, times, amounts, percentages, order
ids, order states, regions, payment methods and member tiers.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from csagent.replay import latency_summary  # one copy, in the product (replay uses it)
from eval import facts as ef

GRAPH_SUITES = ("normal", "boundary", "distractor", "multiturn")
FAIL_REASON_GROUPS = ("no_evidence", "conflicts_with_evidence", "tool_failure")
CITATION_COVERAGE_MIN = 0.5

# Targets from issue 4: (comparison, value). "max" means the metric must be at most the value.
TARGETS: dict[str, tuple[str, float]] = {
    "hallucination_rate": ("max", 0.01),
    "refusal_rate": ("min", 0.97),
    "answerable_rate": ("min", 0.90),
    "answer_accuracy": ("min", 0.90),
    "verifier_recall": ("min", 0.98),
    "verifier_precision": ("min", 0.90),
    "leave_gold_out_declined": ("min", 0.95),
    "swap_flagged": ("min", 0.90),
    "swap_unswapped_pass": ("min", 0.95),
    "foreign_declined": ("min", 0.95),
    "foreign_answer_right": ("min", 0.80),
}
METRIC_KEYS = ("hallucination_rate", "answer_accuracy", "refusal_rate", "answerable_rate",
               "verifier_recall", "verifier_precision", "citation_precision", "handoff_rate",
               "leave_gold_out_declined", "swap_flagged", "swap_unswapped_pass",
               "foreign_declined", "foreign_answer_right", "foreign_hallucination_rate")


# --------------------------------------------------------------------------- fact helpers

_CITATION_RE = re.compile(r"【来源[:：]\s*([^】]+)】")
_SENTENCE_END_RE = re.compile(r"(?<=[。！？!?；;\n])")


def _norm(text: str) -> str:
    return ef.normalize(text)


def parse_citations(text: str) -> list[str]:
    """Return the evidence ids cited in ``text`` (【来源:id】, comma lists allowed), in order."""
    seen: list[str] = []
    for match in _CITATION_RE.finditer(text):
        for part in re.split(r"[,，、;；]\s*", match.group(1)):
            cid = part.strip()
            if cid and cid not in seen:
                seen.append(cid)
    return seen


def strip_citations(text: str) -> str:
    """Remove every 【来源:…】 tag."""
    return _CITATION_RE.sub("", text).strip()


def split_sentences(text: str) -> list[str]:
    """Split an answer into sentences, each keeping the citation tags that follow it."""
    text = re.sub(r"([。！？!?；;])\s*((?:【来源[:：][^】]+】\s*)+)", r"\2\1", text)
    parts = [p.strip() for p in _SENTENCE_END_RE.split(text)]
    return [p for p in parts if p and strip_citations(p).strip("。！？!?；; \n")]


def bigram_coverage(sentence: str, evidence_text: str) -> float:
    """Return the share of the sentence's CJK/alphanumeric bigrams found in the evidence."""
    norm = _norm(sentence)
    grams = [norm[i:i + 2] for i in range(len(norm) - 1)
             if all(c.isalnum() for c in norm[i:i + 2])]
    if not grams:
        return 1.0
    ev = _norm(evidence_text)
    return sum(1 for g in grams if g in ev) / len(grams)


def fact_tokens(text: str) -> list[str]:
    """Return every fact of ``text`` as display strings (numbers with their unit)."""
    return ef.extract(text).tokens()


def unsupported_facts(answer: str, support_texts: Sequence[str]) -> list[str]:
    """Return the facts ``answer`` states that no text in ``support_texts`` contains.

    Numbers are compared by value and unit (a range as a whole); every other fact by
    normalised substring. Citation tags and list enumerators are ignored.

    Args:
        answer: The agent's answer.
        support_texts: The texts that count as ground truth for this turn.

    Returns:
        The unsupported fact tokens, in order, without duplicates.

    """
    return ef.unsupported(answer, list(support_texts))


def forbidden_present(answer: str, forbidden: Iterable[str]) -> list[str]:
    """Return the ``forbidden`` strings that occur in ``answer`` (normalised comparison)."""
    norm = _norm(answer)
    return [f for f in forbidden if f and _norm(f) in norm]


def gold_facts_missing(answer: str, gold_facts: Iterable[Any]) -> list[str]:
    """Return the gold facts absent from ``answer``.

    A gold fact is a string, or a list of alternative strings (any one suffices). Both sides are
    normalised (full/half width, Chinese numerals, amounts, dates, whitespace, case) first.
    """
    norm = _norm(answer)
    missing: list[str] = []
    for fact in gold_facts:
        options = [fact] if isinstance(fact, str) else [str(f) for f in fact]
        if not any(_norm(option) in norm for option in options if option):
            missing.append(options[0] if options else "")
    return missing


def boundary_correct(expected: str, status: str) -> bool:
    """Return True when ``status`` meets the boundary expectation.

    ``refused`` needs status ``refused``; ``handoff`` needs ``handoff``; ``refused_or_handoff``
    accepts either. Any other expected value must equal the status.
    """
    if expected == "refused_or_handoff":
        return status in {"refused", "handoff"}
    return status == expected


def citation_pairs(answer: str, evidence_by_id: dict[str, str]) -> list[dict[str, Any]]:
    """Judge every (sentence, cited evidence id) pair of ``answer``.

    A pair is supported when the cited id exists in the turn's evidence and the cited text
    supports the sentence: for a sentence with facts, the cited text alone contains all of them,
    or (several ids cited) it contains at least one and the cited texts together contain all;
    for a sentence without facts, at least half of its content bigrams occur in the cited text.

    Args:
        answer: The answer with 【来源:id】 tags.
        evidence_by_id: Evidence id → text, for this turn.

    Returns:
        ``[{"sentence", "id", "supported": bool}]``.

    """
    pairs: list[dict[str, Any]] = []
    for sentence in split_sentences(answer):
        ids = parse_citations(sentence)
        if not ids:
            continue
        plain = strip_citations(sentence)
        tokens = fact_tokens(plain)
        known = [evidence_by_id[i] for i in ids if i in evidence_by_id]
        union_ok = bool(known) and not unsupported_facts(plain, known)
        for cid in ids:
            text = evidence_by_id.get(cid)
            if text is None:
                ok = False
            elif tokens:
                missing = unsupported_facts(plain, [text])
                ok = not missing or (len(ids) > 1 and union_ok and len(missing) < len(tokens))
            else:
                ok = bigram_coverage(plain, text) >= CITATION_COVERAGE_MIN
            pairs.append({"sentence": plain, "id": cid, "supported": ok})
    return pairs


# --------------------------------------------------------------------------- per-case judges


def judge_turn(
    *,
    suite: str,
    status: str,
    answer: str,
    question: str,
    evidence: Sequence[dict[str, Any]],
    gold_doc_texts: Sequence[str] = (),
    gold_facts: Sequence[Any] = (),
    forbidden: Sequence[str] = (),
    expected: str | None = None,
    distractor_doc_ids: Sequence[str] = (),
) -> dict[str, Any]:
    """Judge one agent turn; return the fields the aggregate metrics read.

    Ground truth for hallucination: the gold documents' text, plus the current (not
    superseded) knowledge chunks the answer cites unless they belong to the case's distractor
    documents, plus the tool data of the turn and the customer's own question (facts the
    customer stated are not invented by the agent). So a fact counts as hallucinated when it
    is invented, taken from a superseded policy version, or taken from a distractor document.
    ``hallucinated_gold_only`` is the stricter variant that ignores the cited chunks (any fact
    outside the gold documents, tool data and question counts).

    Args:
        suite: ``normal | boundary | distractor | multiturn``.
        status: The turn's status.
        answer: The turn's answer.
        question: The customer's message(s) so far.
        evidence: The turn's evidence items (``id``, ``kind``, ``text``, ``superseded``).
        gold_doc_texts: Texts of the gold documents (empty when the case has none).
        gold_facts: Facts a correct answer states.
        forbidden: Strings a correct answer must not contain.
        expected: Expected status (boundary ``expected`` or a multi-turn ``expected_status``).
        distractor_doc_ids: Documents whose facts do not count as support for this case.

    Returns:
        ``{"answered", "hallucinated", "unsupported_facts", "forbidden_found", "facts_ok",
        "missing_facts", "citations_total", "citations_supported", "boundary_ok",
        "status_ok"}``.

    """
    answered = status == "answered"
    tool_texts = [str(e.get("text", "")) for e in evidence if e.get("kind") == "tool"]
    cited = set(parse_citations(answer))
    excluded = set(distractor_doc_ids)
    current_cited = [str(e.get("text", "")) for e in evidence
                     if e.get("kind") != "tool" and str(e.get("id")) in cited
                     and not e.get("superseded") and e.get("doc_id") not in excluded]
    support = list(gold_doc_texts) + current_cited + tool_texts + [question]
    unsupported = unsupported_facts(answer, support) if answered else []
    strict = (unsupported_facts(answer, list(gold_doc_texts) + tool_texts + [question])
              if answered and gold_doc_texts else unsupported)
    found = forbidden_present(answer, forbidden) if answered else []
    missing = gold_facts_missing(answer, gold_facts) if answered else list(map(str, gold_facts))
    pairs = citation_pairs(answer, {str(e.get("id")): str(e.get("text", "")) for e in evidence}) \
        if answered else []
    return {
        "answered": answered,
        "hallucinated": bool(unsupported or found),
        "unsupported_facts": unsupported,
        "hallucinated_gold_only": bool(strict or found),
        "forbidden_found": found,
        "facts_ok": answered and not missing if gold_facts else None,
        "missing_facts": missing,
        "citations_total": len(pairs),
        "citations_supported": sum(1 for p in pairs if p["supported"]),
        "boundary_ok": boundary_correct(expected, status) if suite == "boundary" and expected else None,
        "status_ok": boundary_correct(expected, status) if expected and suite != "boundary" else None,
    }


def judge_verifier_case(*, label: str, overall: str) -> dict[str, Any]:
    """Judge one verifier item: ``flagged`` is True when the verdict is not ``pass``.

    ``need_recheck`` counts as flagged: the verifier refused to let the answer through.
    """
    return {"injected": label == "injected", "flagged": overall != "pass"}


# --------------------------------------------------------------------------- aggregates


def _frac(num: int, den: int) -> float:
    return num / den if den else 0.0


def _graph_turns(cases: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in cases if c.get("suite") in GRAPH_SUITES and not c.get("error")]


def hallucination_rate(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of answered turns (all graph suites) that assert an unsupported fact.

    A turn is hallucinated when its answer states a fact (number, date, amount, order id, state,
    policy term, region, payment method, member tier; same extractor as the verifier) that the
    gold documents / tool data / customer's question do not contain, or contains one of the
    case's ``forbidden`` strings. Refusals and handoffs are not answers and never count.

    Returns:
        ``(rate, hallucinated, answered)``.

    """
    answered = [c for c in _graph_turns(cases) if c.get("answered")]
    bad = sum(1 for c in answered if c.get("hallucinated"))
    return _frac(bad, len(answered)), bad, len(answered)


def hallucination_rate_gold_only(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of answered turns asserting a fact outside the gold docs, tool data and question.

    The strict variant of :func:`hallucination_rate`: facts from other current KB documents
    the answer cites count as unsupported too (for cases without gold docs both are equal).

    Returns:
        ``(rate, hallucinated, answered)``.

    """
    answered = [c for c in _graph_turns(cases) if c.get("answered")]
    bad = sum(1 for c in answered if c.get("hallucinated_gold_only", c.get("hallucinated")))
    return _frac(bad, len(answered)), bad, len(answered)


def answer_accuracy(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of answered turns with gold facts whose answer contains every gold fact.

    Counted over answered turns of the normal and distractor suites and multi-turn turns that
    list gold facts; comparison is normalised (width, numerals, amounts, dates, case, spaces).

    Returns:
        ``(accuracy, correct, answered_with_gold_facts)``.

    """
    scored = [c for c in _graph_turns(cases) if c.get("answered") and c.get("facts_ok") is not None]
    good = sum(1 for c in scored if c.get("facts_ok"))
    return _frac(good, len(scored)), good, len(scored)


def refusal_rate(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of boundary cases whose status matches ``expected`` (see :func:`boundary_correct`).

    Returns:
        ``(rate, correct, boundary_cases)``.

    """
    boundary = [c for c in cases if c.get("suite") == "boundary"]
    good = sum(1 for c in boundary if c.get("boundary_ok"))
    return _frac(good, len(boundary)), good, len(boundary)


def answerable_rate(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of normal-suite questions that end ``answered`` (no handoff, refusal or error).

    Returns:
        ``(rate, answered, normal_cases)``.

    """
    normal = [c for c in cases if c.get("suite") == "normal"]
    good = sum(1 for c in normal if c.get("answered"))
    return _frac(good, len(normal)), good, len(normal)


def verifier_recall(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of verifier items with an injected error that the verifier flags (not ``pass``).

    Returns:
        ``(recall, flagged_injected, injected)``.

    """
    injected = [c for c in cases if c.get("suite") == "verifier" and c.get("injected")]
    hit = sum(1 for c in injected if c.get("flagged"))
    return _frac(hit, len(injected)), hit, len(injected)


def verifier_precision(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of flagged verifier items that really carry an injected error.

    Returns:
        ``(precision, flagged_injected, flagged)``.

    """
    flagged = [c for c in cases if c.get("suite") == "verifier" and c.get("flagged")]
    hit = sum(1 for c in flagged if c.get("injected"))
    return _frac(hit, len(flagged)), hit, len(flagged)


def citation_precision(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of cited (sentence, evidence) pairs in answered turns whose evidence supports it.

    See :func:`citation_pairs` for when a pair counts as supported.

    Returns:
        ``(precision, supported_pairs, pairs)``.

    """
    turns = _graph_turns(cases)
    total = sum(int(c.get("citations_total") or 0) for c in turns)
    good = sum(int(c.get("citations_supported") or 0) for c in turns)
    return _frac(good, total), good, total


def handoff_rate(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of graph turns (all suites but verifier) that end in a human handoff.

    Returns:
        ``(rate, handoffs, turns)``.

    """
    turns = _graph_turns(cases)
    hand = sum(1 for c in turns if c.get("status") == "handoff")
    return _frac(hand, len(turns)), hand, len(turns)


def leave_gold_out_declined(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of leave-gold-out turns that decline, or still state every gold fact truthfully.

    Each normal/distractor KB question is asked again with its gold documents excluded from
    retrieval; the turn must not answer unless another document says the same (its answer then
    contains every gold fact and nothing hallucinated).

    Returns:
        ``(rate, ok, cases)``.

    """
    lgo = [c for c in cases if c.get("suite") == "leave-gold-out" and not c.get("error")]
    good = sum(1 for c in lgo if not c.get("answered") or (c.get("facts_ok") and not c.get("hallucinated")))
    return _frac(good, len(lgo)), good, len(lgo)


def swap_flagged(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of swapped answers that the verifier flags (verdict not ``pass``).

    A swapped answer is a correct one with a value replaced by another of its kind from the
    same evidence (:func:`eval.generated.swaps`).

    Returns:
        ``(rate, flagged, swapped)``.

    """
    swaps = [c for c in cases if c.get("suite") == "swap" and not c.get("error")]
    good = sum(1 for c in swaps if c.get("swap_flagged"))
    return _frac(good, len(swaps)), good, len(swaps)


def swap_unswapped_pass(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of the swap suite's unswapped controls (the same correct answers) that pass.

    Returns:
        ``(rate, passed, controls)``.

    """
    swaps = [c for c in cases if c.get("suite") == "swap" and not c.get("error")]
    good = sum(1 for c in swaps if c.get("control_passed"))
    return _frac(good, len(swaps)), good, len(swaps)


def foreign_declined(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of the foreign KB's related-but-unanswerable questions that are not answered.

    Returns:
        ``(rate, declined, unanswerable)``.

    """
    rows = [c for c in cases if c.get("suite") == "foreign" and not c.get("answerable")]
    good = sum(1 for c in rows if not c.get("answered"))
    return _frac(good, len(rows)), good, len(rows)


def foreign_answer_right(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of the foreign KB's answerable questions answered right.

    Right: answered, every gold fact stated and nothing hallucinated (a refusal is not right).

    Returns:
        ``(rate, right, answerable)``.

    """
    rows = [c for c in cases if c.get("suite") == "foreign" and c.get("answerable")]
    good = sum(1 for c in rows if c.get("answered") and c.get("facts_ok") and not c.get("hallucinated"))
    return _frac(good, len(rows)), good, len(rows)


def foreign_hallucination_rate(cases: Sequence[dict[str, Any]]) -> tuple[float, int, int]:
    """Share of answered foreign-KB turns that state an unsupported fact.

    See :func:`hallucination_rate`; an answer to an unanswerable question counts when it states
    a fact outside the cited chunks.

    Returns:
        ``(rate, hallucinated, answered)``.

    """
    rows = [c for c in cases if c.get("suite") == "foreign" and c.get("answered")]
    bad = sum(1 for c in rows if c.get("hallucinated"))
    return _frac(bad, len(rows)), bad, len(rows)


def fail_reason_mix(cases: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Count ``fail_reason`` over graph turns that have one.

    The three issue-4 groups (``no_evidence``, ``conflicts_with_evidence``, ``tool_failure``)
    are always present; other reasons (``out_of_scope``, ``reflection_exhausted``…) are
    counted under their own name.
    """
    counts: Counter[str] = Counter({key: 0 for key in FAIL_REASON_GROUPS})
    for case in _graph_turns(cases):
        reason = case.get("fail_reason")
        if reason:
            counts[str(reason)] += 1
    return dict(counts)


def compute_metrics(cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate judged cases into the ``results.json`` metric block.

    Returns:
        ``{"metrics": {key: fraction}, "counts": {key: {"num", "den"}}, "fail_reason_mix",
        "latency", "targets": {key: {"target", "op", "value", "met"}}}``; a metric whose
        denominator is 0 is 0.0 with ``den`` 0 (and its target is reported as not measured).

    """
    fns = {"hallucination_rate": hallucination_rate, "answer_accuracy": answer_accuracy,
           "refusal_rate": refusal_rate, "answerable_rate": answerable_rate,
           "verifier_recall": verifier_recall, "verifier_precision": verifier_precision,
           "citation_precision": citation_precision, "handoff_rate": handoff_rate,
           "leave_gold_out_declined": leave_gold_out_declined, "swap_flagged": swap_flagged,
           "swap_unswapped_pass": swap_unswapped_pass, "foreign_declined": foreign_declined,
           "foreign_answer_right": foreign_answer_right,
           "foreign_hallucination_rate": foreign_hallucination_rate}
    metrics: dict[str, float] = {}
    counts: dict[str, dict[str, int]] = {}
    for key in METRIC_KEYS:
        value, num, den = fns[key](cases)
        metrics[key] = value
        counts[key] = {"num": num, "den": den}
    targets: dict[str, dict[str, Any]] = {}
    for key, (op, target) in TARGETS.items():
        measured = counts[key]["den"] > 0
        value = metrics[key]
        met = (value <= target if op == "max" else value >= target) if measured else None
        targets[key] = {"op": op, "target": target, "value": value, "met": met}
    latency = latency_summary(c.get("node_latency_ms") or {} for c in _graph_turns(cases))
    strict, strict_num, strict_den = hallucination_rate_gold_only(cases)
    extra = {"hallucination_rate_gold_only": strict}
    counts["hallucination_rate_gold_only"] = {"num": strict_num, "den": strict_den}
    return {"metrics": metrics, "extra_metrics": extra, "counts": counts,
            "fail_reason_mix": fail_reason_mix(cases), "latency": latency, "targets": targets}
