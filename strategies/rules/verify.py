"""The rules claim checker: strong code checks on every answer sentence against the evidence it cites.

Every fact-bearing token of a sentence (numbers with units, dates, times, order ids, order
states, policy terms, regions, payment methods, member tiers) must occur in its cited evidence;
a number must sit with the same qualifier (region/tier/payment) and in the table row the
sentence names; condition polarity (支持/不支持) and the responsible party (买家/卖家) must match
the best-matching evidence unit; most of the sentence's content bigrams must be there; claimed
write actions need a successful write this turn. Constants: ``COVERAGE_MIN``,
``COVERAGE_MIN_WITH_FACTS``, ``CLAUSE_COVERAGE_MIN``; word list ``BOILERPLATE`` (the agent's own
framing sentences, never claims).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from contracts.evidence import Evidence
from contracts.question import Question
from contracts.verification import Check, ClaimResult, Verification, overall_of
from strategies.protocols import CheckRequest
from strategies.rules.answerability import evidence_units, with_list_heading
from strategies.rules.binding import (
    attribution_problems,
    claim_binding,
    supporting_units,
    value_units,
)
from strategies.rules.claims import (
    TableRow,
    bigram_coverage,
    claimed_actions,
    condition_pairs,
    content_bigrams,
    extract_facts,
    number_supported,
    parse_citations,
    split_sentences,
    split_units,
    strip_citations,
    table_rows,
)
from strategies.rules.hygiene import kinds_of, scan
from strategies.rules.lexicon import PARTIES
from strategies.rules.normalize import normalize_for_compare
from strategies.rules.question import Vocabulary, analyze_question
from strategies.rules.versions import VERSION_NOTE_MARK

logger = logging.getLogger(__name__)

COVERAGE_MIN = 0.5  # share of a sentence's content bigrams that must occur in its evidence
COVERAGE_MIN_WITH_FACTS = 0.3  # … when every number of the sentence was found in the evidence
CLAUSE_COVERAGE_MIN = 0.3  # share for each longer clause (catches an invented condition clause)
# Sentences the agent itself adds around facts: never claims, never checked.
BOILERPLATE = ("当前知识库中没有找到相关信息", "转人工", "人工客服", "无法确认", "资料中没有说明",
               "以下内容无法确认", "请问", "还有什么可以帮您", "如需", "如有其他问题", "您可以稍后再试",
               "请提供", "抱歉", "您好", "这里无法为您办理", "我可以帮您", VERSION_NOTE_MARK)
_CLAUSE_SPLIT_RE = re.compile(r"[，,；;：:。！？!?\n]")


def _is_boilerplate(sentence: str) -> bool:
    plain = strip_citations(sentence)
    return not parse_citations(sentence) and any(b in plain for b in BOILERPLATE) \
        and not extract_facts(plain).numbers


def _in(word: str, text: str) -> bool:
    return word.lower() in text.lower()


def _number_bound(clause_entities: list[str], number: Any, units: list[str]) -> bool:
    """Return True when every entity co-occurs with ``number`` in some evidence unit."""
    for entity in clause_entities:
        ok = False
        for unit in units:
            if _in(entity, normalize_for_compare(unit)) and \
                    number_supported(number, extract_facts(unit).numbers):
                ok = True
                break
        if not ok:
            return False
    return True


def _condition_ok(clause: str, units: list[str]) -> list[str]:
    """Return condition words of ``clause`` whose polarity the best-matching unit contradicts."""
    problems = []
    for negated, verb in condition_pairs(clause):
        candidates = [u for u in units if any(v == verb for _, v in condition_pairs(u))]
        if not candidates:
            continue
        best = max(candidates, key=lambda u: bigram_coverage(clause, u))
        if (negated, verb) not in condition_pairs(best):
            problems.append(("不" if negated else "") + verb)
    return problems


def _fmt_num(num: Any) -> str:
    return f"{num.low}{'-' + num.high if num.high else ''}{num.unit}"


def _party_problems(clause: str, units: list[str]) -> list[str]:
    """Flag a party (买家/卖家/平台…) that the best-matching evidence unit replaces with another."""
    parties = [p for p in PARTIES if p in clause and p != "我们"]
    if not parties or not units:
        return []
    best = max(units, key=lambda u: bigram_coverage(clause, u))
    in_best = [p for p in PARTIES if p in best]
    return [f"主体「{p}」与资料不符" for p in parties if in_best and p not in best]


_YES_NO = re.compile(r"^(?:是的?|对|有|没有|不是|不能|不可以|可以|能|需要|不需要|不用|会|不会|支持|不支持)$")


def _key_score(key: str, sentence: str) -> float:
    if key and key in sentence:
        return 1.0
    words = re.sub(r"[\d.\-]+", " ", key)
    if not re.search(r"[\u4e00-\u9fff]{2}", words):
        return 0.0
    return bigram_coverage(words, sentence)


def mentioned_rows(sentence: str, rows: list[TableRow]) -> list[TableRow]:
    """Return the table rows whose key (first cell) the sentence names, best match first."""
    scored = [(_key_score(row.key, sentence), row) for row in rows]
    return [row for score, row in sorted(scored, key=lambda x: -x[0]) if score >= 0.5]


def _table_number_problems(sentence: str, facts: Any, rows: list[TableRow]) -> list[str]:
    """Flag a number that sits in the table but not in any row the sentence names."""
    named = mentioned_rows(normalize_for_compare(strip_citations(sentence)), rows)
    if not named or len(named) == len(rows):
        return []
    problems = []
    for num in facts.numbers:
        in_table = any(number_supported(num, extract_facts(r.rendered).numbers) for r in rows)
        if in_table and not any(number_supported(num, extract_facts(r.rendered).numbers) for r in named):
            problems.append(f"数字「{_fmt_num(num)}」属于表格中的其他行")
    return problems


def _entity_condition_bound(entity: str, pair: tuple[bool, str], units: list[str],
                            rows: list[TableRow]) -> bool:
    """Return True when ``entity`` shares a sentence (or a table cell / row key) with ``pair``."""
    for unit in units:
        if _in(entity, normalize_for_compare(unit)) and pair in condition_pairs(unit):
            if not any(unit == r.rendered for r in rows):
                return True
    for row in rows:
        if _in(entity, normalize_for_compare(row.key)) and pair in condition_pairs(row.rendered):
            return True
        if any(_in(entity, normalize_for_compare(c)) and pair in condition_pairs(c) for c in row.cells):
            return True
    return False


def check_sentence(sentence: str, evidence_texts: list[str], question: str = "") -> list[str]:
    """Return the problems of one answer sentence against its evidence texts (empty = supported).

    Words the customer's question itself contains (a region, a tier, a policy term) count as
    context, not as claims the evidence must repeat.

    Args:
        sentence: One answer sentence (citation tags allowed).
        evidence_texts: The texts of the evidence it cites (or all evidence when it cites none).
        question: The customer's question.

    """
    joined = "\n".join(evidence_texts)
    norm_ev = normalize_for_compare(joined) + "\n" + normalize_for_compare(question)
    ev = extract_facts(joined)
    facts = extract_facts(sentence)
    problems: list[str] = []
    for num in facts.numbers:
        if num.unit in ("", "版", "年") and not num.high and re.search(rf"(?<!\d){num.low}(?!\d)", norm_ev):
            continue
        if not number_supported(num, ev.numbers):
            problems.append(f"数字「{_fmt_num(num)}」不在引用资料中")
    for date in facts.dates:
        if not any(d == date or d.endswith(date) for d in ev.dates):
            problems.append(f"日期「{date}」不在引用资料中")
    for kind, words in (("时间", facts.times), ("订单号", facts.order_ids), ("状态", facts.states),
                        ("政策用语", facts.terms), ("地区", facts.regions),
                        ("支付方式", facts.payments), ("会员等级", facts.tiers)):
        problems.extend(f"{kind}「{w}」不在引用资料中" for w in words if not _in(w, norm_ev))
    units = split_units(joined)
    all_rows = table_rows(joined)
    problems.extend(_table_number_problems(sentence, facts, all_rows))
    named = mentioned_rows(normalize_for_compare(strip_citations(sentence)), all_rows)
    rows = [named[0].rendered] if named else []
    entities: list[str] = []
    q_norm = normalize_for_compare(question)
    for clause in _CLAUSE_SPLIT_RE.split(strip_citations(sentence)):
        if _YES_NO.match(clause.strip()):
            continue
        cf = extract_facts(clause)
        entities = [e for e in cf.entities() if not _in(e, q_norm)] or entities
        for num in cf.numbers:
            if entities and number_supported(num, ev.numbers) and not _number_bound(entities, num, units):
                problems.append(f"「{'、'.join(entities)}」与数字「{_fmt_num(num)}」在资料中不对应")
        problems.extend(f"条件「{c}」与资料相反或资料未提及" for c in _condition_ok(clause, rows or units))
        problems.extend(_party_problems(clause, units))
        own = [e for e in cf.entities() if not _in(e, q_norm)]
        for pair in condition_pairs(clause) if own else []:
            problems.extend(f"「{e}」与条件「{'不' if pair[0] else ''}{pair[1]}」在资料中不对应"
                            for e in own if not _entity_condition_bound(e, pair, units, all_rows))
        if condition_pairs(clause) and len(content_bigrams(clause)) >= 6 \
                and bigram_coverage(clause, joined) < CLAUSE_COVERAGE_MIN:
            problems.append(f"「{clause.strip()}」不在引用资料中")
    minimum = COVERAGE_MIN if not (facts.numbers and not problems) else COVERAGE_MIN_WITH_FACTS
    if bigram_coverage(sentence, joined) < minimum:
        problems.append("句子内容大部分不在引用资料中")
    return problems


def _effective_citations(sentences: list[str]) -> list[list[str]]:
    """Return each unit's citations; a unit ending in 「；」 shares those of the unit after it.

    A cited sentence with a semicolon is split into units, and only its last one carries the
    tag: 「商品：A×1；B×1，金额：1000元【来源:x】。」 cites ``x`` for both halves.
    """
    out: list[list[str]] = []
    following: list[str] = []
    for sentence in reversed(sentences):
        own = parse_citations(sentence)
        stripped = strip_citations(sentence).rstrip()
        cited = own or (following if stripped.endswith(("；", ";")) else [])
        out.append(cited)
        following = cited
    return out[::-1]


def _binding(sentence: str, evidence: list[Evidence], analysis: Question | None,
             vocab: Vocabulary | None) -> tuple[list[str], list[str]]:
    """Return a claim's binding and attribution problems and the ids of the units it rests on.

    Values must play the claim's role in the cited units, tool results included
    (:func:`claim_binding`); every unit it rests on (:func:`supporting_units`, and the unit
    stating each of its values, :func:`value_units`) must be of the question's regime, except
    tool results, which are the customer's own data (:func:`attribution_problems`).
    """
    units = evidence_units(evidence, include_tools=True)  # [answer] binding and attribution
    support = list(dict.fromkeys(supporting_units(sentence, units) + value_units(sentence, units)))
    problems = claim_binding(sentence, units, vocab)
    if analysis is not None:
        tools = {str(e.get("id")) for e in evidence if e.get("kind") == "tool"}
        problems += attribution_problems(analysis, [u for u in support if u.evidence_id not in tools], vocab)
    return problems, [u.id for u in support]


def code_claims(question: str, answer: str, ev_by_id: dict[str, Evidence],
                write_succeeded: bool, require_citations: bool = False, *,
                analysis: Question | None = None, vocab: Vocabulary | None = None,
                ) -> tuple[list[ClaimResult], list[Check]]:
    """Return the code checks' claim results (one per non-boilerplate sentence) and named checks.

    Besides the presence checks, every claim's values must be bound to what the claim says
    they belong to (:func:`strategies.rules.binding.claim_binding`) and the units it rests
    on must not belong to another regime than the question's (:func:`attribution`); each claim
    names the units that support it (``unit_ids``).
    """
    if analysis is None and question.strip():
        analysis = analyze_question(question, vocab=vocab)
    claims: list[ClaimResult] = []
    checks: list[Check] = []
    all_ids = [i for i, e in ev_by_id.items() if not e.get("superseded")]
    sentences = split_sentences(answer)
    for sentence, cited in zip(sentences, _effective_citations(sentences), strict=True):
        if _is_boilerplate(sentence):
            continue
        problems = [f"引用的资料 {c} 不存在" for c in cited if c not in ev_by_id]
        if require_citations and not cited:
            problems.append("事实陈述没有标注来源")
        ids = [c for c in cited if c in ev_by_id] or ([] if cited else all_ids)
        problems += [f"引用了已失效的旧版本 {c}" for c in ids if ev_by_id[c].get("superseded")]
        texts = [with_list_heading(str(ev_by_id[i].get("text", "")), ev_by_id[i].get("heading_path") or [])
                 for i in ids]
        problems += check_sentence(sentence, texts, question)
        bound, unit_ids = _binding(sentence, [ev_by_id[i] for i in ids], analysis, vocab)
        problems += bound
        actions = claimed_actions(sentence)
        if actions and not write_succeeded:
            problems.append(f"声称已办理（{'、'.join(actions)}），但本轮没有成功的写操作")
        problems += [f"含不得转述的内容（{k}）" for k in kinds_of(scan(strip_citations(sentence)))]  # [rel] 9.5
        claims.append({"claim": strip_citations(sentence), "status": "unsupported" if problems else "supported",
                       "evidence_ids": ids, "reason": "；".join(problems),
                       "unit_ids": unit_ids})
    checks.append({"name": "citations_exist", "ok": all(
        c in ev_by_id for s in split_sentences(answer) for c in parse_citations(s))})
    checks.append({"name": "facts_in_evidence", "ok": all(c["status"] == "supported" for c in claims)})
    checks.append({"name": "no_claimed_action", "ok": write_succeeded or not claimed_actions(answer)})
    checks.append({"name": "no_hostile_text", "ok": not scan(strip_citations(answer))})  # [rel] 9.5
    return claims, checks


class RulesClaimChecker:
    """The code checks alone (offline mode; the first half of the combined checker)."""

    def check(self, request: CheckRequest) -> Verification:
        """Return the verification of the code checks."""
        ev_by_id = {str(e["id"]): e for e in request.evidence}
        claims, checks = code_claims(request.question, request.answer, ev_by_id,
                                     request.write_succeeded, request.require_citations,
                                     analysis=request.analysis, vocab=request.vocab)
        return {"overall": overall_of(claims), "claims": claims, "checks": checks}


def unsupported_claims(verification: Verification | dict[str, Any]) -> list[str]:
    """Return the claim texts the verifier marked unsupported."""
    return [c["claim"] for c in verification.get("claims", []) if c.get("status") == "unsupported"]
