"""Claim binding and attribution for the verifier: a value is supported only where it belongs.

A claim's value is supported only by an evidence unit (sentence, clause, or table row with its
header and heading path) that also carries the claim's subject, not by the value occurring
anywhere in the cited chunk (:func:`binding`, :func:`claim_binding`). What a value belongs to
is read from its *role*, by form only:

- the field label it is written under: a tool record's or a table row's 「label：value」 must
  hold it under the claim's label (:func:`field_problems`, :func:`tool_field_supports`: an
  order's 签收时间 is not a ticket's 申请时间), and the fields of one claim must come from one
  row or record;
- its surroundings: when another value of the same kind (same unit, a date, a clock time, a
  region, tier or payment method) sits in the evidence where the claim puts its value, and the
  value's own occurrences match the claim's wording less, the claim took it from elsewhere
  (:func:`displaced_values`);
- its comparator (「及以上」 vs 「及以下」: :func:`comparator_conflicts`);
- the qualifiers and governor bound to it in its evidence clause (:func:`claim_binding`).

A cited unit of another regime than the question's does not support the claim
(:func:`attribution`, :func:`attribution_problems`); :func:`supporting_units` and
:func:`value_units` name the units a claim rests on. The units and qualifier checks come from
:mod:`strategies.rules.answerability`. Constants: ``MIN_RIVAL_CONTEXT``, ``RIVAL_MARGIN``
(chosen on the dev swap and verifier sets; flat from 2-4 and 1-3), ``MIN_FIELD_SHARE``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from contracts.question import Question
from strategies.rules.answerability import (
    _CITE_RE,
    _CLASSIFIER,
    _CLAUSE_RE,
    _NUM,
    _TIME_UNIT,
    ATTRIBUTION_KINDS,
    Unit,
    _norm,
    _region_words,
    _term_present,
    qualifier_check,
    subject_binding,
)
from strategies.rules.question import Vocabulary

# --------------------------------------------------------------------------- verifier helpers


def binding(subject: Sequence[str], value: str, units: Sequence[Unit]) -> Unit | None:
    """Return the first unit that carries both ``value`` and the claim's ``subject``, or None.

    A claim's value is supported only by a unit that also carries the claim's subject, not by
    the value occurring anywhere in the cited chunk. ``subject`` empty: any unit with the value.
    """
    target = _norm(value)
    for unit in units:
        body = _norm(unit.text)
        if target and target not in body:
            continue
        if not subject or subject_binding(subject, unit).bound:
            return unit
    return None


def tool_field_supports(claim_field: str, value: str, record: Mapping[str, Any],
                        labels: Mapping[str, str] | None = None) -> bool:
    """Return True when ``record``'s field named ``claim_field`` holds ``value``.

    ``claim_field`` is the label the claim uses (「签收时间」) or the data key; ``labels`` maps
    data keys to labels; a field may hold several values (a list: the label occurs twice). A
    value found only under another field does not count: an order's 签收时间 is not a ticket's
    申请时间. A number must match whole (「2元」 is not in 「172元」).
    """
    keys = [k for k, lab in (labels or {}).items() if lab == claim_field] or [claim_field]
    target = re.sub(r"\s+", "", _norm(value))
    if not target:
        return False
    spaced = r"\s*".join(re.escape(ch) for ch in target)
    pattern = re.compile(rf"(?<![\d.]){spaced}" if target[:1].isdigit() else spaced)
    for key in (k for k in keys if k in record):
        held = record[key]
        for item in held if isinstance(held, list | tuple) else [held]:
            if pattern.search(_norm(str(item))):
                return True
    return False


def attribution(question: Question, unit: Unit, dims: Mapping[str, frozenset[str]] | None = None) -> str | None:
    """Return why a cited unit cannot support a claim for this question, or None when it can.

    A unit whose heading path or text names another regime, version, tier, region or payment
    method than the question does (and not the question's own) is attributed to something else.
    """
    check = qualifier_check(question, unit, dims)
    conflicts = {k: v for k, v in check.conflicts.items() if k in ATTRIBUTION_KINDS}
    if conflicts:
        kind, values = next(iter(conflicts.items()))
        return f"资料属于其他{_KIND_LABELS.get(kind, kind)}（{'、'.join(values[:3])}）"
    if unit.superseded and not question["qualifiers"].get("version"):
        return "资料是已失效的旧版本"
    return None


def attribution_problems(question: Question, support: Sequence[Unit], vocab: Vocabulary | None = None) -> list[str]:
    """Return why the units a claim rests on belong to another regime than the question's.

    Every supporting unit is checked (:func:`attribution`); the dimensions come from the
    knowledge base's vocabulary when there is one.
    """
    dims = vocab.dimensions if vocab is not None else {}
    reasons = (attribution(question, u, dims) for u in support)
    return [r for r in dict.fromkeys(reasons) if r]


_KIND_LABELS = {"region": "地区", "tier": "会员等级", "payment": "支付方式", "regime": "适用范围",
                "version": "版本", "period": "时段", "category": "类目", "excepted": "适用范围"}


# --------------------------------------------------------------------------- claim binding

_VALUE_RE = re.compile(
    rf"{_NUM}\s*(?:{_TIME_UNIT[3:-1]}|万元|元|%|折|倍|{_CLASSIFIER[3:-1]})"
    r"|\d{4}-\d{2}-\d{2}|\d{1,2}\s*[:：]\s*\d{2}")
_DATE_PART_RE = re.compile(r"^\s*(?:月|\d{1,2}\s*[日号])")
_DATE_PART_BEFORE_RE = re.compile(r"\d\s*[年月]\s*$")
MIN_CLAUSE_SHARE = 0.34  # share of a claim clause's other terms its value's evidence clause carries
MIN_CLAUSE_TERMS = 2  # … checked only when the clause names no qualifier and has this many terms


def _clause_terms(clause: str, value: str) -> list[str]:
    """Return the content words of a claim clause, without the value and form words."""
    from strategies.rules.question import _FORM_WORDS, _words

    rest = clause.replace(value, " ")
    return [w for w, flag in _words(rest) if len(w) >= 2 and _HAN_RE.search(w) and w not in _FORM_WORDS
            and flag[:1] not in "dpcurfmqyeo"]


def _entities(text: str, vocab: Vocabulary | None) -> list[str]:
    """Return the qualifier words ``text`` names: regions, tiers, payment methods, regime values."""
    from strategies.rules.question import _closed_lists

    tiers, payments = _closed_lists()
    pool = list(_region_words()) + list(tiers) + list(payments)
    if vocab is not None:
        pool += [v for v in vocab.values() if len(v) >= 2]
    low = text.lower()
    found = [w for w in sorted(set(pool), key=len, reverse=True) if w and w.lower() in low]
    return [w for w in found if not any(w != o and w in o for o in found)]


_HAN_RE = re.compile(r"[\u4e00-\u9fff]")


def claim_binding(sentence: str, units: Sequence[Unit], vocab: Vocabulary | None = None) -> list[str]:
    """Return binding problems of one answer sentence against the units it cites.

    For every value (a number with its unit, a date, a clock time) of a claim clause, each
    qualifier the clause names (region, tier, payment method, regime) must be bound to it in the
    cited evidence: in the same evidence clause, table row or headings as the value. A qualifier
    the evidence binds to *another* value of the same unit (「新疆…199元」 when the claim says
    「新疆…99元」) is a binding error; one the evidence never binds to a value of that unit (the
    chunk's subject carried over from the previous sentence) is not.
    A clause without qualifiers needs ``MIN_CLAUSE_SHARE`` of its other content words there
    instead (when it has at least ``MIN_CLAUSE_TERMS``). A value that no cited unit carries at
    all is left to the presence checks.
    """
    norm = _norm(_CITE_RE.sub("", sentence))
    problems = value_role_problems(norm, units, vocab)
    if problems:
        return problems
    cited = _norm(" ".join(u.text + " " + " ".join(u.context) for u in units))
    for clause in (c for c in _CLAUSE_RE.split(norm) if c.strip()):
        for match in _VALUE_RE.finditer(clause):
            value = re.sub(r"\s+", "", match.group(0))
            holders = _value_holders(value, units)
            if not holders:
                continue
            if _DATE_PART_RE.match(clause[match.end():]) or _DATE_PART_BEFORE_RE.search(clause[:match.start()]):
                continue  # a piece of a date (「12月31日」): dates are checked whole elsewhere
            entities = [e for e in _entities(clause.replace(match.group(0), " "), vocab)
                        if _term_present(e.lower(), cited)]
            unbound = [e for e in entities if not any(_binds(scope, [e], []) for scope in holders)]
            taken = [e for e in unbound if _bound_elsewhere(e, value, units)]
            if taken:
                problems.append(f"数值「{value}」在引用资料中不属于「{'、'.join(taken)}」")
                continue
            governor = _governor(clause[:match.start()])
            if governor and not any(_governed(scope, value, governor) for scope in holders):
                problems.append(f"数值「{value}」在引用资料中不是「{governor}」的值")
    return problems


def _value_holders(value: str, units: Sequence[Unit]) -> list[str]:
    """Return the scopes (evidence clause + headings, or a whole row) that carry ``value``."""
    scopes: list[str] = []
    pattern = re.compile(rf"(?<![\d.]){re.escape(value)}")
    for unit in units:
        body = re.sub(r"\s+", "", _norm(unit.text))
        if not pattern.search(body):
            continue
        context = _norm(" ".join(unit.context))
        if unit.row:
            scopes.append(_ROW_MARK + body + " " + context)
            continue
        scopes += [c + " " + context for c in _HOLDER_CLAUSE_RE.split(body) if pattern.search(c)]
    return scopes


_HOLDER_CLAUSE_RE = re.compile(r"[，,；;。！？!?（）()]")  # 「金额：1000元」 stays one scope
GOVERNOR_WINDOW = 2  # characters before a value where its governor must stand in the evidence
_ROW_MARK = "\x00row "
_GOVERNOR_SKIP = "为是约达共计均至高低最多少到于的了"


def _governor(before: str) -> str:
    """Return the word a value hangs on: the last Han character before it (「满」 of 「满99元」).

    Linking words (「为」, 「是」, 「约」…) are skipped; none within three characters → ``""``.
    A character that ends a longer word (「城」 of 「商城」) is the value's subject, not its
    governor: ``""`` then too.
    """
    from strategies.rules.question import _tagged

    tail = re.sub(r"\s+", "", before)[-4:]
    for k in range(len(tail) - 1, -1, -1):
        ch = tail[k]
        if _HAN_RE.match(ch) and ch not in _GOVERNOR_SKIP:
            words = [w for w, _ in _tagged(re.sub(r"\s+", "", before)[-8:])]
            last = next((w for w in reversed(words) if ch in w), ch)
            return ch if len(last) == 1 else ""
    return ""


def _governed(scope: str, value: str, governor: str) -> bool:
    """Return True when ``scope`` has ``governor`` right before ``value``.

    Right before: within ``GOVERNOR_WINDOW`` characters, or as the value's own governor read the
    way the claim's is (:func:`_governor`, skipping linking words such as 「最高」 in 「单台最高100元」).
    """
    if scope.startswith(_ROW_MARK):  # a table row: the value's header is a column away
        return True
    pattern = re.compile(rf"(?<![\d.]){re.escape(value)}")
    compact = re.sub(r"\s+", "", scope)
    return any(governor in compact[max(0, m.start() - GOVERNOR_WINDOW):m.start()]
               or _governor(compact[:m.start()]) == governor for m in pattern.finditer(compact))


def _bound_elsewhere(entity: str, value: str, units: Sequence[Unit]) -> bool:
    """Return True when the evidence binds ``entity`` to another value of ``value``'s unit."""
    unit_of = re.sub(r"^[\d.\s-]+", "", value)
    if not unit_of:
        return False
    other = re.compile(rf"(?<![\d.])(\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?)\s*{re.escape(unit_of)}")
    for unit in units:
        body = re.sub(r"\s+", "", _norm(unit.text))
        scopes = [body] if unit.row else _CLAUSE_RE.split(body)
        for scope in scopes:
            if _term_present(entity.lower(), scope) and any(
                    m.group(0) != value for m in other.finditer(scope)):
                return True
    return False


def _binds(scope: str, entities: Sequence[str], terms: Sequence[str]) -> bool:
    if entities:
        return all(_term_present(e.lower(), scope) for e in entities)
    if len(terms) < MIN_CLAUSE_TERMS:
        return True
    return sum(1 for t in terms if _term_present(t, scope)) / len(terms) >= MIN_CLAUSE_SHARE


MIN_SUPPORT_OVERLAP = 0.6  # share of a claim's bigrams a unit must carry to count as its support


def supporting_units(sentence: str, units: Sequence[Unit]) -> list[Unit]:
    """Return the units a claim sentence rests on (those carrying most of its wording).

    The units that contain the sentence (or that it contains) when there are any; else those
    carrying at least ``MIN_SUPPORT_OVERLAP`` of the sentence's character bigrams; else the
    single best unit, if it carries any.
    """
    plain = re.sub(r"[\s。；;，,！!？?]", "", _norm(_CITE_RE.sub("", sentence)))
    if not plain or not units:
        return []
    grams = {plain[i:i + 2] for i in range(len(plain) - 1)} or {plain}
    scored: list[tuple[float, Unit]] = []
    for unit in units:
        body = re.sub(r"[\s。；;，,！!？?]", "", _norm(unit.text))
        if body and (body in plain or plain in body):
            scored.append((1.0, unit))
            continue
        scored.append((sum(1 for g in grams if g in body) / len(grams), unit))
    exact = [u for share, u in scored if share == 1.0]
    if exact:
        return exact
    good = [u for share, u in scored if share >= MIN_SUPPORT_OVERLAP]
    if good:
        return good
    best_share, best = max(scored, key=lambda su: su[0])
    return [best] if best_share > 0 else []


# --------------------------------------------------------------------------- value roles
#
# A value's *role* in a claim is what surrounds it: the field label it is written under
# (「金额：172元」), the other fields of the same row or record, the words next to it, and the
# comparator bound to it (「7层及以上」). The same value in the evidence must play the same
# role; a value of the same kind that plays the claim's role better is the one the evidence
# gives (the claim's value was taken from another row, field or clause).

_LABEL_RE = re.compile(r"(?:^|(?<=[,;。\n/|\s]))([^\s,;。:\d|/()]{1,10}):")
_FIELD_END = " ,;。/"
_CONTEXT_CAP = 8  # tokens compared on each side of a value
MIN_RIVAL_CONTEXT = 3  # a rival value's context must match at least this many tokens …
RIVAL_MARGIN = 2  # … and this many more than the claim's own value's best context
MIN_FIELD_SHARE = 0.6  # share of a claim field's bigrams an evidence field must carry
_SKELETON_SKIP = frozenset("的为是在了")
_MARK = "\x01"  # a value token is _MARK kind _MARK value
_COMPARATOR_RE = re.compile(r"^(?:及|或)?(以上|以下|以内|以外|之前|之后|以前|以后)")
_OPPOSITE = {"以上": "以下", "以下": "以上", "以内": "以外", "以外": "以内", "之前": "之后",
             "之后": "之前", "以前": "以后", "以后": "以前"}


def value_kind(value: str) -> str:
    """Return the kind of a value: ``date``, ``clock``, or its unit (「3-15工作日」 → 「工作日」)."""
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return "date"
    if re.fullmatch(r"\d{1,2}:\d{2}", value):
        return "clock"
    return re.sub(r"^[\d.\s-]+", "", value)


def _value_spans(text: str) -> list[tuple[int, int, str]]:
    """Return (start, end, compact value) of every value in normalised ``text``."""
    return [(m.start(), m.end(), re.sub(r"\s+", "", m.group(0))) for m in _VALUE_RE.finditer(text)]


@lru_cache(maxsize=1)
def _qualifier_re() -> tuple[re.Pattern[str], dict[str, str]]:
    """Return a pattern of the closed qualifier words (regions, tiers, payment methods) and their kinds."""
    from strategies.rules.question import _closed_lists

    tiers, payments = _closed_lists()
    kinds = {w.lower(): kind for kind, words in (("region", _region_words()), ("tier", tiers),
                                                  ("payment", payments)) for w in words if len(w) >= 2}
    alternation = "|".join(re.escape(w) for w in sorted(kinds, key=len, reverse=True))
    return re.compile(alternation or r"(?!)"), kinds


def _role_spans(text: str) -> list[tuple[int, int, str, str]]:
    """Return (start, end, value, kind) of the values and qualifier words of normalised ``text``."""
    spans = [(a, b, v, value_kind(v)) for a, b, v in _value_spans(text)]
    pattern, kinds = _qualifier_re()
    taken = [(a, b) for a, b, _, _ in spans]
    for m in pattern.finditer(text):
        if not any(a < m.end() and m.start() < b for a, b in taken):
            spans.append((m.start(), m.end(), m.group(0), "q:" + kinds[m.group(0)]))
    return sorted(spans)


@lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[str, ...]:
    """Return ``text`` (normalised) as tokens: each value one token, other letters one each.

    A value (number with its unit, date, clock time) or closed qualifier word (region, tier,
    payment method) is one token ``_MARK kind _MARK value``. Punctuation, spaces and linking characters (「的」「为」「是」…) are dropped, so 「满99元包邮」
    and 「满 99 元，包邮」 give the same sequence.
    """
    out: list[str] = []
    pos = 0
    for start, end, value, kind in _role_spans(text):
        out += [c for c in text[pos:start] if c.isalnum() and c not in _SKELETON_SKIP]
        out.append(f"{_MARK}{kind}{_MARK}{value}")
        pos = end
    out += [c for c in text[pos:] if c.isalnum() and c not in _SKELETON_SKIP]
    return tuple(out)


def value_tokens(text: str) -> list[str]:
    """Return ``text`` (normalised) as value-aware tokens (:func:`_tokens`, cached)."""
    return list(_tokens(text))


def _context_match(a: Sequence[str], i: int, b: Sequence[str], j: int) -> int:
    """Return how many tokens around ``a[i]`` and ``b[j]`` agree (left run + right run, capped)."""
    left = 0
    while left < _CONTEXT_CAP and i - left > 0 and j - left > 0 and a[i - left - 1] == b[j - left - 1]:
        left += 1
    right = 0
    while (right < _CONTEXT_CAP and i + right + 1 < len(a) and j + right + 1 < len(b)
           and a[i + right + 1] == b[j + right + 1]):
        right += 1
    return left + right


def displaced_values(claim: str, evidence: Sequence[str]) -> list[tuple[str, str]]:
    """Return (claim value, rival) pairs where the evidence gives a rival in the claim's place.

    For each value or qualifier word of the claim (normalised), the best context agreement of the same value in
    any evidence text is compared with that of every other value of the same kind: a rival
    whose surroundings match the claim's by at least ``MIN_RIVAL_CONTEXT`` tokens and by
    ``RIVAL_MARGIN`` more than the value's own is the value the evidence states there
    (「超过48小时未更新可点击催件」 restated with 72小时, a row's 200元 restated for another row).
    A value the evidence never states is left to the presence checks.
    """
    tokens = _tokens(claim)
    texts = [_tokens(t) for t in evidence]
    out: list[tuple[str, str]] = []
    for i, token in enumerate(tokens):
        if not token.startswith(_MARK):
            continue
        kind = token.split(_MARK)[1]
        own, rival, rival_value = -1, -1, ""
        for ev in texts:
            for j, other in enumerate(ev):
                if not other.startswith(_MARK) or other.split(_MARK)[1] != kind:
                    continue
                score = _context_match(tokens, i, ev, j)
                if other == token:
                    own = max(own, score)
                elif score > rival:
                    rival, rival_value = score, other.split(_MARK)[2]
        if own >= 0 and rival >= MIN_RIVAL_CONTEXT and rival >= own + RIVAL_MARGIN:
            out.append((token.split(_MARK)[2], rival_value))
    return out


def comparator_conflicts(claim: str, evidence: Sequence[str]) -> list[str]:
    """Return the claim's values whose comparator the evidence reverses (「6层及以上」 vs 「6层及以下」).

    Flagged only when the evidence writes the value with the opposite comparator and never with
    the claim's own.
    """
    out: list[str] = []
    joined = [re.sub(r"\s+", "", t) for t in evidence]
    for _, end, value in _value_spans(claim):
        match = _COMPARATOR_RE.match(claim[end:])
        if not match:
            continue
        word = match.group(1)
        after = [m.group(1) for t in joined
                 for m in (_COMPARATOR_RE.match(t[v.end():]) for v in
                           re.finditer(rf"(?<![\d.]){re.escape(value)}", t)) if m]
        if _OPPOSITE[word] in after and word not in after:
            out.append(value + match.group(0))
    return out


def fields(text: str) -> list[tuple[int, int, str, str]]:
    """Return the 「label：value」 fields of normalised ``text``: (start, end, label, value).

    A field runs from its label to the next label (「3期总费率2.3%,6期4.5%」 stays one field);
    labels are 1-10 characters without digits or separators, at the start or after one.
    """
    found = list(_LABEL_RE.finditer(text))
    out: list[tuple[int, int, str, str]] = []
    for k, match in enumerate(found):
        end = found[k + 1].start() if k + 1 < len(found) else len(text)
        out.append((match.start(), end, match.group(1), text[match.end():end].strip(_FIELD_END)))
    return out


def record_of(text: str) -> dict[str, list[str]]:
    """Return the fields of one evidence row or tool record as label → values (in order)."""
    record: dict[str, list[str]] = {}
    for _, _, label, value in fields(_norm(text)):
        record.setdefault(label, []).append(value)
    return record


def _records(units: Sequence[Unit]) -> list[dict[str, list[str]]]:
    """Return the records of the cited evidence: each table row, and each other item whole."""
    texts = dict.fromkeys(u.text if u.row else u.chunk_text for u in units)
    return [r for r in (record_of(t) for t in texts) if r]


def _field_values(value: str) -> list[str]:
    """Return the checkable values of a claim field: numbers with units, dates, times, qualifiers.

    Qualifiers are the closed lists' words (regions, tiers, payment methods) only: a knowledge
    base's heading words can be anything (「10」) and would be found inside an order id.
    """
    return [v for _, _, v in _value_spans(value)] + _entities(value, None)


def _compact(text: str) -> str:
    return re.sub(r"[\s,;。:()、/]", "", text)


def _field_matches(claim_value: str, record_values: Sequence[str]) -> bool:
    """Return True when one of ``record_values`` says what ``claim_value`` says."""
    want = _compact(claim_value)
    checks = _field_values(claim_value)
    for have in (_compact(v) for v in record_values):
        if not have:
            continue
        if want in have or have in want:
            return True
        grams = {want[i:i + 2] for i in range(len(want) - 1)}
        share = sum(1 for g in grams if g in have) / len(grams) if grams else 0.0
        if share >= MIN_FIELD_SHARE and all(c.replace(" ", "") in have for c in checks):
            return True
    return False


def field_problems(claim: str, units: Sequence[Unit]) -> list[str]:
    """Return the claim's 「label：value」 fields that the cited records give another value.

    Each value of a field (number, date, time, region, tier, payment method) must be found in
    a record field of the same label (:func:`tool_field_supports`), when the records have that
    label at all. Several fields of one claim sentence must be found together in one row or
    record when one has all their labels (「寄回路线：跨省寄回，赔付金额：10元」 mixes two rows).
    """
    records = _records(units)
    claimed = [(label, value) for _, _, label, value in fields(claim)
               if value and any(label in r for r in records)]
    problems: list[str] = []
    for label, value in claimed:
        holders = [r for r in records if label in r]
        bad = [v for v in _field_values(value)
               if not any(tool_field_supports(label, v, r) for r in holders)]
        problems += [f"「{v}」在资料中不是「{label}」的值" for v in bad]
    if problems or len(claimed) < 2:
        return problems
    full = [r for r in records if all(label in r for label, _ in claimed)]
    if full and not any(all(_field_matches(v, r[label]) for label, v in claimed) for r in full):
        problems.append(f"「{'、'.join(label for label, _ in claimed)}」在资料中不属于同一行")
    return problems


def value_role_problems(claim: str, units: Sequence[Unit], vocab: Vocabulary | None = None) -> list[str]:
    """Return the problems of a claim (normalised) whose values play another role in the evidence.

    Field labels (:func:`field_problems`), the value's surroundings (:func:`displaced_values`)
    and its comparator (:func:`comparator_conflicts`).
    """
    problems = field_problems(claim, units)
    texts = [_norm(u.text) for u in units]
    problems += [f"「{v}」在引用资料中属于别处，资料在此处说的是「{r}」"
                 for v, r in displaced_values(claim, texts) if not _qualified_here(claim, v, r, units, vocab)]
    problems += [f"「{c}」与引用资料中的范围相反" for c in comparator_conflicts(claim, texts)]
    return problems


def _qualified_here(claim: str, value: str, rival: str, units: Sequence[Unit],
                    vocab: Vocabulary | None) -> bool:
    """Return True when the claim's qualifiers sit with ``value`` in the evidence, not with ``rival``.

    A qualifier (region, tier, payment method, regime) the claim's clause names, bound to the
    value in an evidence clause or row and not to the rival, outweighs wording shared with the
    rival (「新疆满199元包邮」 against 「新疆、西藏满199元」 and 「满99元包邮」).
    """
    clause = next((c for c in _CLAUSE_RE.split(claim) if value in re.sub(r"\s+", "", c)), claim)
    entities = _entities(clause.replace(value, " "), vocab)
    if not entities:
        return False
    mine = any(_binds(scope, entities, []) for scope in _value_holders(value, units))
    return mine and not any(_binds(scope, entities, []) for scope in _value_holders(rival, units))


def value_units(sentence: str, units: Sequence[Unit]) -> list[Unit]:
    """Return, for each value of a claim sentence, the unit that states it in the claim's role.

    The unit holding the same value whose surroundings agree best with the claim's (a claim
    mixing an order line's id with the next line's amount rests on both lines).
    """
    tokens = _tokens(_norm(_CITE_RE.sub("", sentence)))
    texts = [_tokens(_norm(u.text)) for u in units]
    found: list[Unit] = []
    for i, token in enumerate(tokens):
        if not token.startswith(_MARK):
            continue
        scored = [(_context_match(tokens, i, ev, j), k) for k, ev in enumerate(texts)
                  for j, other in enumerate(ev) if other == token]
        if scored:
            found.append(units[max(scored)[1]])
    return list(dict.fromkeys(found))
