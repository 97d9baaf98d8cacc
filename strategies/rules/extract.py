"""Pure helpers for the offline extractive answer: which evidence sentences answer the question.

A candidate unit (a prose sentence or a rendered table row of a current chunk) is scored by

- the IDF-weighted share of the question's content terms it contains (terms rare among the
  candidates, such as 「内衣」, weigh more than ones every candidate shares, such as 「退货」),
  alone and together with its chunk's title and headings (an FAQ heading that matches the
  question lifts the answer under it);
- the share of the question's character bigrams it contains (colloquial wording);
- whether it states the kind of answer asked for (a duration for 「多久」, an amount for
  「多少钱」, a count for 「几次」, a clock time for 「几点」, a yes/no condition for 「能吗」);
- for a table row, whether its row header is what the question names (and a penalty when
  another row of the same table is the one named);
- a penalty when it is about another member tier, region or payment method than the one the
  question (or a carried-forward customer fact) names;
- whether its value stands in one clause with the verb whose value is asked (「会费多久退」:
  「会费余额在15天内退还」, not 「会费会在2小时内冻结」), see :func:`measured_verbs`;
- for a question on the bar to reach (「满多少」, 「多少…才可以…」), whether it states a sum as
  such a bar (「满N元」「累计N…」「N元以上」), not merely a price;
- a small prior for the retrieval rank.

Selection is greedy: the best unit, then up to two more that add question terms (or the asked
answer type) the chosen ones lack. Nothing here decides what is true: the verifier still checks
every sentence against the evidence it cites.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from contracts.evidence import Evidence
from contracts.question import ALTERNATIVES, QuestionView
from knowledge.gazetteer import province_of
from knowledge.normalize import tokenize
from strategies.rules.claims import extract_facts, table_rows
from strategies.rules.normalize import normalize_for_compare
from strategies.rules.question import tagged_words

_ANSWER_TYPES: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "clock": (re.compile(r"几点"), re.compile(r"\d{1,2}:\d{2}|\d{1,2}点")),
    "date": (re.compile(r"几号|哪一?天|几月几"), re.compile(r"\d{1,2}[日号](?!内)|(?<![\d-])\d{2}-\d{2}(?![\d-])")),
    "duration": (re.compile(r"多久|几天|多长|什么时候|啥时候|何时|哪天|最晚|期限|几个?小时|几个?工作日|时效"),
                 re.compile(r"\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?\s*(?:工作日|天|小时|分钟|周|个月|月|年)"
                            r"|当天|当日|实时|立即|次日|即时")),
    "amount": (re.compile(r"多少钱|几块|多少元|赔多少|补贴多少|补多少|退多少|费用|收费|要钱|收钱|年费|赔几|多少运费"
                          r"|服务费|手续费|保费|价格|多贵|免费吗|赔偿多少|怎么赔"),
               re.compile(r"\d+(?:\.\d+)?\s*(?:元|%|倍|折)|免费|免服务费|不收|十倍")),
    "count": (re.compile(r"几次|几期|几个|几张|几件|几笔|几分|多少积分|多少分|几级|哪几"),
              re.compile(r"\d+\s*(?:次|期|个|张|件|笔|分|积分|级)")),
    "number": (re.compile(r"多少|几|最多|最少|最高|最低|多大|多长|怎么算|怎么减|怎么赔|怎么收"), re.compile(r"\d")),
    "yesno": (re.compile(r"([\u4e00-\u9fff])不\1|能不能|可不可以|可以吗|能吗|行吗|吗[？?]?$|是不是|要不要|会不会|有没有|需不需要|还能"),
              re.compile(r"可以|不能|不可|不支持|支持|无需|不需要|需要|不予|不适用|适用|不退|不会|仅|除外|无法")),
}
_STOP_TERMS = frozenset((
    "请问", "你们", "我们", "我的", "一下", "如何", "是否", "想问", "知道", "多久", "可以", "能否",
    "需要", "有没有", "一般", "东西", "时候", "这个", "那个", "什么", "怎么", "多少", "能不能",
    "可不可以", "哪些", "的话", "还是", "现在", "已经", "还能", "是不是", "要不要", "会不会",
))
_CJK_RE = re.compile(r"[\u4e00-\u9fffA-Za-z0-9]")
_KEY_SPLIT_RE = re.compile(r"[、，,/（）()\s]+")
W_UNIT, W_PLAIN, W_CONTEXT, W_BIGRAM, W_TYPE, W_RANK, W_ROW = 0.3, 0.25, 0.15, 0.1, 0.15, 0.35, 0.15
W_SLOT_CONFLICT = 0.3  # a unit about another tier, region or payment method than asked
W_MEASURED = 0.3  # a value stated in the same clause as the verb whose value is asked
PARTIAL_CREDIT = 0.5  # a long term's share of bigrams found counts this much
FAQ_BONUS = 0.15  # times the share of the question's bigrams its FAQ heading repeats …
FAQ_PARAPHRASE_SHARE, FAQ_PARAPHRASE_BONUS = 0.6, 0.35  # … or flat when the heading restates it
SAME_DOC_SHARE, OTHER_DOC_SHARE = 0.8, 0.92  # a further unit's minimum share of the best score
NEAR_COVERAGE = 0.6  # … and of the best unit's term share
# When the answerability gate vouched for every candidate, a second unit of the best one's document
# is a second fact of the same rule (a fee and its cap, a step and its deadline), not noise.
GATED_SAME_DOC_SHARE, GATED_NEAR_COVERAGE = 0.6, 0.4
COMPLEMENT_SAME_DOC, COMPLEMENT_OTHER_DOC = 0.6, 2.0  # … when it adds what the others lack (same doc only)
# A sentence that calls something the old rule is completed by its chunk's statement of the current one.
_OLD_VERSION_RE = re.compile(r"旧版|已失效|原政策|以前的规定|此前的规定")
_CURRENT_VERSION_RE = re.compile(r"现行|新版|目前|现在")
# Answer types specific enough for a complement (any sentence has a digit or a 「不」).
COMPLEMENT_TYPES = frozenset({"duration", "amount", "count", "clock", "date"})


@dataclass
class Candidate:
    """One answerable unit of a current evidence chunk, with what it matched."""

    text: str
    evidence_id: str
    doc_id: str
    rank: int
    context: str = ""
    row_key: str | None = None
    faq_first: bool = False
    faq_question: str = ""
    score: float = 0.0
    plain_cov: float = 0.0
    matched: set[str] = field(default_factory=set)
    types: set[str] = field(default_factory=set)


def asked_types(question: str) -> set[str]:
    """Return the kinds of answer the question asks for (duration, amount, count, clock, yesno)."""
    norm = normalize_for_compare(question).rstrip("。.!！ ")
    return {name for name, (ask, _) in _ANSWER_TYPES.items() if ask.search(norm)}


def stated_types(text: str) -> set[str]:
    """Return the kinds of answer ``text`` states (same names as :func:`asked_types`)."""
    norm = normalize_for_compare(text)
    return {name for name, (_, says) in _ANSWER_TYPES.items() if says.search(norm)}


# The interrogative of a value (「多久」「多少」「几」「怎么」) and the verbs that never say what it measures.
_VALUE_ASK_RE = re.compile(r"^(?:多少|多久|多长|多远|多大|多高|多重|多贵|几|什么时候|啥时候|何时|哪天|怎么)")
_AUX_VERBS = frozenset({"是", "有", "要", "能", "会", "可", "得", "想", "让", "可以", "需要", "才能", "能够",
                        "应该", "还要", "还能", "还会", "就能", "就是", "算是", "提前", "提早"})
_VALUE_PAIR_RE = re.compile(r"^(?:多[远大高重久长贵]|什么时[候间]|啥时候)")
_VAGUE_MEASURES = frozenset({"时间", "时候", "东西", "钱数"})  # every value is one of these
_COMPLEMENTS = frozenset("到完好成住掉走上下出来去过")  # a verb's result, never what a value measures
MEASURED_WINDOW = 3  # words on either side of the interrogative that may hold the measured verb
_PUNCT_RE = re.compile(r"^[，,。；;：:？?！!、\s]+$")
_UNIT_CLAUSE_RE = re.compile(r"[，,；;。！？!?]")  # a cell 「停卡管理费：50元」 keeps its label
VALUE_TYPES = frozenset({"duration", "amount", "count", "clock", "date", "number"})
# A question asking what must be reached (「满多少」, 「多少…才可以…」) and a sum stated as that bar (「满N元」).
# Narrower than the gate's ``_THRESHOLD_ASKED_RE``, which also lets 「最低」 questions keep a 「满N元」 filler.
_BAR_ASKED_RE = re.compile(r"满多少|满几|多少钱?才|多少[^，。？?]{0,4}才(?:能|可以|会|算)|门槛|够多少")
# A question of how long something takes (「要花多久」「需要多久」) and a time stated as what it
# takes: a verb of spending right before the value (「一般需要15–20分钟」「约需2小时」「耗时3天」).
_SPEND_ASKED_RE = re.compile(r"(?:需要|要|得|花|用|耗|费)(?:上|掉|费)?\s*(?:大概|大约)?\s*(?:多长时间|多久|多少时间|多少天|几天|几个?小时|几分钟)")
_SPEND_STATED_RE = re.compile(r"(?:需要?|要|花费?|耗时|耗费|用时|历时)\s*(?:约|大约|大概)?\s*\d")
_BAR_STATED_RE = re.compile(r"(?:满|达到|累计|超过|不低于)\s*\d|\d+(?:\.\d+)?\s*[万千]?元?(?:及)?以上|门槛")


@lru_cache(maxsize=1024)
def measured_verbs(question: str) -> tuple[str, ...]:
    """Return the words whose value the question asks for (「会费多久退」 → 退, 「私教课买一节多少钱」 → 买).

    Per value interrogative: the nearest verb after it (within ``MEASURED_WINDOW`` words of the
    same clause), else the nearest before it, and the noun right after it when it names what is
    measured (「停卡扣多少管理费」 → 扣, 管理费). Modal and copular verbs (「要」「能」「是」) say
    nothing about what is measured and are skipped.
    """
    words = tagged_words(normalize_for_compare(question).lower())
    out: list[str] = []
    for i, (word, _) in enumerate(words):
        joined = word + (words[i + 1][0] if i + 1 < len(words) else "")  # 「多」「远」, 「什么」「时候」
        end = i if _VALUE_ASK_RE.match(word) and len(word) <= 4 else i + 1 if _VALUE_PAIR_RE.match(joined) else -1
        if end < 0:
            continue
        after = range(end + 1, min(len(words), end + 1 + MEASURED_WINDOW))
        before = range(i - 1, max(-1, i - 1 - MEASURED_WINDOW), -1)
        # 「多久退」 before 「会费…多久」; after the interrogative a verbal noun is what is measured (「多少管理费」)
        verb = _nearest_verb(words, after, before=False) or _nearest_verb(words, before, before=True)
        measured = words[end + 1] if end + 1 < len(words) else ("", "")  # 「扣多少管理费」: 管理费 is measured too
        out.extend(w for w in (verb, measured[0] if _is_measured_noun(*measured) else "") if w)
    return tuple(dict.fromkeys(out))


def _is_measured_noun(word: str, tag: str) -> bool:
    """Return True for a noun right after an interrogative that names what is measured (「多少管理费」)."""
    return tag in ("n", "vn", "nz") and len(word) >= 2 and word not in _VAGUE_MEASURES


def _nearest_verb(words: Sequence[tuple[str, str]], indices: range, *, before: bool) -> str:
    """Return the first verb among ``words[indices]`` within one clause (``""`` when none).

    Before the interrogative a verbal noun is the verb (「补偿」 before 「多少」) and a noun ends the search
    (「团课专享价是多少」: the 享 inside the name is no verb); after it a verbal noun is what is
    measured (「多少管理费」). A one-character result complement (「到」「完」) and a verb that joins
    two interrogatives (「几…到几…」) say nothing of what is measured.
    """
    for j in indices:
        word, tag = words[j]
        if _PUNCT_RE.match(word) or (before and tag[:1] == "n" and tag != "vn"):
            return ""
        verb = tag.startswith(("v", "zg")) and (before or tag != "vn")
        ranged = 0 < j < len(words) - 1 and all(_VALUE_ASK_RE.match(words[k][0]) for k in (j - 1, j + 1))
        if verb and word not in _AUX_VERBS and word not in _COMPLEMENTS and not _VALUE_ASK_RE.match(word) and not ranged:
            return word
    return ""


def states_measured(text: str, verbs: Sequence[str], asked: Sequence[str], frame: str = "") -> bool:
    """Return True when one clause of ``text`` holds a measured verb and a value of an asked kind.

    「会费余额在15天内退还」 states how long 退 takes; 「会费会在2小时内冻结」 states a duration
    of something else, though it shares the question's other words. ``frame`` is what binds a
    whole unit (a table row's headings, an FAQ answer's question): a verb there measures every
    value of the unit.
    """
    kinds = [k for k in asked if k in VALUE_TYPES]
    if not verbs or not kinds:
        return False
    norm_frame = normalize_for_compare(frame).lower()
    if any(v in norm_frame for v in verbs):
        return any(_ANSWER_TYPES[k][1].search(normalize_for_compare(text)) for k in kinds)
    for clause in _UNIT_CLAUSE_RE.split(normalize_for_compare(text).lower()):
        if any(_verb_in(v, clause) for v in verbs) and any(_ANSWER_TYPES[k][1].search(clause) for k in kinds):
            return True
    return False


def _states_spent(norm: str) -> bool:
    """Return True when ``norm`` states a time as what something takes (「一般需要15–20分钟」).

    The verb of spending stands right before the value and the value is a duration.
    """
    duration = _ANSWER_TYPES["duration"][1]
    return any(duration.match(norm, m.end() - 1) for m in _SPEND_STATED_RE.finditer(norm))


def _verb_in(verb: str, clause: str) -> bool:
    """Return True when ``clause`` holds ``verb``; a one-character verb only inside a verb (退 in 退还, not in 分期)."""
    if verb not in clause:
        return False
    return len(verb) > 1 or any(verb in w and tag.startswith("v") and tag != "vn" for w, tag in tagged_words(clause))


def content_terms(tokens: list[str]) -> list[str]:
    """Return the content terms of tokenised text: two or more characters, no question fillers.

    A term inside a longer term of the same text is dropped (jieba's search mode yields
    「信用」「信用卡」; 「支付」 of 「支付宝」 must not match 「支付保费」).
    """
    terms = list(dict.fromkeys(t.lower() for t in tokens if len(t) >= 2 and t not in _STOP_TERMS
                               and _CJK_RE.match(t)))
    return [t for t in terms if not any(t != o and t in o for o in terms)]


SPURIOUS_WEIGHT = 0.5  # a jieba HMM guess with no dictionary word inside (「完货」 of 「验完货」)
_HAN_ONLY_RE = re.compile(r"^[\u4e00-\u9fff]+$")


def known_word(term: str) -> bool:
    """Return True when jieba's dictionary (with the shop words) lists ``term`` as a word."""
    import jieba

    if not jieba.dt.initialized:
        tokenize("词典")  # loads jieba the way the knowledge layer does (shop words added)
    freq: dict[str, int] = jieba.dt.FREQ
    return freq.get(term, 0) > 0


def robust_terms(terms: list[str], weight: float) -> dict[str, float]:
    """Return ``terms`` weighted, with jieba's out-of-dictionary guesses made harmless.

    jieba's HMM glues characters of neighbouring words into new "words" that no text contains
    (「周开线」 of 「两周开线了」, 「年卡要」 of 「Plus年卡要多少」). Such a Chinese-only term the
    dictionary does not list is replaced by the dictionary words inside it (「开线」, 「年卡」),
    or, when it has none, kept at ``SPURIOUS_WEIGHT`` times ``weight``. Numbers with units
    (「2周」, 「256g」), Latin words and dictionary words keep their weight.

    Args:
        terms: Content terms in question order (see :func:`content_terms`).
        weight: The weight of a trustworthy term.

    """
    out: dict[str, float] = {}
    for term in terms:
        if not _HAN_ONLY_RE.match(term) or known_word(term):
            out.setdefault(term, weight)
            continue
        inner = [term[i:j] for i in range(len(term)) for j in range(i + 2, len(term) + 1)
                 if (i, j) != (0, len(term)) and known_word(term[i:j])]
        inner = [w for w in inner if not any(w != o and w in o for o in inner)]
        for word in inner:
            out.setdefault(word, weight)
        if not inner:
            out.setdefault(term, weight * SPURIOUS_WEIGHT)
    return out


def slot_terms(question: str) -> list[str]:
    """Return the qualifiers the question names (lower case): regions, payment methods, tiers."""
    facts = extract_facts(question)
    return list(dict.fromkeys(t.lower() for t in [*facts.regions, *facts.payments, *facts.tiers]))


def slot_kinds(text: str) -> dict[str, set[str]]:
    """Return the qualifiers ``text`` names by kind: ``region``, ``payment``, ``tier`` (lower case)."""
    facts = extract_facts(text)
    kinds = {"region": facts.regions, "payment": facts.payments, "tier": facts.tiers}
    return {k: {v.lower() for v in vals} for k, vals in kinds.items() if vals}


def conflicting_slots(asked: dict[str, set[str]], unit: str) -> bool:
    """Return True when ``unit`` names another tier/region/payment than asked and not the asked one.

    「普通会员实付满99元包邮」 conflicts with a Plus member's question; 「Plus会员满49元，普通会员
    满99元」 does not (it names both).
    """
    for kind, named in slot_kinds(unit).items():
        wanted = asked.get(kind)
        if wanted and not any(w in n or n in w for w in wanted for n in named):
            return True
    return False


def idf_weights(terms: dict[str, float], texts: list[str]) -> dict[str, float]:
    """Return each term's weight times its IDF over ``texts`` (rare among candidates → heavier)."""
    n = len(texts)
    out: dict[str, float] = {}
    for term, weight in terms.items():
        df = sum(1 for t in texts if term in t)
        out[term] = weight * max(0.2, math.log((n + 1) / (df + 0.5)))
    return out


def question_bigrams(question: str) -> set[str]:
    """Return the question's normalised CJK/alphanumeric character bigrams (fillers kept out)."""
    norm = normalize_for_compare(question)
    for filler in _STOP_TERMS:
        norm = norm.replace(filler, " ")
    chars = "".join(c if _CJK_RE.match(c) else " " for c in norm)
    return {w[i:i + 2] for w in chars.split() for i in range(len(w) - 1)}


def question_view(question: str) -> QuestionView:
    """Return the question's comparison forms (:class:`contracts.question.QuestionView`)."""
    return QuestionView(compare=normalize_for_compare(question).lower(),
                        bigrams=sorted(question_bigrams(question)),
                        asked_types=sorted(asked_types(question)),
                        slot_kinds={k: sorted(v) for k, v in slot_kinds(question).items()})


def row_key_match(key: str, question: str, *, norm_q: str | None = None) -> float:
    """Return how much of a table row's header the question names (1.0 = a listed part verbatim).

    Exact parts (「新疆、西藏、青海」 lists three) count fully; otherwise the share of the
    header's character bigrams found in the question (「专属客服热线」 vs 「客服电话」).
    ``norm_q``: the question already normalised (``QuestionView["compare"]``).
    """
    norm_key = normalize_for_compare(key).lower()
    norm_q = normalize_for_compare(question).lower() if norm_q is None else norm_q
    parts = [p for p in _KEY_SPLIT_RE.split(norm_key) if len(p) >= 2]
    if any(p in norm_q for p in parts):
        return 1.0
    grams = {p[i:i + 2] for p in parts for i in range(len(p) - 1)}
    return sum(1 for g in grams if g in norm_q) / len(grams) if grams else 0.0


def term_in(term: str, text: str) -> bool:
    """Return True when ``term`` occurs in ``text``, a city also via its province or region.

    Policies list delivery times and fees by province while customers name their city: in
    「寄到大连多久」 the term 「大连」 is covered by a row that says 「辽宁」.
    """
    if ALTERNATIVES in term:  # the knowledge base's words for a customer's (``Question["written"]``)
        return any(term_in(t, text) for t in term.split(ALTERNATIVES) if t)
    if term in text:
        return True
    province = province_of(term)
    return province is not None and province in text


def coverage(weights: dict[str, float], text: str) -> tuple[float, set[str]]:
    """Return the weighted share of terms found in ``text`` and the terms found (whole).

    A term of three or more characters that is not found whole earns ``PARTIAL_CREDIT`` times
    the share of its character bigrams that are.
    """
    total = sum(weights.values())
    low = text.lower()
    found = {t for t in weights if term_in(t, low)}
    partial = 0.0
    for term in (t for t in weights if t not in found):  # insertion order: the same sum in every process
        if len(term) >= 3:  # 「最多能」 meets 「最多」, 「验完货」 meets 「验货」 at half value
            grams = [term[i:i + 2] for i in range(len(term) - 1)]
            partial += weights[term] * PARTIAL_CREDIT * sum(1 for g in grams if g in low) / len(grams)
    return ((sum(weights[t] for t in weights if t in found) + partial) / total if total else 0.0), found


def score_candidates(question: str, weights: dict[str, float], candidates: list[Candidate],
                     context: str = "", *, view: QuestionView | None = None) -> None:
    """Score every candidate in place (see the module docstring for the parts of the score).

    Args:
        question: The customer's question.
        weights: The answer terms (see ``strategies.rules.answer.answer_terms``).
        candidates: The candidates to score.
        context: Carried-forward customer facts (expanded query): their tier/region/payment
            count for a kind the question itself does not name.
        view: The question's comparison forms from the turn's analysis (computed here when None).

    """
    view = view if view is not None else question_view(question)
    own_slots = {k: set(v) for k, v in view["slot_kinds"].items()}
    asked_slots = {**slot_kinds(context), **own_slots}
    texts = [normalize_for_compare(c.text).lower() for c in candidates]
    idf = idf_weights(weights, texts)
    grams = set(view["bigrams"])
    asked = set(view["asked_types"])
    verbs = measured_verbs(question) if asked & VALUE_TYPES else ()
    bar_asked = bool(asked & VALUE_TYPES) and bool(_BAR_ASKED_RE.search(view["compare"]))
    spend_asked = bool(_SPEND_ASKED_RE.search(view["compare"]))
    row_match = {id(c): row_key_match(c.row_key, question, norm_q=view["compare"])
                 for c in candidates if c.row_key is not None}
    best_row: dict[str, float] = {}
    for cand in candidates:
        if id(cand) in row_match:
            best_row[cand.evidence_id] = max(best_row.get(cand.evidence_id, 0.0), row_match[id(cand)])
    for cand, norm in zip(candidates, texts, strict=True):
        unit_cov, cand.matched = coverage(idf, norm)
        cand.plain_cov, _ = coverage(weights, norm)
        ctx_cov, _ = coverage(idf, norm + " " + normalize_for_compare(cand.context).lower())
        gram_cov = sum(1 for g in grams if g in norm) / len(grams) if grams else 0.0
        cand.types = stated_types(cand.text)
        score = (W_UNIT * unit_cov + W_PLAIN * cand.plain_cov + W_CONTEXT * ctx_cov
                 + W_BIGRAM * gram_cov + W_RANK / (cand.rank + 1))
        if asked and cand.types & asked:
            score += W_TYPE * len(cand.types & asked) / len(asked)
        if cand.faq_question and grams:
            faq_grams = question_bigrams(cand.faq_question)
            share = len(grams & faq_grams) / len(grams)
            bonus = FAQ_PARAPHRASE_BONUS if share >= FAQ_PARAPHRASE_SHARE else FAQ_BONUS * share
            score += bonus * (1.0 if cand.faq_first else 0.5)
        if asked_slots and conflicting_slots(asked_slots, cand.text):
            score -= W_SLOT_CONFLICT
        frame = cand.context if cand.row_key is not None else cand.faq_question
        if verbs and states_measured(cand.text, verbs, sorted(asked), frame):
            score += W_MEASURED
        if bar_asked and _BAR_STATED_RE.search(norm):
            score += W_MEASURED
        if spend_asked and _states_spent(norm):
            score += W_MEASURED
        if id(cand) in row_match and best_row[cand.evidence_id] > 0:
            share = row_match[id(cand)]
            score += W_ROW if share == best_row[cand.evidence_id] else -2 * W_ROW if share == 0 else 0.0
        cand.score = score


def choose(candidates: list[Candidate], max_units: int = 3, *, required: frozenset[str] = frozenset(),
           asked: frozenset[str] = frozenset(), gated: bool = False) -> list[Candidate]:
    """Pick the best candidate, its near-equals, then complements for what is still missing.

    A near-equal must score at least 80 % of the best (92 % from another document: a second
    document is where distractors live: another tier, region or policy version) and cover at
    least 60 % of the best unit's (unweighted) term share; when the answerability gate accepted
    every candidate (``gated``), 60 % and 40 % for a unit of the best one's document: the second
    fact of the same rule (a fee and its cap, a step and its deadline) shares few of the
    question's words. Then, while room is left, a unit that states a question term
    (``required``) or an asked answer type (``asked``) that no chosen unit states is added when
    it comes from the best unit's document and scores at least 60 % of the best: the second half of a question such as 「定金付了以后最迟哪天发出」 is the sentence with the number.
    A chosen sentence that calls a rule the old version (「7天是旧版政策」) is followed by its
    chunk's sentence stating the current one (「现行政策普通会员15天」).

    Args:
        candidates: Scored candidates.
        max_units: At most this many units.
        required: The question's own terms (expansion terms excluded).
        asked: The asked answer types (see :func:`asked_types`).
        gated: Every candidate answers the question by the answerability gate.

    """
    ranked = sorted(candidates, key=lambda c: -c.score)
    if not ranked:
        return []
    top = ranked[0]
    chosen = [top]

    def room_for(cand: Candidate, same: float, other: float) -> bool:
        floor = same if cand.doc_id == top.doc_id else other
        return len(chosen) < max_units and cand.score >= max(0.2, floor * top.score) \
            and all(cand.text != c.text for c in chosen)

    for cand in ranked[1:]:
        near = GATED_NEAR_COVERAGE if gated and cand.doc_id == top.doc_id else NEAR_COVERAGE
        if room_for(cand, GATED_SAME_DOC_SHARE if gated else SAME_DOC_SHARE, OTHER_DOC_SHARE) \
                and cand.plain_cov >= near * top.plain_cov:
            chosen.append(cand)
    if any(_OLD_VERSION_RE.search(c.text) for c in chosen):
        current = [c for c in ranked if c.evidence_id == top.evidence_id and _CURRENT_VERSION_RE.search(c.text)
                   and not _OLD_VERSION_RE.search(c.text)]
        if current and len(chosen) < max_units and all(current[0].text != c.text for c in chosen):
            chosen.append(current[0])
    for cand in ranked[1:]:
        missing_terms = required - set().union(*(c.matched for c in chosen))
        missing_types = (asked & COMPLEMENT_TYPES) - set().union(*(c.types for c in chosen))
        if not (missing_terms or missing_types):
            break
        if (cand.matched & missing_terms or cand.types & missing_types) \
                and room_for(cand, COMPLEMENT_SAME_DOC, COMPLEMENT_OTHER_DOC):
            chosen.append(cand)
    return chosen


def best_per_part(candidates: list[Candidate], parts: Sequence[tuple[str, Callable[[str], bool]]],
                  weights_of: Callable[[str], dict[str, float]]) -> list[Candidate]:
    """Return, for each part of a multi-part question, its best answering candidate (if any).

    ``parts`` holds (the part's text, the gate's test for a unit answering that part). The
    candidates a part accepts are scored against that part alone (its own terms and asked
    types), so that 「…多少公里？超了怎么算」 gets a unit about the excess for its second half,
    not the next unit about kilometres.
    """
    out: list[Candidate] = []
    for text, accepts in parts:
        mine = [c for c in candidates if accepts(c.text)]
        if not mine:
            continue
        rescored = [replace(c, matched=set(), types=set()) for c in mine]  # the turn's scores stay as they are
        score_candidates(text, weights_of(text), rescored)
        out.append(max(zip(rescored, mine, strict=True), key=lambda pair: pair[0].score)[1])
    return out


def build_candidates(evidence: list[Evidence], units_of: Callable[[str], list[str]],
                     dropped: set[str], strip: Callable[[str], str]) -> list[Candidate]:
    """Return the candidates of the current (not superseded) chunks, in evidence order.

    Args:
        evidence: Ranked evidence items.
        units_of: ``sentence_units`` (text → units).
        dropped: Plain sentences the verifier rejected earlier this turn.
        strip: Function turning a unit into the plain sentence (citations and terminators off).

    """
    current = [e for e in evidence if e.get("kind") != "tool" and not e.get("superseded")]
    out: list[Candidate] = []
    for rank, item in enumerate(current):
        text = str(item.get("text", ""))
        headings = [str(h) for h in (item.get("heading_path") or [])]
        context = f"{item.get('title', '')} {' '.join(headings)}"
        faq = bool(headings) and headings[-1].rstrip().endswith(("？", "?"))
        rows = {r.rendered: r.key for r in table_rows(text)}
        first = True
        for unit in units_of(text):
            plain = strip(unit)
            if not plain or plain in dropped:
                continue
            out.append(Candidate(text=plain, evidence_id=str(item["id"]), doc_id=str(item.get("doc_id", "")),
                                 rank=rank, context=context, row_key=rows.get(unit),
                                 faq_first=faq and first, faq_question=headings[-1] if faq else ""))
            first = False
    return out
