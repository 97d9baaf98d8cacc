"""Pure helpers for cited answers: sentence splitting, citation parsing and fact extraction.

The verifier's code checks are built from these: every fact-bearing token of an answer sentence
(numbers with units, dates, percentages, amounts, order ids, order states, policy terms, regions,
payment methods, member tiers, condition polarity) must be found in the evidence it cites.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from strategies.rules.lexicon import (
    CLAIMED_ACTION_PATTERNS,
    CONDITION_VERBS,
    MEMBER_TIERS,
    NEGATIONS,
    ORDER_STATES,
    PAYMENT_METHODS,
    POLICY_TERMS,
    REGIONS,
)
from strategies.rules.normalize import normalize_for_compare

CITATION_RE = re.compile(r"【来源[:：]\s*([^】]+)】")
_SENTENCE_END_RE = re.compile(r"(?<=[。！？!?；;\n])")
_CLAUSE_RE = re.compile(r"[，,；;：:。！？!?\n]")
_ORDER_ID_RE = re.compile(r"(?<![A-Za-z0-9])[A-Z]{1,4}\d{8,}(?!\d)")
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}|(?<![\d-])\d{2}-\d{2}(?![\d-])")
_TIME_RE = re.compile(r"\d{1,2}:\d{2}")
_UNIT = (r"工作日|天|小时|分钟|周|个月|月|年|次|件|元|倍|折|公斤|kg|斤|克|积分|张|单|级|人|岁|%|"
         r"个|日|分|米|台|副|版|层|期|笔|份|位|条")
_NUMBER_RE = re.compile(rf"(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?\s*({_UNIT})?")
_VERB_CANON = {"需": "需要", "可": "可以", "能": "可以", "退还": "退", "退回": "退"}
_CJK_WORD_RE = re.compile(r"[\u4e00-\u9fffA-Za-z0-9]")
_FILLERS = ("您好", "亲", "根据", "规定", "政策", "平台", "我们", "您可以", "您", "请", "注意",
            "另外", "此外", "具体", "相关", "的话", "一般", "通常", "目前", "如果", "的", "了", "是",
            "在", "和", "与", "及", "或", "也", "都", "会", "将", "为", "对", "这", "该", "其")


@dataclass(frozen=True)
class NumberToken:
    """A number (or range) with its unit, e.g. ``NumberToken("3", "7", "工作日")``."""

    low: str
    high: str | None
    unit: str


@dataclass
class SentenceFacts:
    """Every fact-bearing token found in one (normalised) sentence."""

    numbers: list[NumberToken] = field(default_factory=list)
    dates: list[str] = field(default_factory=list)
    times: list[str] = field(default_factory=list)
    order_ids: list[str] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)
    payments: list[str] = field(default_factory=list)
    tiers: list[str] = field(default_factory=list)

    def entities(self) -> list[str]:
        """Return the qualifiers a number is bound to (regions, payment methods, tiers)."""
        return self.regions + self.payments + self.tiers

    def is_factual(self) -> bool:
        """Return True when the sentence states anything checkable."""
        return bool(self.numbers or self.dates or self.times or self.order_ids or self.states
                    or self.terms or self.entities())


def parse_citations(text: str) -> list[str]:
    """Return the evidence ids cited in ``text`` in order of appearance, without duplicates."""
    seen: list[str] = []
    for match in CITATION_RE.finditer(text):
        for part in re.split(r"[,，、;；]\s*", match.group(1)):
            cid = part.strip()
            if cid and cid not in seen:
                seen.append(cid)
    return seen


def strip_citations(text: str) -> str:
    """Remove every 【来源:…】 tag."""
    return CITATION_RE.sub("", text).strip()


def split_sentences(text: str) -> list[str]:
    """Split an answer into sentences, keeping each sentence's trailing citation tags with it."""
    # Move citation tags that follow the sentence terminator back before the split point.
    text = re.sub(r"([。！？!?；;])\s*((?:【来源[:：][^】]+】\s*)+)", r"\2\1", text)
    parts = [p.strip() for p in _SENTENCE_END_RE.split(text)]
    return [p for p in parts if p and strip_citations(p).strip("。！？!?；; \n")]


_SEPARATOR_RE = re.compile(r"\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?")


@dataclass(frozen=True)
class TableRow:
    """One data row of a Markdown table: its key (first cell) and its readable rendering."""

    key: str
    cells: tuple[str, ...]
    rendered: str


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def render_table_row(header: list[str], cells: list[str]) -> str:
    """Render a table row readably: 「地区：新疆，时效：5-7天」 (cells joined when no header fits)."""
    if not header or len(header) != len(cells):
        return "，".join(c for c in cells if c)
    return "，".join(f"{h}：{c}" for h, c in zip(header, cells, strict=True) if c and h)


def table_rows(text: str) -> list[TableRow]:
    """Return the data rows of every Markdown table in ``text`` (header rows are not data)."""
    lines = text.splitlines()
    rows: list[TableRow] = []
    header: list[str] = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith("|") or _SEPARATOR_RE.fullmatch(stripped):
            if not stripped.startswith("|"):
                header = []
            continue
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if _SEPARATOR_RE.fullmatch(nxt):
            header = _cells(stripped)
            continue
        cells = _cells(stripped)
        rows.append(TableRow(cells[0] if cells else "", tuple(cells), render_table_row(header, cells)))
    return rows


def split_units(text: str) -> list[str]:
    """Split evidence into units for co-occurrence checks: sentences and rendered table rows.

    Table rows are rendered with their headers, so a column header such as 「Plus会员」
    belongs to its cells.
    """
    units: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("|"):
            continue
        units.extend(p.strip() for p in re.split(r"(?<=[。！？!?；;])", line) if p.strip())
    units.extend(row.rendered for row in table_rows(text))
    return units


def _find_words(text: str, words: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    for word in sorted(words, key=len, reverse=True):
        if word in text and not any(word in longer for longer in found):
            found.append(word)
    return found


def extract_facts(text: str) -> SentenceFacts:
    """Extract the fact-bearing tokens of ``text`` (normalised first; citation tags ignored)."""
    norm = normalize_for_compare(strip_citations(text))
    norm = re.sub(r"(?m)^\s*(?:[-*]\s*)?\d{1,2}[.、)]\s*(?!\d)", " ", norm)  # list numbering
    facts = SentenceFacts()
    facts.order_ids = _ORDER_ID_RE.findall(norm)
    rest = _ORDER_ID_RE.sub(" ", norm)
    facts.dates = _DATE_RE.findall(rest)
    rest = _DATE_RE.sub(" ", rest)
    facts.times = _TIME_RE.findall(rest)
    rest = _TIME_RE.sub(" ", rest)
    for match in _NUMBER_RE.finditer(rest):
        unit = match.group(3) or ""
        facts.numbers.append(NumberToken(match.group(1), match.group(2), unit))
    facts.states = _find_words(norm, ORDER_STATES)
    facts.terms = _find_words(norm, POLICY_TERMS)
    facts.regions = _find_words(norm, REGIONS)
    facts.payments = _find_words(norm, PAYMENT_METHODS)
    facts.tiers = [t.upper() for t in _find_words(norm, MEMBER_TIERS)]
    return facts


def number_supported(token: NumberToken, evidence_numbers: list[NumberToken]) -> bool:
    """Return True when ``token`` (value and unit; a range as a whole) occurs in the evidence."""
    for ev in evidence_numbers:
        units_match = token.unit == ev.unit or not token.unit
        if not units_match:
            continue
        if token.high is not None:
            if ev.high is not None and (token.low, token.high) == (ev.low, ev.high):
                return True
            continue
        if token.low in (ev.low, ev.high):
            return True
    return False


# Each condition verb (longest first) with the longer verbs that contain it.
_VERBS_LONGEST_FIRST: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (verb, tuple(v for v in CONDITION_VERBS if v != verb and verb in v))
    for verb in sorted(CONDITION_VERBS, key=len, reverse=True))


def condition_pairs(text: str) -> list[tuple[bool, str]]:
    """Return (negated, verb) pairs such as (True, "支持") for 「不支持」 in normalised ``text``."""
    norm = normalize_for_compare(strip_citations(text))
    pairs: list[tuple[bool, str]] = []
    for verb, longer in _VERBS_LONGEST_FIRST:
        if verb not in norm:
            continue
        for match in re.finditer(re.escape(verb), norm):
            start = match.start()
            # Skip a shorter verb inside a longer one already taken (需 in 需要, 可 in 可以).
            if any(norm[start - v.index(verb):].startswith(v) for v in longer):
                continue
            before = norm[max(0, start - 3):start]
            negated = any(before.endswith(neg) for neg in NEGATIONS)
            if verb == "免费" or verb == "收费":
                negated = before.endswith("不") or before.endswith("无需")
            pair = (negated, _VERB_CANON.get(verb, verb))
            if verb == "退" and norm[start + 1:start + 2] in ("货", "款", "换", "订"):
                continue
            if pair not in pairs:
                pairs.append(pair)
    return pairs


def claimed_actions(text: str) -> list[str]:
    """Return the phrases in ``text`` that claim a write action was performed."""
    norm = strip_citations(text)
    found: list[str] = []
    for pattern in CLAIMED_ACTION_PATTERNS:
        found.extend(m.group(0) for m in re.finditer(pattern, norm))
    return found


def content_bigrams(text: str, extra_fillers: tuple[str, ...] = ()) -> list[str]:
    """Return the normalised character bigrams of ``text`` without citations and filler words."""
    norm = normalize_for_compare(strip_citations(text))
    for filler in (*extra_fillers, *_FILLERS):
        norm = norm.replace(filler, " ")
    chars = [c if _CJK_WORD_RE.match(c) else " " for c in norm]
    words = "".join(chars).split()
    grams = [w[i:i + 2] for w in words for i in range(max(1, len(w) - 1))]
    return [g for g in grams if len(g) == 2]


def bigram_coverage(sentence: str, evidence_text: str) -> float:
    """Return the share of the sentence's content character bigrams found in the evidence."""
    grams = content_bigrams(sentence)
    if not grams:
        return 1.0
    ev = normalize_for_compare(evidence_text)
    return sum(1 for g in grams if g in ev) / len(grams)
