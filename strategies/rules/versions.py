"""Which version of a policy governs the question: the current one, or the one it replaced.

A knowledge base may hold a policy and the version it replaced (``superseded_by`` on the old
document, ``effective_date`` on both). By default only the current version answers. Two forms of
a question move that:

- it asks for the old version by name (「旧版」「按老规定」「上一版」, :func:`asks_for_old_version`);
- it dates its own event (「去年10月办的卡」「三月份下的单」「2024年开的户」) before the current version
  took effect: the current rule was not in force then, and the version in force was the old one.

:func:`frame_versions` relabels the evidence of the turn accordingly: the old version's chunks
become citable (``version_frame="in_force_old"``) and the replacing version's chunks are treated
as not in force (``superseded=True``, ``version_frame="not_yet_in_force"``). Everything downstream
(the answerability gate, composition, the verifier, the LLM prompt) honours ``superseded`` as
before, so the rule lives in this one place. An event that straddles the change, or a version
pair whose dates are missing, leaves the evidence as it is.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from functools import lru_cache
from typing import Any

from contracts.evidence import Evidence
from knowledge.normalize import asks_for_old_version

log = logging.getLogger(__name__)

IN_FORCE_OLD = "in_force_old"
NOT_YET_IN_FORCE = "not_yet_in_force"
OLD_VERSION_NOTE = "以下按您所说时间适用的旧版规定答复，现行规定已调整。"
ASKED_VERSION_NOTE = "以下按您问的旧版规定答复，现行规定已调整。"
VERSION_NOTE_MARK = "旧版规定答复"  # what the verifier knows the agent's own note by (never a claim)

_CN_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_CN_MONTH_RE = re.compile(r"(十[一二]?|[一二三四五六七八九])月份?")
_MONTH_FEN_RE = re.compile(r"(\d{1,2})月份")
# A calendar expression (a year, a month), not a span counted from now (「7天内」「3个月」).
_CALENDAR_RE = re.compile(r"(?:\d{2,4}|[去前今明])年|(?<!个)\d{1,2}月|双\d{1,2}")


def _cn_month(match: re.Match[str]) -> str:
    word = match.group(1)
    value = 10 + (_CN_DIGITS[word[1]] if len(word) > 1 else 0) if word.startswith("十") else _CN_DIGITS[word]
    return f"{value}月"


_BARE_MONTH_RE = re.compile(r"(?<![年\d])(\d{1,2})月(?![\d个])")


def _prepare(text: str, today: date) -> str:
    """Write months as the time parser reads them (「九月份」 → 「9月」, a bare 「9月」 → 「2026年9月」).

    A month without its year is the last one of that name up to today: a customer dates what
    already happened (「9月份办的」 in December is this September, in June last September).
    """
    text = _MONTH_FEN_RE.sub(r"\1月", _CN_MONTH_RE.sub(_cn_month, text))

    def with_year(match: re.Match[str]) -> str:
        month = int(match.group(1))
        if not 1 <= month <= 12:
            return match.group(0)
        return f"{today.year if month <= today.month else today.year - 1}年{month}月"

    return _BARE_MONTH_RE.sub(with_year, text)


@lru_cache(maxsize=1)
def _time_parser() -> Any:
    from strategies.rules.question import _jionlp  # noqa: PLC0415 - heavy; its banner kept off stdout

    return _jionlp().ner.extract_time


def _day(stamp: str) -> date:
    return datetime.strptime(stamp[:10], "%Y-%m-%d").date()


def question_event(text: str, today: date) -> tuple[date, date] | None:
    """Return the earliest calendar period the question dates its own event by, as (first, last) day.

    「去年10月办卡，今年5月才开始用」 → October of last year; 「8月以后办的」 → from August 1st to
    today (the parser takes 「以后/起/以前」 into the period). Spans counted from now (「7天内」)
    and bare durations are not events. ``None`` when the question dates nothing; the parser
    runs only when the question names a calendar period at all.
    """
    prepared = _prepare(text, today)
    if not _CALENDAR_RE.search(prepared):  # every period kept below must match it: skip the parser
        return None
    base = datetime(today.year, today.month, today.day, 12).timestamp()
    try:
        found = _time_parser()(prepared, time_base=base, with_parsing=True)
    except Exception:  # a parser failure on odd input is not a date
        log.debug("time parser failed on %r", text, exc_info=True)
        return None
    periods: list[tuple[date, date]] = []
    for item in found:
        detail = item.get("detail") or {}
        when = detail.get("time")
        if detail.get("type") not in ("time_point", "time_span") or not isinstance(when, list) or len(when) != 2:
            continue
        if not _CALENDAR_RE.search(item.get("text", "")):
            continue
        try:
            first, last = _day(str(when[0])), _day(str(when[1]))
        except ValueError:
            continue
        periods.append((first, last))
    return min(periods) if periods else None


def _effective(value: Any) -> date | None:
    try:
        return _day(str(value)) if value else None
    except ValueError:
        return None


def frame_versions(evidence: Sequence[Evidence], question: str, today: date | None = None) -> list[Evidence]:
    """Return the evidence with the version in force for this question marked as such (new dicts).

    For each old chunk whose replacing document is known (``superseded_by``): when the question
    asks for the old version, or dates its event wholly before the replacing document's
    ``effective_date`` (and not before the old one's), the old chunk is in force and the replacing
    document's chunks are not. For a dated event, every chunk of a document in force on that
    date (in effect by then and not replaced) gets ``in_force_on_date``. Anything else is
    returned unchanged.
    """
    items = [Evidence(**e) for e in evidence]
    old = [e for e in items if e.get("kind") == "chunk" and e.get("superseded") and e.get("superseded_by")]
    asked = asks_for_old_version(question)
    event = None if asked else question_event(question, today or date.today())
    if old and (asked or event is not None):
        _frame_pairs(items, old, event, "asked" if asked else f"event {event}")
    if event is not None:
        for item in items:  # the documents that governed the dated event (they answer its date)
            begins = _effective(item.get("effective_date")) if item.get("kind") == "chunk" else None
            if begins is not None and begins <= event[0] and not item.get("superseded"):
                item["in_force_on_date"] = True
    return items


def _frame_pairs(items: list[Evidence], old: list[Evidence], event: tuple[date, date] | None, why: str) -> None:
    """Mark the old versions in force for the question and the versions that replaced them (in place)."""
    starts = {e["doc_id"]: _effective(e.get("effective_date")) for e in items if e.get("kind") == "chunk"}
    in_force: set[str] = set()
    replaced: set[str] = set()
    for item in old:
        successor = str(item.get("superseded_by"))
        if event is not None:  # not asked by name: the dates decide
            begins, ends = _effective(item.get("effective_date")), starts.get(successor)
            if ends is None or event[1] >= ends or (begins is not None and event[0] < begins):
                continue
        in_force.add(item["doc_id"])
        replaced.add(successor)
    for item in items:
        if item.get("kind") != "chunk":
            continue
        if item["doc_id"] in in_force:
            item["superseded"] = False
            item["version_frame"] = IN_FORCE_OLD
        elif item["doc_id"] in replaced:
            item["superseded"] = True
            item["version_frame"] = NOT_YET_IN_FORCE
    if in_force:
        log.info("version frame: %s in force for this question (%s)", sorted(in_force), why)


_CALENDAR_VALUE_RE = re.compile(r"^(?:\d{4}年)?\d{1,2}月")


def settled_qualifiers(qualifiers: dict[str, list[str]], evidence: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Return the qualifiers without those the version framing has already answered (the same dict if none).

    - A version asked by name (「旧版」) is answered once the old version is in force
      (``version_frame`` ``in_force_old``): its words need not stand in the unit.
    - A date the question gives for its own event (「2024年5月办的卡」) asks for the rule in force
      then; a document in force on that date (``in_force_on_date``) answers it without writing
      the date. Without such a document the date stays a qualifier.
    """
    drop_version = bool(qualifiers.get("version")) and any(e.get("version_frame") == IN_FORCE_OLD for e in evidence)
    dated = any(e.get("in_force_on_date") for e in evidence)
    if not drop_version and not dated:
        return qualifiers
    out = {k: v for k, v in qualifiers.items() if not (k == "version" and drop_version) and k != "period"}
    periods = [v for v in qualifiers.get("period", []) if not (dated and _CALENDAR_VALUE_RE.match(v))]
    return {**out, "period": periods} if periods else out


def version_note(question: str) -> str:
    """Return the sentence that introduces an answer from an old version."""
    return ASKED_VERSION_NOTE if asks_for_old_version(question) else OLD_VERSION_NOTE
