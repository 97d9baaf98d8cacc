"""Answerability, value binding and attribution: whether evidence *answers* the question.

Evidence is split into units (prose sentences and clauses; table rows rendered with their
header, each with its chunk's title and heading path). A unit **answers** a question when

1. it carries a *filler* of the asked slot (:func:`slot_fillers`: a date or time expression for
   「什么时候」, a duration for 「多久」, an amount for 「多少钱」, a number with a classifier for
   「几个」, a person or organisation for 「谁」, a place for 「哪里」, a permission or condition
   clause for a yes-no question, step structure for 「怎么」, a cause for 「为什么」);
2. the filler is **bound** to the question's subject: enough of the subject terms occur in the
   same unit or its heading path (:func:`subject_binding`);
3. the question's qualifiers are present or at least not contradicted, and a *regime* or
   *version* qualifier is present (:func:`qualifier_check`): a unit under a heading that names
   another value of the same dimension (「普通会员」 for a 「Plus会员」 question) does not answer.

Nothing here knows a topic: the slot comes from the question's form, the regime dimensions
from the knowledge base's own headings (:mod:`strategies.rules.question`). The verifier's
claim binding and attribution live in :mod:`strategies.rules.binding`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from typing import Any, cast

from contracts.question import ALTERNATIVES, Question, Slot
from knowledge.gazetteer import (
    MAINLAND_WORDS,
    containers_of,
    foreign_mentions,
    group_holds,
    held_by_group,
    inside_scope,
    is_abroad,
    opposite_scope,
    province_of,
    scope_word,
)
from knowledge.normalize import normalize_text
from strategies.rules.extract import known_word
from strategies.rules.lexicon import PERIOD_DAYS
from strategies.rules.question import (
    _FORM_WORDS,
    MIN_ANCHOR_IDF,
    ORG_ASKED_RE,
    Vocabulary,
    _general_idf,
    _is_verb_char,
    _tagged,
    _words,
    asking_clause,
    is_plain_noun,
    tagged_words,
    whole_word_starts,
    word_edges,
)
from strategies.rules.versions import IN_FORCE_OLD, settled_qualifiers, version_note

# --------------------------------------------------------------------------- units

_HAN_RE = re.compile(r"[\u4e00-\u9fff]")
_SENT_SPLIT_RE = re.compile(r"(?<=[。！？!?；;])|\n+")
# A list item's marker (「- 」「• 」「* 」「1. 」「(1)」); 「**X**」 at a line's start is bold, not a marker.
LIST_MARK_RE = re.compile(r"^\s*(?:[-•]\s*|\*\s+|\d{1,2}[.、)]\s*(?!\d)|[（(]\d{1,2}[)）]\s*)")
_TABLE_SEP_RE = re.compile(r"^\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?$")
_CITE_RE = re.compile(r"【来源[:：][^】]*】")
MIN_UNIT_CHARS = 4
LIST_ITEM_CHARS = 60  # a list item under a heading is short; longer text states its own rule


@dataclass(frozen=True)
class Unit:
    """One answerable unit of an evidence item.

    Attributes:
        id: ``<evidence id>@<n>`` (stable within a turn).
        evidence_id: The evidence item it comes from.
        doc_id: The item's document.
        text: The sentence, clause or rendered table row.
        context: The item's title and heading path (outermost first).
        row: True for a table row (rendered 「列名：值，…」).
        superseded: The item is a superseded policy version.
        chunk_text: The whole text of the item (for presence of a qualifier in the chunk).
        label: The label of the list item a later sentence belongs to (「早场」 of
            「- 早场：6:00开门。会员每次加收5元…」), else ``""``.
        category: The document's declared category (its front matter), which scopes every unit
            of it as its title does; ``""`` when none.

    """

    id: str
    evidence_id: str
    doc_id: str
    text: str
    context: tuple[str, ...] = ()
    row: bool = False
    superseded: bool = False
    chunk_text: str = ""
    label: str = ""
    category: str = ""


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _render_row(header: Sequence[str], cells: Sequence[str]) -> str:
    """Return a table row as a unit's text: 「列名：值，…」 (empty cells left out)."""
    return "，".join(f"{h}：{c}" for h, c in zip(header, cells, strict=True) if c)


# 「- 早场：6:00开门。会员每次加收5元…」: the item's label names what its later sentences are about.
_ITEM_LABEL_RE = re.compile(r"([^：:，,。；;（）()]{1,12})[：:]")


_FAQ_QUESTION_RE = re.compile(r"^\*{0,2}\s*(?:问|Q)\s*\d*\s*[:：]\s*(.+?)\s*\*{0,2}$", re.IGNORECASE)
# A line that is one question and nothing else (「**…可以自己带吗？**」): an FAQ's question without a 「问：」 mark.
_BARE_QUESTION_RE = re.compile(r"^[^。！？!?；;]+[？?]$")
_ASKED_PIECE_END = ("？", "?")
FAQ_ANSWER_RE = re.compile(r"^\*{0,2}\s*(?:答|A)\s*\d*\s*[:：]\s*\*{0,2}\s*", re.IGNORECASE)


def _split_text(text: str) -> list[tuple[str, bool, str, str]]:
    """Return (unit text, is table row, item label, FAQ question) of one chunk's text.

    The label of a labelled list item (「早场：」) is given for the item's second and later
    sentences, which do not repeat it. An inline FAQ (「问：…？」 then 「答：…」, or a line that
    is only a question, then its answer) gives no unit for its question: the question is the
    context of the answer's units, as an FAQ heading is. A question inside a paragraph states
    nothing either, so it gives no unit.
    """
    out: list[tuple[str, bool, str, str]] = []
    header: list[str] = []
    faq = ""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        asked = _FAQ_QUESTION_RE.match(stripped)
        bare = LIST_MARK_RE.sub("", stripped).strip("* ")
        if asked or (not stripped.startswith(("#", "|")) and _BARE_QUESTION_RE.match(bare)):
            faq = asked.group(1).strip("* ") if asked else bare
            continue
        if stripped.startswith("#"):
            faq = ""
        stripped = FAQ_ANSWER_RE.sub("", stripped) if faq else stripped
        if stripped.startswith("|"):
            if _TABLE_SEP_RE.match(stripped):
                continue
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if _TABLE_SEP_RE.match(nxt):
                header = _cells(stripped)
                continue
            cells = _cells(stripped)
            if header and len(header) == len(cells):
                out.append((_render_row(header, cells), True, "", ""))
            else:
                out.append(("，".join(c for c in cells if c), True, "", ""))
            continue
        header = []
        if not stripped or stripped.startswith("#"):
            continue
        label = _ITEM_LABEL_RE.match(LIST_MARK_RE.sub("", stripped)) if LIST_MARK_RE.match(stripped) else None
        for n, piece in enumerate(_SENT_SPLIT_RE.split(stripped)):
            piece = LIST_MARK_RE.sub("", _CITE_RE.sub("", piece or "")).strip()
            if len(piece) >= MIN_UNIT_CHARS and not piece.endswith(("：", ":", *_ASKED_PIECE_END)):
                out.append((piece, False, label.group(1) if label and n else "", faq))
    return out


def evidence_units(evidence: Sequence[Mapping[str, Any]], *, include_tools: bool = False) -> list[Unit]:
    """Split evidence items into units (sentences and rendered table rows), in evidence order.

    Args:
        evidence: Evidence items (``id``, ``text``, optional ``title``, ``heading_path``,
            ``doc_id``, ``superseded``, ``kind``).
        include_tools: Also split tool results (one unit per line).

    """
    units: list[Unit] = []
    for item in evidence:
        if item.get("kind") == "tool" and not include_tools:
            continue
        text = str(item.get("text", ""))
        context = tuple(str(h) for h in [item.get("title", ""), *(item.get("heading_path") or [])] if h)
        for n, (piece, row, label, faq) in enumerate(_split_text(text)):
            units.append(Unit(id=f"{item.get('id')}@{n}", evidence_id=str(item.get("id")),
                              doc_id=str(item.get("doc_id", "")), text=piece, context=(*context, faq) if faq else context,
                              row=row, label=label, category=str(item.get("category") or ""),
                              superseded=bool(item.get("superseded")), chunk_text=text))
    return units


# --------------------------------------------------------------------------- fillers


@dataclass(frozen=True)
class Filler:
    """A value of the asked kind found in a unit (character offsets into the normalised text)."""

    kind: str
    text: str
    start: int
    end: int


_TIME_UNIT = r"(?:个)?(?:工作日|自然日|天|日|小时|分钟|周|星期|个月|月|年|秒)"
_NUM = r"\d+(?:\.\d+)?(?:\s*-\s*\d+(?:\.\d+)?)?"
_DURATION_RE = re.compile(rf"{_NUM}\s*{_TIME_UNIT}|当天|当日|次日|隔日|即时|实时|立即|立刻|马上|秒到|随时|半天|半年")
_DATE_RE = re.compile(
    r"\d{4}\s*[-/.年]\s*\d{1,2}(?:\s*[-/.月]\s*\d{1,2}\s*[日号]?)?|\d{1,2}\s*月\s*\d{1,2}\s*[日号]?|\d{1,2}\s*月份?"
    r"|(?:每月|每年)\s*\d+\s*[日号]|每周\s*[一二三四五六日天1-7]|\d{1,2}\s*[日号](?![内以之])|(?:周|星期)[一二三四五六日天1-7]"
    r"|\d{1,2}\s*[:：]\s*\d{2}|\d{1,2}\s*点|上午|下午|凌晨|晚上|中午|节假日|工作日|周末|春节|国庆|元旦"
    r"|当天|当日|次日|隔日|第二天|即时|实时|立即|[月年][底末初]|之前|之后|以前|以后|起|前|后")
# 「免运费券」「免费卡」 name an instrument: the word 免…费 there states no price and grants nothing.
_NOT_NAME = r"(?![券卡码])"
# Words saying nothing (more) is charged: a price of nought, and a no to 「…要收费吗」.
_NO_CHARGE_WORDS = "不收|免收|不另收|不额外收|不加收"
_AMOUNT_RE = re.compile(
    r"\d+(?:\.\d+)?(?:\s*-\s*\d+(?:\.\d+)?)?\s*(?:万元|元|块|%|折|倍|分钱|美元|港元|港币|澳门元|欧元|日元|英镑|新台币|韩元|泰铢|澳元|加元|新加坡元|卢布|法郎|sdr\b)|[¥￥]\s*\d+|满\s*\d+\s*减\s*\d+"
    r"|[百千万]分之[\d.零〇一二两三四五六七八九十点]+"  # 「千分之三」: a rate written in words
    rf"|免费{_NOT_NAME}|免收|免除|免[^\s，。；]{{0,3}}费{_NOT_NAME}|不收(?:取)?|无需(?:支付|付费|承担)|0元|全额|原价|差价")
_CLASSIFIER = r"(?:周岁|岁|个|次|张|本|件|期|笔|份|位|座|台|种|项|条|款|级|分|积分|里程|单|人|家|层|倍|箱|包|瓶|名|只|套)"
# Units of measure (data, rate, length, weight, volume, energy, power, pressure, temperature, area),
# written in lower case as the normalised text is: a quantity answers 「多少」 as a count does.
_MEASURE_UNIT = (r"(?:[kmgt]i?b(?:ps)?|[kmg](?:bps)?(?![a-z])|兆|米|公里|千米|厘米|毫米|公斤|千克|克|斤|吨|升|毫升"
                 r"|度|千瓦时|千瓦|瓦|kw|w(?![a-z])|伏|v(?![a-z])|mpa|°c|平方米|㎡|匹)")
_UNLIMITED = r"不限(?:次数|数量)?|无限"  # no limit on a count: under a label naming what is counted it answers 「几次」
_COUNT_RE = re.compile(rf"\d+(?:\.\d+)?(?:\s*-\s*\d+)?\s*[万千]?\s*(?:{_CLASSIFIER}|{_MEASURE_UNIT})(?!工作日|小时|月|自然日)|{_UNLIMITED}|(?:仅限?|最多)\s*\d+(?:\s*(?:{_CLASSIFIER}|{_MEASURE_UNIT}))?|\d+\s*以[内上下]")
_ROLE_RE = re.compile(
    r"[\u4e00-\u9fffA-Za-z]{0,6}(?:公司|集团|银行|平台|商家|卖家|买家|店铺|部门|中心|机构|客服|快递|物流|人员|用户"
    r"|顾客|消费者|承运商|厂家|厂商|品牌方|服务商|本人|家属|代收人|寺|庙|宫|院|局|委员会|大学|学校|医院|政府)"
    r"|买家|卖家|商家|平台|用户|客户|我们|本店|本平台|消费者|顾客|您")
# 「费用由X承担」「由X负责」: the one 由 names as doing the act is a party, whatever its word (读者, 酒店).
_AGENT_RE = re.compile(r"(?<=由)(?:(?![由的])[\u4e00-\u9fffA-Za-z]){1,8}?(?=(?:自行|全额|先行|统一)?(?:承担|负责|支付|自理|自付"
                       r"|垫付|赔付|提供|办理|处理|安排|收取|补偿|赔偿|出具|开具))")
# A person or a group of customers does not answer a question asking for an organisation (ORG_ASKED_RE).
_PERSON_FILLER_RE = re.compile(r"(?:用户|顾客|消费者|客户|买家|会员|本人|家属|代收人|人员|您)$")
_PLACE_WORDS = r"(?:省|市|县|区|镇|村|街道|路|号|仓|仓库|门店|网点|驿站|快递柜|柜台|服务点|中心|原支付账户|账户)"
_PLACE_RE = re.compile(
    r"(?:寄到|寄回|寄往|退回|退回到|送到|送至|发往|寄至|退至|存放在|位于|前往|到达|原路|在)[^，。；,;\s]{1,12}"
    rf"|[\u4e00-\u9fff]{{1,8}}{_PLACE_WORDS}")
_PLACE_END_RE = re.compile(rf"{_PLACE_WORDS}$")
_YESNO_RE = re.compile(
    r"不?可以|不?能够?|不?支持|不?允许|不?需要|无需|无须|不必|必须|须|不得|禁止|仅限|除外|不?适用|不?享受|不?包含"
    rf"|不予|无法|不?提供|不?接受|不?参与|不?计入|有权|免费{_NOT_NAME}|{_NO_CHARGE_WORDS}|均可|一律|不可"
    r"|可(?=[\u4e00-\u9fff])"
    r"|停止|不再|不设")  # what has ceased or is not offered says no
# A yes-no question is also answered by what the rule grants, takes or keeps (「赠送5元券」).
_STATEMENT_RE = re.compile(r"有|没有|不?退还?|返还|赠送|获得|奖励|收取|扣除|不变|保持|自动|另行|视为|按照?")
_CLOCK_RE = re.compile(r"\d{1,2}\s*[:：]\s*\d{2}|\d{1,2}\s*点(?:半|\d{1,2}分?)?|全天|24小时")
_DAY_RE = re.compile(r"\d{1,2}\s*[日号](?![内以之])|月[底末初]")
_PER_UNITS = {"天": "天|日", "日": "天|日", "周": "周|星期", "星期": "周|星期"}
_CLAUSE_RE = re.compile(r"[，,；;。！？!?（）()]|(?<!\d)[：:]|[：:](?!\d)")  # not the colon of 23:59
_PROCEDURE_RE = re.compile(
    r"^\s*(?:\d{1,2}[.、)]|第[一二三四五六七八九十\d]+步|首先|然后|其次|最后|接着|再)|→|->|>"
    r"|进入|点击|选择|提交|填写|上传|拨打|联系|前往|登录|打开|申请|操作|在[^，。]{0,12}(?:页面|页|入口|中)"
    r"|寄回|寄出|预约|办理|按照|通过")
# What a bare 「…是多少」 may ask for: a number, or an address written out (e-mail, web address).
_IDENTIFIER_RE = re.compile(r"[A-Za-z0-9._+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+|(?:https?://|www\.)[^\s，。；]+|\d[\d\-.%:/]*")
_PHONE_ASKED_RE = re.compile(r"(?:电话|热线|号码|手机号|座机)(?:号码?)?(?:是)?(?:多少|几号)"
                             r"|(?:哪个|哪一个|什么|啥)[\u4e00-\u9fff]{0,2}?(?:电话|热线)")
_PHONE_WORD_RE = re.compile(r"(?:联系|热线)?电话|热线|(?:电话|手机)?号码|手机号|座机")  # a word naming a number to dial
_PHONE_RE = re.compile(r"(?<![\d-])(?:\+\d{1,3}(?:-\d{1,4}){2,4}|\d{3,4}-\d{3,8}(?:-\d{3,4})?|1[3-9]\d{9}|[48]00\d{7}|9\d{4})(?![\d-]|\s*[元万%])")
_MONEY_ASKED_RE = re.compile(r"多少钱|几块|几元|多少元|多少块")
_RATE_FILLER_RE = re.compile(r"[%折倍]$|分之")
_CLASSIFIED_COUNT_RE = re.compile(rf"(?:几|多少)\s*{_CLASSIFIER}")
_REASON_RE = re.compile(r"因为|由于|原因|所以|导致|为了|以免|以便|否则|是因|造成|因此|故")
# 「怎么才能…」「怎样才算…」 ask how a state is reached: a way or a condition answers, not the state's value.
_REACH_ASKED_RE = re.compile(r"(?:怎么|怎样|如何|咋)样?才(?:能|可以|可|会|算)")
_CONDITION_RE = re.compile(r"须|需|达到|满\s*\d|累计|只要|凡|符合|条件|要求|前提|即可|方可|才能|才可|才算")

_FILLER_RES: dict[str, tuple[re.Pattern[str], ...]] = {
    "date": (_DATE_RE, _DURATION_RE),
    "duration": (_DURATION_RE,),
    "amount": (_AMOUNT_RE,),
    "count": (_COUNT_RE, _AMOUNT_RE, _DURATION_RE),
    "person_org": (_ROLE_RE, _AGENT_RE),
    "place": (_PLACE_RE,),
    "yesno": (_YESNO_RE, _STATEMENT_RE, _AMOUNT_RE, _DURATION_RE, _COUNT_RE),
    "procedure": (_PROCEDURE_RE, _YESNO_RE, _AMOUNT_RE),
    "reason": (_REASON_RE, _YESNO_RE),
}
# A table cell rendered 「列名（单位）：数」: a bare number whose unit is in its column header.
_HEADER_UNIT_RE = re.compile(r"[（(](?P<unit>[^（）()：:，,]{1,6})[)）][：:]\s*(?P<num>\d+(?:\.\d+)?)(?![\d.]|\s*[\u4e00-\u9fff%‰])")
_HEADER_UNIT_SLOTS = {"amount": ("amount", "count"), "duration": ("duration", "date", "count"),
                      "count": ("count",)}  # a bare number says no yes or no
_MONEY_UNITS = "万元|元|块|美元|港元|欧元|日元|英镑"
_MONEY_UNIT_RE = re.compile(rf"^(?:{_MONEY_UNITS}|人民币)(?:/|$)")


def _header_unit_kind(unit: str) -> str:
    """Return which kind of value a header's unit measures (「元/节」 money, 「分钟」 time, else a count)."""
    if _MONEY_UNIT_RE.match(unit):
        return "amount"
    return "duration" if re.fullmatch(_TIME_UNIT, unit.split("/")[0]) else "count"


_HEADING_UNIT_RE = re.compile(r"单位[：:]\s*(?P<unit>[^（）()，,；;：:\s]{1,6})")
_PRICE_HEADING_RE = re.compile(r"价格|价目|价格表|收费标准|费用标准|资费|租金|票价|费率表")
_BARE_CELL_RE = re.compile(r"[：:]\s*(?P<num>\d+(?:\.\d+)?)(?![\d.%‰]|\s*[\u4e00-\u9fffA-Za-z])")


def _heading_unit_fillers(slot: Slot | str, unit: Unit) -> tuple[Filler, ...]:
    """Return the bare numbers of a table row whose heading gives their unit.

    A table under 「二类城市（单位：元/天）」 or under a heading that names prices (「月租价格」,
    「费用标准」) lists amounts in bare cells (「租 1–2个月：2680」), the way a unit in a column
    header does (:data:`_HEADER_UNIT_RE`); the kind follows the unit, never a yes or no.
    """
    headings = " ".join(_norm(h) for h in unit.context)
    match = _HEADING_UNIT_RE.search(headings)
    kind = _header_unit_kind(match.group("unit")) if match else "amount" if _PRICE_HEADING_RE.search(headings) else ""
    if not kind or slot not in _HEADER_UNIT_SLOTS[kind]:
        return ()
    norm = _norm(unit.text)
    return tuple(Filler(str(slot), m.group("num"), m.start("num"), m.end("num")) for m in _BARE_CELL_RE.finditer(norm))


# Generic date words that alone do not answer 「什么时候」 (they only qualify another filler).
_WEAK_DATE = frozenset({"之前", "之后", "以前", "以后", "起", "前", "后"})
_PERSON_TAGS = frozenset({"nr", "nrt", "nrfg", "nt", "nz"})


@lru_cache(maxsize=16384)
def _norm(text: str) -> str:
    text = normalize_text(text)
    text = re.sub(r"(\d)[,，](\d{3})(?!\d)", r"\1\2", text)  # 「60,000积分」: a thousands separator
    text = re.sub(r"(\d)\s*(?:~|～|－|—|–|至|到)\s*(\d)", r"\1-\2", text)
    return re.sub(r"(\d)\s*个(工作日|小时|月|自然日)", r"\1\2", text)


def slot_fillers(slot: Slot | str, text: str) -> list[Filler]:
    """Return the fillers of ``slot`` that ``text`` carries (``[]`` when it carries none).

    ``none`` never needs a filler: any text "carries" it (one empty filler is returned).
    Person and organisation names also come from jieba's part-of-speech tags (nr/nt).
    """
    if slot == "none":
        return [Filler("none", "", 0, 0)]
    norm = _norm(text)
    found: list[Filler] = []
    for pattern in _FILLER_RES.get(slot, ()):
        for match in pattern.finditer(norm):
            value = match.group(0).strip()
            if not value or (slot == "date" and value in _WEAK_DATE):
                continue
            if slot == "place" and pattern is _PLACE_RE and _moved_thing(value):
                continue
            found.append(Filler(slot, value, match.start(), match.end()))
    for match in _HEADER_UNIT_RE.finditer(norm):  # 「课时费（元/节）：300」: the unit stands in the header
        if slot in _HEADER_UNIT_SLOTS[_header_unit_kind(match.group("unit"))]:
            found.append(Filler(slot, match.group("num"), match.start("num"), match.end("num")))
    if slot == "person_org" and not found:
        found.extend(_tagged_names(norm))
    if slot == "place" and not found:
        found.extend(_places(norm))
    return found


def _moved_thing(value: str) -> bool:
    """Return True when 「寄回/退回 X 的…」 names what is sent back (「寄回图书的邮费」), not where to.

    寄回 and 退回 take the thing moved as readily as the place (「寄到」「退至」 take only a place): before
    的 the phrase modifies a noun, and X is a place only when it ends in a word of place or is a region.
    """
    head, sep, _ = value.partition("的")
    return bool(sep) and head[:2] in ("寄回", "退回") and head[2:3] not in ("到", "至") \
        and not _PLACE_END_RE.search(head) and not any(r in head for r in _region_words())


def _tagged_names(norm: str) -> list[Filler]:
    import jieba.posseg as pseg

    out: list[Filler] = []
    pos = 0
    for pair in pseg.cut(norm, HMM=True):
        start = norm.find(pair.word, pos)
        pos = start + len(pair.word) if start >= 0 else pos
        if pair.flag in _PERSON_TAGS and len(pair.word) >= 2:
            out.append(Filler("person_org", pair.word, max(start, 0), max(start, 0) + len(pair.word)))
    return out


def _places(norm: str) -> list[Filler]:
    out: list[Filler] = []
    for region in _region_words():
        start = norm.find(region)
        if start >= 0:
            out.append(Filler("place", region, start, start + len(region)))
    return out


# --------------------------------------------------------------------------- binding

MIN_SUBJECT_SHARE = 0.75  # dev sets and the first foreign KB (trade-off table in docs/results/answerability.md)
UNKNOWN_WEIGHT = 0.2  # a subject term the knowledge base never uses
MIN_WEIGHT = 0.3  # share of the subject terms' weight the unit + its headings must carry
PARTIAL_SHARE = 0.67  # a long term counts as present when this share of its bigrams is


_LATIN_TERM_RE = re.compile(r"[a-z][a-z0-9\-]*")
_LATIN_GLUE_RE = re.compile(r"(?<=[a-z0-9])[\s\-_·.]+(?=[a-z0-9])")
_PER_TERM_RE = re.compile(r"(?:每|包(?=[年季月周天日]$))([\u4e00-\u9fff]{1,2})")  # 「每页」「每天」「包月」: a rate's unit
_MEMBER_TERM_RE = re.compile(r"([\u4e00-\u9fffA-Za-z]{2,6})(?:会员|用户)")  # a tier named with its head


# A space a text puts between a number and the Chinese around it (「开馆后 2 小时」).
_DIGIT_SPACE_RE = re.compile(r"(?<=\d)\s+(?=[\u4e00-\u9fff])|(?<=[\u4e00-\u9fff])\s+(?=\d)")


def _term_present(term: str, text: str) -> bool:
    if ALTERNATIVES in term:
        return any(_term_present(t, text) for t in term.split(ALTERNATIVES) if t)
    if len(term) == 1 and _LATIN_TERM_RE.fullmatch(term):  # a code letter (「k舱」) stands alone: 「K、L、Q」, not 「Wi-Fi」
        return re.search(rf"(?<![a-z]){term}(?![a-z])", text) is not None
    if _LATIN_TERM_RE.fullmatch(term):  # 「wifi」 is 「Wi-Fi」, 「ipad」 「iPad」
        return term.replace("-", "") in _LATIN_GLUE_RE.sub("", text)
    if len(term) == 1 and _HAN_RE.match(term):
        return term in text and _char_word_present(term, text)
    if term in text:
        return True
    if len(term) >= 4 and _HAN_RE.match(term) and _coordinated(term, text):
        return True  # 「早场及夜间票价」 names 早场票价 too
    if any(ch.isdigit() for ch in term) and term in _DIGIT_SPACE_RE.sub("", text):
        return True  # 「2小时」 is 「2 小时」 in a text that spaces its numbers
    if len(term) >= 2 and term.endswith("到") and term[:-1] + "至" in text:
        return True  # 「降到」 is written 「降至」
    member = _MEMBER_TERM_RE.fullmatch(term)
    if member and next(whole_word_starts(member.group(1), text, hmm=False), None) is not None:
        return True  # 「银星会员」 is the tier 「银星」 of a member table (「会员等级：银星」), not 「白银星」
    per = _PER_TERM_RE.fullmatch(term)
    if per and re.search(rf"(?:[/／]|(?<![不再])按)(?:{_PER_UNITS.get(per.group(1), re.escape(per.group(1)))})", text):
        return True  # 「每页」 is said by a rate's unit: 「0.5元/页」「按页计」, not 「不再按页计」
    province = province_of(term)
    if province and province in text:
        return True
    if any(c in text for c in containers_of(term)) or held_by_group(term, text):
        return True  # 「首尔」 in 「国际线路」「日韩线路」, 「香港」 in 「港澳台」
    if any(w in text for w in _region_synonyms(term)):
        return True
    if any(w in text for w in PERIOD_DAYS.get(term, ())):
        return True  # 「周末」 is written by its days: 「周六、周日」
    if len(term) == 4 and _HAN_RE.match(term) and _swapped_compound(term, text):
        return True
    if len(term) >= 3:
        grams = [term[i:i + 2] for i in range(len(term) - 1)]
        if sum(1 for g in grams if g in text) / len(grams) >= PARTIAL_SHARE:
            return True
        return len(term) == 3 and term[1:] in text and _is_verb_char(term[0])  # 「补差价」 → 「差价」
    return False


_COORDINATOR = r"(?:以及|及|和|与|、|或)"


def _coordinated(term: str, text: str) -> bool:
    """Return True when ``text`` coordinates ``term``'s modifier with another before their shared head.

    「早场及夜间票价」 is 早场票价 and 夜间票价, 「单车和电车车位」 单车车位 and 电车车位: the head
    written once after the last conjunct belongs to each.
    """
    for cut in range(2, len(term) - 1):
        modifier, head = term[:cut], term[cut:]
        if re.search(rf"{re.escape(modifier)}{_COORDINATOR}[\u4e00-\u9fff]{{1,4}}?{re.escape(head)}", text):
            return True
    return False


def _swapped_compound(term: str, text: str) -> bool:
    """Return True when ``text`` writes the two words of ``term`` in the other order (更换教练: 教练更换)."""
    first, second = term[:2], term[2:]
    return (second + first) in text and known_word(first) and known_word(second)


@lru_cache(maxsize=1024)
def _region_synonyms(term: str) -> frozenset[str]:
    """Return the other words for the region ``term`` names (「国外」: 「境外」「海外」)."""
    from strategies.rules.lexicon import REGION_SYNONYMS  # noqa: PLC0415

    return frozenset().union(*(group - {term} for group in REGION_SYNONYMS if term in group))


def _char_word_present(char: str, text: str) -> bool:
    """Return True when a one-character term stands in ``text`` as a word or a word's edge.

    「税」 is in 「综合税」「税率」 but not in 「保税仓」: a character inside another word is not
    the word (an occurrence that neither starts nor ends a jieba word, no HMM).
    """
    edges = word_edges(text, hmm=False)
    return any(ch == char and (i in edges or i + 1 in edges) for i, ch in enumerate(text))


@dataclass(frozen=True)
class Binding:
    """How well a unit carries the question's subject."""

    share: float
    found: tuple[str, ...]
    missing: tuple[str, ...]
    in_unit: bool
    specific_ok: bool = True
    threshold: float = MIN_SUBJECT_SHARE

    @property
    def bound(self) -> bool:
        """Return True when enough of the subject is carried, partly by the unit itself.

        The question's most specific term must be among the carried ones.
        """
        return self.share >= self.threshold and (self.in_unit or not self.found) and self.specific_ok


def subject_binding(subject: Sequence[str], unit: Unit, weights: Mapping[str, float] | None = None,
                    required: str | None = None, threshold: float = MIN_SUBJECT_SHARE, *,
                    lapse: bool = False, asking: str = "") -> Binding:
    """Return how much of ``subject`` the unit (and its heading path) carries.

    A term counts when it occurs in the unit's text, its title/heading path or its document's
    declared category (a long term also when most of its character bigrams do; a city also via
    its province); a word naming the kind of answer asked for (「要钱」「收费」, 「限制」, 「要求」)
    counts when the unit states one (a price or 「免费」, a limit, a condition), never by its mere
    absence. At least one found term must be in the unit itself or its last heading (the heading
    it answers).

    Args:
        subject: The question's subject terms.
        unit: The unit.
        weights: Optional term weights (default 1 each).
        required: A term that must be among the found ones (the most specific one).
        threshold: The share that binds (``MIN_SUBJECT_SHARE``; a profile's ``min_subject_share``).
        lapse: The question asks when or after how long something lapses: a word for lapsing
            (「过期」) is met by a validity span (「有效期：90天」).
        asking: The question's clause that asks: a word of it naming only a value's dimension
            (「年龄」) is met by a value in that dimension (「满7周岁」).

    """
    if not subject:
        return Binding(1.0, (), (), True, threshold=threshold)
    body = _norm(unit.text)
    near = body + " " + _norm(unit.context[-1]) if unit.context else body
    whole = near + " " + _norm(" ".join([unit.category, *unit.context]))
    stated = {t for t in subject if _kind_stated(t, unit, lapse=lapse, dimension=bool(asking) and t in asking)}
    found = [t for t in subject if t in stated or _term_present(t, whole)]
    missing = [t for t in subject if t not in found]
    w = weights or {}
    total = sum(w.get(t, 1.0) for t in subject)
    share = sum(w.get(t, 1.0) for t in found) / total if total else 1.0
    in_unit = any(t in stated or _term_present(t, near) for t in found)
    return Binding(share, tuple(found), tuple(missing), in_unit, required is None or required in found, threshold)


# --------------------------------------------------------------------------- qualifiers

# Kinds whose conflict makes a cited unit another regime's (a unit listing other regions or
# payment methods beside the asked one is usually a general rule, so those are left to binding).
ATTRIBUTION_KINDS = frozenset({"tier", "regime", "version", "category", "excepted"})
VALUE_SLOTS = frozenset({"date", "duration", "amount", "count", "person_org", "place"})
STRICT_KINDS = frozenset({"regime", "version"})  # must be present, not only uncontradicted
# Kinds whose values a yes-no question asks about together (one naming both 「信用卡」 and 「分期」): each must be present.
ASKED_TOGETHER_KINDS = frozenset({"payment", "tier", "regime"})


def _region_words() -> tuple[str, ...]:
    try:
        from strategies.rules.lexicon import REGIONS
    except ImportError:  # pragma: no cover - the lexicon moved
        return ()
    return REGIONS


def _is_compound_regime(value: str, dims: Mapping[str, frozenset[str]]) -> bool:
    """Return True when ``value`` is a modifier joined to its dimension's head (「跨境商品」)."""
    return any(value == mod + head for head, mods in dims.items() for mod in mods)


def _other_values(kind: str, question: Question, dims: Mapping[str, frozenset[str]]) -> list[str]:
    """Return the values of ``kind`` that would contradict the question's ones.

    A question scoped only by a scope word (「国际包裹…」「国内寄件…」) is contradicted by the
    other scope's words alone (「国内」 for 「国际」; 「境外」「港澳台」… for 「国内」), not by a province.
    """
    asked = question["qualifiers"].get(kind, [])
    if kind == "region" and asked and all(scope_word(a) == a for a in asked):
        scopes = [o for a in asked for o in opposite_scope(a)]
        if scopes:
            return list(dict.fromkeys(scopes))
    if kind == "region":
        same = {w for a in asked for w in _region_synonyms(a)} | {c for a in asked for c in containers_of(a)}
        mainland = list(MAINLAND_WORDS) if any(is_abroad(a) for a in asked) else []  # 首尔 is not 「国内」
        return [r for r in [*_region_words(), *mainland] if r not in same and not any(r in a or a in r for a in asked)]
    if kind in ("tier", "payment"):
        from strategies.rules.question import _closed_lists

        tiers, payments = _closed_lists()
        pool = tiers if kind == "tier" else payments
        return [v for v in pool if not any(v in a or a in v for a in asked)]
    if kind == "regime":
        others: list[str] = []
        for head, mods in dims.items():
            named = [m for m in mods if any(m in a for a in asked)]
            if named:
                others += [m + head for m in mods if m not in named]
        return others
    return []


@dataclass(frozen=True)
class QualifierCheck:
    """Which qualifiers a unit matched, which it contradicted, which it lacks."""

    matched: dict[str, list[str]] = field(default_factory=dict)
    conflicts: dict[str, list[str]] = field(default_factory=dict)
    absent: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Return True when nothing is contradicted and no strict kind is absent."""
        return not self.conflicts and not any(k in STRICT_KINDS for k in self.absent)


# Where a rule names what it does not cover: 「（海南、西藏除外）」「除港澳台外」「不含偏远地区」.
_EXCEPTION_RE = re.compile(r"[（(][^（）()]{1,40}除外[）)]|[^，。；,;：:（）()]{1,40}除外|除了?[^，。；,;]{1,30}?(?:以外|之外|外)"
                           r"|(?:不含|不包括|不包含)[^，。；,;）)]{1,30}")


def _holds(area: str, place: str) -> bool:
    """Return True when ``area`` names ``place`` or holds it (its country, its group)."""
    return area == place or area in containers_of(place) or group_holds(area, place) \
        or inside_scope(area, place)  # containers: its country first; 「日本」 lies in 「国际」


def _only_excepted(value: str, norm: str) -> bool:
    """Return True when every mention of ``value`` in ``norm`` is inside an exception (「…除外」)."""
    spans = [m.span() for m in _EXCEPTION_RE.finditer(norm)]
    starts = [m.start() for m in re.finditer(re.escape(value.lower()), norm)]
    return bool(starts) and bool(spans) and all(any(a <= i < b for a, b in spans) for i in starts)


def _excepted_subject(question: Question, unit: Unit, found: Sequence[str]) -> list[str]:
    """Return the question's own subject terms that the unit names only as an exception.

    「…10元（会员卡除外）」 states a value for everything but the 会员卡 a question on 会员卡 asks
    about: the value is not its. A yes-no question is left alone (there the exception is the answer),
    and so is a term the unit's headings carry (the unit is under its own heading).
    """
    if question["slot"] == "yesno":
        return []
    body = _norm(unit.text)
    return [f"{t}除外" for t in found if t in question["subject_terms"] and ALTERNATIVES not in t
            and _excepted_here(t, unit, body)]


def _excepted_here(value: str, unit: Unit, body: str) -> bool:
    """Return True when the unit's text (``body``) names ``value`` only in an exception and its headings do not."""
    return _only_excepted(value, body) and not _term_present(value, _norm(" ".join(unit.context)))


def qualifier_check(question: Question, unit: Unit,
                    dims: Mapping[str, frozenset[str]] | None = None) -> QualifierCheck:
    """Check the question's qualifiers against a unit, its heading path and its chunk.

    A qualifier is *matched* when its value occurs in the unit, its headings or its chunk; it is
    *contradicted* when the unit or its headings name another value of the same kind (another
    region, tier or payment method; another modifier of the same regime dimension) and not
    the asked one; otherwise it is *absent*. A value the unit names only as an exception
    (「大陆地区（海南、西藏除外）」) is contradicted too, except for a yes-no question (「寄海南包邮吗」
    is answered by the exception).
    """
    dims = dims or {}
    near = _norm(unit.text + " " + " ".join(unit.context))
    chunk = _norm(unit.chunk_text + " " + unit.category)  # the document's category scopes it as a whole
    matched: dict[str, list[str]] = {}
    conflicts: dict[str, list[str]] = {}
    absent: dict[str, list[str]] = {}
    strict_regime = [v for v in question["qualifiers"].get("regime", []) if _is_compound_regime(v, dims)]
    body = _norm(unit.text)
    lead = _norm(_lead_sentence(unit))  # the sentence that opened the unit's paragraph
    for kind, values in question["qualifiers"].items():
        hit = [v for v in values if _term_present(v, near)]
        pool = [o for o in _other_values(kind, question, dims) if len(o) >= 2]
        own = [o for o in pool if o.lower() in body] if kind in ATTRIBUTION_KINDS else []
        if kind == "region":  # the row itself names countries abroad, the heading only lists both kinds
            own = [m for m in foreign_mentions(body) if not any(_holds(m, v) for v in values)]
        if own and not any(_term_present(v, body) for v in values):
            conflicts[kind] = own  # the unit itself names another regime; a title listing all does not help
            continue
        if hit and question["slot"] != "yesno" and all(_excepted_here(v, unit, body) for v in hit):
            conflicts.setdefault("excepted", []).extend(f"{v}除外" for v in hit)  # 「大陆地区（海南除外）」
            continue
        if hit and kind in ASKED_TOGETHER_KINDS and question["slot"] == "yesno":
            lacking = [v for v in values if not (_term_present(v, near) or _term_present(v, chunk))]
            if lacking:  # asked about cards and instalments at once: a rule on cards alone does not answer
                conflicts["together"] = lacking
                continue
        if hit:
            matched[kind] = hit
            continue
        others = [o for o in pool if o.lower() in near]
        if kind == "region" and not others:  # 「日韩线路」 or 「泰国」 for a question on 台湾
            others = [m for m in foreign_mentions(near) if not any(_holds(m, v) for v in values)]
        if not others and lead and not any(_term_present(v, lead) for v in values):
            others = [o for o in pool if o.lower() in lead]  # the paragraph's opening sentence scopes it
        if others:
            conflicts[kind] = others
        elif any(_term_present(v, chunk) for v in values) and kind not in STRICT_KINDS:
            matched[kind] = [v for v in values if _term_present(v, chunk)]
        elif kind == "regime" and not strict_regime:
            continue  # a bare modifier is weak evidence of a regime: binding decides
        else:
            absent[kind] = list(values)
    return QualifierCheck(matched, conflicts, absent)


_SENTENCE_END_RE = re.compile(r"[。！？!?]")


def _lead_sentence(unit: Unit) -> str:
    """Return the sentence before ``unit`` in its paragraph (``""`` for the first, a row, or a list item).

    「内地分馆的座位可预约。每人每天最多预约N小时。」: the second sentence names no region of its own
    and goes on under the scope the first one set; a later paragraph (a blank line or a new
    line) starts afresh.
    """
    if unit.row or not unit.chunk_text:
        return ""
    at = unit.chunk_text.find(unit.text)
    if at <= 0:
        return ""
    paragraph = unit.chunk_text[:at].rsplit("\n", 1)[-1]
    sentences = [t for t in _SENTENCE_END_RE.split(paragraph) if t.strip()]
    return sentences[-1] if sentences and _SENTENCE_END_RE.search(paragraph) else ""


# --------------------------------------------------------------------------- the gate


@dataclass(frozen=True)
class UnitVerdict:
    """Whether one unit answers the question, and why."""

    unit: Unit
    answers: bool
    fillers: tuple[Filler, ...]
    binding: Binding
    qualifiers: QualifierCheck
    reason: str = ""


_ASIDE_RE = re.compile(r"（[^（）]*）|\([^()]*\)|“[^“”]*”|\"[^\"]*\"|《[^《》]*》")


def _states_no_rule(text: str) -> bool:
    """Return True for short (normalised) text with no polarity and no statement: a bare list item."""
    return len(text) <= LIST_ITEM_CHARS and not _YESNO_RE.search(text) and not _STATEMENT_RE.search(text)


def _list_heading(heading: str) -> str:
    """Return a heading that introduces a list (「五、不能分期的情况」), its numbering off; else ``""``."""
    return _NUMBERING_RE.sub("", heading).strip() if _LIST_HEADING_RE.search(heading) else ""


def list_lead_in(item: str, chunk_text: str, heading: str = "") -> str:
    """Return what a bare list item is an item of: the list's lead-in line, else its heading.

    An item such as 「首年开卡的主卡」 says nothing alone; the line introducing its list
    (「以下情况不收年费：」) or the heading above it (「五、不能分期的情况」) says what it
    is. Returns ``""`` when ``item`` is not a marked item of ``chunk_text``'s list, states a
    rule of its own (a polarity or a statement), or nothing introduces it.
    """
    if not _states_no_rule(_ASIDE_RE.sub("", _norm(item))):  # a remark or a quoted label is not its rule
        return ""
    lines = chunk_text.splitlines()
    at = next((i for i, line in enumerate(lines) if item in line and LIST_MARK_RE.match(line)), None)
    if at is None:
        return ""
    for line in reversed(lines[:at]):
        stripped = line.strip()
        if not stripped or LIST_MARK_RE.match(stripped):
            continue
        if stripped.endswith(("：", ":")) and not stripped.startswith("#"):
            return re.split(r"[。！？!?；;]", stripped.rstrip("：:"))[-1].strip()  # its own sentence only
        break
    return _list_heading(heading)


def with_list_heading(text: str, headings: Sequence[str]) -> str:
    """Return a chunk's text with the heading that introduces its list, when it opens with one.

    A chunk that starts with the items of 「五、不能分期的情况」 states, with that heading,
    「不能分期的情况：…」 for each item; the verifier reads it so (see :func:`list_lead_in`).
    """
    first = next((line for line in text.splitlines() if line.strip()), "")
    heading = _list_heading(str(headings[-1])) if headings else ""
    return f"{heading}：\n{text}" if heading and LIST_MARK_RE.match(first) else text


def _is_list_item(unit: Unit) -> bool:
    """Return True for a unit that is an item of a list under its heading (no verb of its own).

    A heading such as 「不支持…的情形」 states the yes-no answer for every item under it.
    """
    return _states_no_rule(_norm(unit.text))


# Words that pick out some or all of a kind, or the ordinary case: 「部分课程」 is no regime of its own.
_DETERMINERS = frozenset({"部分", "所有", "全部", "其他", "其它", "相关", "同类", "个别", "此类", "该类", "这类",
                          "上述", "以下", "各类", "各种", "任何", "每个", "单个", "多个"})


def _sibling_regime(question: Question, unit: Unit, vocab: Vocabulary | None) -> list[str]:
    """Return the sibling regime the unit's own text names instead of the asked one.

    Under a heading naming 私教课程 among others, 「以团体课程为例…」 is about 团体课程: the
    question's regime stands only in the heading, and the unit names another modifier of the
    same head (not the ordinary case, 「一般课程」, nor a determiner, 「部分课程」).
    """
    regimes = question["qualifiers"].get("regime", [])
    if vocab is None or not regimes:
        return []
    heads = vocab.values()
    text = _norm(unit.text)
    for value in regimes:
        head = heads.get(value, "")
        if not head or not value.endswith(head) or _term_present(value, text):
            continue
        for match in re.finditer(re.escape(head), text):
            before = text[max(0, match.start() - 2):match.start()]
            if len(before) == 2 and all(_HAN_RE.match(c) for c in before) and not value.endswith(before + head) \
                    and before not in _DEFAULT_VALUES and before not in _DETERMINERS:
                sibling = before + head
                if vocab.uses_word(sibling) and sibling != value:
                    return [sibling]
    return []


# A heading that introduces a list of cases (「…的情况」「适用范围」「包括」).
_LIST_HEADING_RE = re.compile(r"(?:情况|情形|范围|类型|种类|清单|名单|列表|包括|如下|以下|下列)[:：]?\s*$")


def _item_of_another_list(question: Question, unit: Unit, subject: Sequence[str]) -> list[str]:
    """Return the heading of a list item whose heading the question never touches.

    An item with no verb of its own (「0元办理的体验证、临时阅览证」) says only that its heading
    applies to it (「不能外借的情况」): a question naming nothing of that heading asks something else.
    """
    if not unit.context or unit.row or not _is_list_item(unit):
        return []
    heading = _NUMBERING_RE.sub("", _norm(unit.context[-1]))
    if not _LIST_HEADING_RE.search(heading):
        return []
    words = [w for w, _ in _words(heading) if len(w) >= 2 and w not in _FORM_WORDS]
    if not words or any(_term_present(w, question["norm"]) for w in words):
        return []
    if any(_term_present(t, heading) for t in subject):
        return []
    return [heading]


# Classifiers that name one of several parallel alternatives (a table's 3期/6期/12期 rows), not a
# quantity to compare against a threshold (元, 天: 「买了50元」 is checked against 「满99元」).
_ALTERNATIVE_RE = re.compile(r"(?<![\d.])(\d+)\s*(期|档|级|星|代)(?![\u4e00-\u9fff]{0,1}(?:以上|以下|以内))")


def _other_alternative(question: Question, unit: Unit) -> list[str]:
    """Return the unit's own alternative when the question names another (「分18期」 vs a 12期 row).

    A unit that states values of the same kind and not the asked one is about the others
    (a row of another alternative, a sentence listing the ones offered).
    """
    asked = {(m.group(2), m.group(1)) for m in _ALTERNATIVE_RE.finditer(question["norm"])}
    if not asked:
        return []
    stated = {(m.group(2), m.group(1)) for m in _ALTERNATIVE_RE.finditer(_norm(unit.text))}
    out = []
    for cls, value in asked:
        mine = {v for c, v in stated if c == cls}
        if mine and value not in mine:
            out.append(f"{min(mine)}{cls}")
    return out


_LABEL_RE = re.compile(r"^([^，,。；;：:]{2,8})[：:]")


def _sibling_label(unit: Unit, found: Sequence[str]) -> list[str]:
    """Return the unit's label when it names a sibling of a term found only in its headings.

    Under a heading 「次日达与当日达」, a unit labelled 「当日达：…」 (or a later sentence of the
    item so labelled, :attr:`Unit.label`) is about 当日达: a question on 次日达 found its term in the heading, not
    in the unit. A sibling shares the term's last
    character (its head) and differs from it.
    """
    match = _LABEL_RE.match(_norm(unit.text))
    if not match and not unit.label:
        return []
    label, body = match.group(1) if match else _norm(unit.label), _norm(unit.text)
    return [label for t in found if _HAN_RE.search(t) and not _term_present(t, body) and _is_sibling(label, t)][:1]


def _sibling_instead(question: Question, unit: Unit, missing: Sequence[str], vocab: Vocabulary | None) -> list[str]:
    """Return the unit's words that name a sibling of a subject noun the unit lacks.

    A question on 「年卡会员」 bound by its other words to a unit on 「次卡会员」 is about another
    thing: the unit names a word with the same head and another modifier (the same length), and
    the knowledge base uses both words, so it tells them apart (a paraphrase it never uses is not
    a sibling of anything). Two-character words sharing a head are as often synonyms (用户/客户)
    as siblings, so only longer ones count.
    """
    if vocab is None:
        return []
    body = _norm(unit.text)
    terms = [t for t in missing if 3 <= len(t) <= 5 and _HAN_RE.fullmatch(t[-1]) and ALTERNATIVES not in t
             and _is_nominal(t) and vocab.uses_word(t)]
    if not terms:
        return []
    words = set(_tokens(body))
    return [w for t in terms for w in words
            if len(w) == len(t) and _is_sibling(w, t) and vocab.uses_word(w)][:1]


def _tokens(text: str) -> tuple[str, ...]:
    return tuple(w for w, _ in tagged_words(text))


def _is_sibling(word: str, term: str) -> bool:
    """Return True when ``word`` names a sibling of ``term``.

    A sibling has the same head (last character) and another modifier (次日达/当日达, 上班/下班).
    """
    return len(term) >= 2 and word != term and term not in word and word[-1] == term[-1]


_CONJUNCTIONS = frozenset({"与", "和", "及", "以及", "、", "跟", "或"})
_NUMBERING_RE = re.compile(r"^\s*(?:第?[\d一二三四五六七八九十]+[、.．章节条]|\d+(?:\.\d+)+)\s*")


@lru_cache(maxsize=4096)
def _conjuncts(heading: str) -> tuple[str, ...]:
    """Return the coordinated parts of a heading (「自习室预约与续借」 → two), numbering left out."""
    from knowledge.normalize import _tokenizer  # noqa: PLC0415

    parts, current = [], ""
    for word in _tokenizer().lcut(_NUMBERING_RE.sub("", heading), HMM=False):
        if word in _CONJUNCTIONS:
            parts.append(current)
            current = ""
        else:
            current += word
    return tuple(p for p in [*parts, current] if p.strip())


def _other_conjunct(unit: Unit, found: Sequence[str], asked: Sequence[str]) -> list[str]:
    """Return the terms the unit carries only through a part of its heading it does not speak to.

    Under 「自习室预约与续借」 a unit about 自习室 (「…每天可预约1次」) is the first part's: a
    question on 续借 found its term in the heading's other part, not in the unit. A part the
    question names too (``asked``: 「押金提取」 under 「押金与提取」) is the question's own.
    """
    if not unit.context:
        return []
    body = _norm(unit.text)
    parts = _conjuncts(_norm(unit.context[-1]))
    if len(parts) < 2:
        return []
    out = []
    for term in found:
        if _term_present(term, body):
            continue
        own = [p for p in parts if _term_present(term, p)]
        others = [p for p in parts if p not in own]
        spoken = [w for p in others for w, _ in _words(p) if len(w) >= 2 and w not in _FORM_WORDS
                  and not any(w in o for o in own) and _term_present(w, body)
                  and not any(_term_present(w, a) or _term_present(a, w) for a in asked)]
        if own and spoken:
            out.append(term)
    return out[:1]


_QUESTION_HEADING_RE = re.compile(r"[?？]\s*$")
# Regime values that name the ordinary case, not a narrower one.
_DEFAULT_VALUES = frozenset({"普通", "一般", "常规", "标准", "默认", "现行", "常见", "主要"})


def _narrower_heading(question: Question, unit: Unit, vocab: Vocabulary | None) -> list[str]:
    """Return the regime values a unit's question heading names beyond the customer's question.

    A unit under a question heading (an FAQ entry: 「学生读者押金多少？」) answers that
    question; a regime value it names that the customer's question does not (any value of the
    knowledge base's dimensions, a tier, a payment method) makes it the answer for that regime
    only, not for the question as asked.
    """
    if vocab is None or not unit.context:
        return []
    heading = _norm(unit.context[-1])
    if not _QUESTION_HEADING_RE.search(heading):
        return []
    asked = " ".join([question["norm"], *(str(v).lower() for vals in question["qualifiers"].values() for v in vals)])
    text = _norm(unit.text)
    if any(_term_present(w, text) and _term_present(w, asked) for w in (*vocab.tiers, *vocab.payments)):
        return []  # the unit names the customer's own tier or payment: a list under a general heading
    named = [v for v in vocab.regime_values if len(v) >= 2 and not v.startswith(tuple(_DEFAULT_VALUES))
             and _term_present(v, heading)]
    return sorted(v for v in named if not any(v in w or w in v for w in named + [v] if _term_present(w, asked)))


# Morphemes of direction and polarity: a word with one of them and the same other character as
# a question word names the opposite (馆内/馆外, 上班/下班, 入库/出库, 线上/线下).
_OPPOSITES = (("内", "外"), ("上", "下"), ("入", "出"), ("进", "出"), ("前", "后"), ("高", "低"),
              ("大", "小"), ("新", "旧"), ("长", "短"), ("正", "反"), ("主", "副"), ("收", "付"))


def _opposite_terms(terms: Sequence[str], unit: Unit) -> list[str]:
    """Return the words of the unit that name the opposite of a question term it does not name.

    「馆内自助机一次最多借10本」 does not answer a question about 馆外: the unit (or its
    headings) names 馆内 and never 馆外.
    """
    text = _norm(" ".join([*unit.context, unit.text]))
    out = []
    for term in terms:
        if len(term) != 2 or not _HAN_RE.fullmatch(term[0]) or not _HAN_RE.fullmatch(term[1]) \
                or _term_present(term, text):
            continue
        for a, b in _OPPOSITES:
            for x, y in ((a, b), (b, a)):
                flipped = (y + term[1]) if term[0] == x else (term[0] + y) if term[1] == x else ""
                if flipped and _term_present(flipped, text):
                    out.append(flipped)
    return out[:1]


def _scoped_to(unit: Unit, values: Sequence[str]) -> list[str]:
    """Return the ``values`` the unit is scoped to: named in its headings or its first clause."""
    if not values:
        return []
    norm = _norm(unit.text)
    first = _CLAUSE_RE.split(norm, maxsplit=1)[0]
    heads = _norm(" ".join(unit.context))
    return [v for v in values if _term_present(v, heads) or _term_present(v, first)]


# A worked example (a heading naming one) tells one customer's case: it answers only when no
# stated rule does. A sentence about the document itself (「本手册介绍…」) states no fact.
_EXAMPLE_HEADING_RE = re.compile(r"示例|案例|举例|例子|实例|样例|example", re.IGNORECASE)
_ABOUT_DOCUMENT_RE = re.compile(r"^本(?:规则|政策|文|文档|说明|指南|手册|页|章|节|须知|条款|协议)"
                                r"(?:主要)?(?:说明|介绍|规定了?|适用于|包括|涵盖|列出)")


def _about_document(unit: Unit) -> list[str]:
    """Return a reason when the unit speaks about its document (「本手册介绍…」), stating no fact."""
    return ["about the document"] if _ABOUT_DOCUMENT_RE.match(_norm(unit.text)) else []


def _is_example(unit: Unit) -> bool:
    """Return True for a unit under a worked example's heading (one customer's case, not the rule)."""
    return bool(_EXAMPLE_HEADING_RE.search(" ".join(unit.context[1:])))


def _topic_of(subject: Sequence[str]) -> list[str]:
    """Return the subject terms without the predicate that ends them (游泳馆, 开门 → 游泳馆).

    An elliptical part 「…？一次多少钱」 asks about what the first part is about, not about what
    the first part asks that thing does; a predicate inside the subject stays (it may qualify it).
    """
    terms = list(subject)
    while len(terms) > 1 and not _is_nominal(terms[-1]):
        terms.pop()
    return terms


def _prefer_rules(verdicts: Sequence[UnitVerdict]) -> tuple[UnitVerdict, ...]:
    """Return the verdicts with worked examples set aside when a stated rule answers too."""
    if not any(v.answers and not _is_example(v.unit) for v in verdicts):
        return tuple(verdicts)
    return tuple(replace(v, answers=False, reason="worked example (a rule answers)")
                 if v.answers and _is_example(v.unit) else v for v in verdicts)


# The verb a yes-no question asks about follows its modal.
_ASKED_VERB_RE = re.compile(r"(?:能不能|可不可以|会不会|要不要|能否|可否|可以|允许|能|会)([\u4e00-\u9fff])")
_NOT_VERBS = frozenset("不没的了是有在把被给对和与")


@lru_cache(maxsize=1024)
def _asked_verb(question: str) -> str:
    """Return the verb a yes-no question asks about (「会员卡能转让吗」 → 转), ``""`` when none."""
    start = _asked_verb_at(question)
    return question[start] if start >= 0 else ""


@lru_cache(maxsize=1024)
def _asked_verb_at(question: str) -> int:
    """Return the offset of the verb after a yes-no question's modal, ``-1`` when none."""
    edges = word_edges(question, hmm=False)  # the modal is a word of its own (not the 会 of 会员)
    match = next((m for m in _ASKED_VERB_RE.finditer(question) if m.start() in edges and m.start(1) in edges), None)
    return match.start(1) if match and match.group(1) not in _NOT_VERBS else -1


@lru_cache(maxsize=1024)
def _asked_predicate(question: str) -> tuple[str, ...]:
    """Return the asked verb and the verbs after it (「停卡能往后延长吗」 → 往, 延长), ``()`` when none.

    The first is the asked verb (:func:`_asked_verb`); an adverb may stand before the verb.
    """
    start = _asked_verb_at(question)
    if start < 0:
        return ()
    verbs = [w for w, tag in _tagged(question[start:])[:MAX_PREDICATE_WORDS] if tag.startswith("v") and len(w) >= 2]
    return tuple(dict.fromkeys([question[start], *verbs]))


MAX_PREDICATE_WORDS = 3  # words of a yes-no question's predicate after its modal (an adverb, then the verb)


def _negated_predicate(question: str, text: str) -> tuple[Filler, ...]:
    """Return the negated asked predicate of a yes-no question in ``text`` (「不转让」 for 「能转让吗」).

    A rule that says 「不」 + the very verb the question asks about (or a verb of its predicate:
    「不延长」 for 「能往后延长吗」) answers it (no), whatever the verb: the general polarity
    words (「不能」「不支持」…) do not list every verb.
    """
    norm = _norm(text)
    for word in _asked_predicate(question):
        found = re.search(f"(?:不|无法|不再)(?:予以?)?{re.escape(word)}", norm)
        if found:
            return (Filler("yesno", found.group(0), found.start(), found.end()),)
    return ()


_MONEY_WORD_RE = re.compile(r"费|价|钱|租金|金额|收取|扣除")
# A value filler of a yes-no question (an amount, a time, a count) that is no polarity word itself.
_VALUE_FILLER_RE = re.compile(rf"(?!(?:{_YESNO_RE.pattern}|{_STATEMENT_RE.pattern})$)"
                              rf"(?:{_AMOUNT_RE.pattern}|{_DURATION_RE.pattern}|{_COUNT_RE.pattern})")


# Polarity words that are verbs of their own (「前台提供」「不参与折扣」): they say yes or no about
# what they govern, so where the unit never names the asked act they answer only when what they
# govern is the question's own subject (「不接受某某卡」 for 「能刷某某卡吗」).
_LEXICAL_POLARITY_RE = re.compile(r"不?(?:提供|接受|参与|计入|享受|包含|适用)")
MAX_OBJECT_GAP = 6  # characters between such a verb and its object


def _says_yes_or_no(norm: str, filler: Filler, subject: Sequence[str] = ()) -> bool:
    """Return True when ``filler`` is a polarity word of ``norm`` (「可」「不支持」), not a value or a statement.

    A polarity verb of its own (``_LEXICAL_POLARITY_RE``) counts only with a term of ``subject``
    as its object, right after it.
    """
    if _LEXICAL_POLARITY_RE.fullmatch(filler.text):
        after = norm[filler.end:filler.end + MAX_OBJECT_GAP + max((len(t) for t in subject), default=0)]
        return any(_term_present(t, _CLAUSE_RE.split(after)[0]) for t in subject)
    if norm[filler.start:filler.end] != filler.text:  # a filler of the heading over a list item
        return bool(_YESNO_RE.fullmatch(filler.text))
    match = _YESNO_RE.match(norm, filler.start)  # in place: 「可」 is a polarity word before a verb
    return match is not None and match.end() == filler.end


def _polarity_on_subject(unit: Unit, norm: str, filler: Filler, subject: Sequence[str]) -> bool:
    """Return True when the sentence holding the polarity word ``filler`` names the question's subject.

    Where a unit never names the act a yes-no question asks about, a polarity word (「不能」「可」)
    says yes or no about what its own sentence speaks of. A sentence that names no term of
    ``subject`` (in its text, or by stating the kind of value a term asks for, as a price does for
    「要钱」) is tied to the question only by its title or headings: its 「不能办理…」 is about
    another act on that topic, not the asked one. A polarity word of the heading over a list item
    is the heading's, and is left to the list rule.
    """
    if norm[filler.start:filler.end] != filler.text:
        return True
    return any(_term_present(t, norm) or _kind_stated(t, unit) for t in subject)


# A span counted by an indefinite 几 (「隔几天」「几个月后」) in a yes-no question: the customer asks
# whether something still holds after a while, which only a unit stating a span answers.
_INDEFINITE_SPAN_RE = re.compile(rf"几\s*个?\s*(?:{_TIME_UNIT})")


def _quantity_kinds(norm: str) -> set[str]:
    """Return the kinds of quantity ``norm`` states: ``span`` (a time), ``money``, or a measure's family."""
    return {family for family, *_ in _quantities(norm) + _sums(norm) + _spans(norm, advance_only=False)}


def _states_asked_act(question: str, unit: Unit) -> bool:
    """Return False when a yes-no question asks whether an act may be done and ``unit`` never names the act.

    「…能退吗」 asks whether 退 is allowed: a row stating only a price, a time or a count
    (「课时费：150元」) says nothing about it, so its values do not answer; they do when the
    unit names the act (「退还50%」), when the question asks no act (「收费吗」 has no modal), and
    when it states a quantity of the value's kind (「入会3个月能…吗」 against 「满一年」).
    """
    predicate = _asked_predicate(question)
    if not predicate:
        return True
    text = _norm(" ".join([*unit.context[-1:], unit.text]))
    return any(word in text for word in predicate)


def _states_limit(unit: Unit, *, money: bool = False, side: str = "") -> bool:
    """Return True when the unit or the heading it answers speaks of a limit (「上限」「最高」「不超过」…).

    With ``money`` (a question of a cap on what is paid), the limit's own clause must speak of
    money: 「每次最多2条」 limits towels, 「入场次数不限」 visits, and neither caps a price. With
    ``side`` (``max``/``min``, the bound the question asks about) the limit must be of that side:
    「封不封顶」 is not answered by a floor (「不足1小时按1小时计」「最低收取5元」), nor
    「有最低消费吗」 by a cap.
    """
    limit_re = _SIDED_LIMIT_RE.get(side, _BOUND_CELL_RE)
    texts = [_norm(t) for t in [*unit.context[-1:], unit.text]]
    if not money:
        return any(limit_re.search(t) for t in texts)
    return any(limit_re.search(clause) and (_AMOUNT_RE.search(clause) or _MONEY_WORD_RE.search(clause))
               for t in texts for clause in _CELL_SEP_RE.split(t))


DOMAIN_SHARE = 0.5  # a qualifier value written in more than this share of the KB's chunks is its own subject


def _without_domain_values(question: Question, vocab: Vocabulary | None) -> Question:
    """Return ``question`` without the qualifier values the knowledge base writes in most of its chunks.

    On a gift-card help centre, 「礼品卡」 is what every rule is about, not one payment method among
    others: a unit naming the wallet a refund goes back to does not contradict it.
    """
    if vocab is None or not vocab.texts:
        return question
    n = len(vocab.texts)
    quals = {kind: [v for v in values if ALTERNATIVES in v or vocab.document_frequency(v) <= DOMAIN_SHARE * n]
             for kind, values in question["qualifiers"].items()}
    if quals == question["qualifiers"]:
        return question
    return cast(Question, {**question, "qualifiers": {k: v for k, v in quals.items() if v}})


def judge_unit(question: Question, unit: Unit, *, vocab: Vocabulary | None = None,
               weights: Mapping[str, float] | None = None, slot: Slot | None = None,
               min_share: float = MIN_SUBJECT_SHARE, regimes: Question | None = None) -> UnitVerdict:
    """Return whether ``unit`` answers ``question`` (filler of the slot, bound, qualifiers ok).

    ``weights`` and ``regimes`` (the question as the qualifier check reads it,
    :func:`_without_domain_values`) depend on the question only: a caller judging many units
    computes them once.
    """
    asked = slot or question["slot"]
    dims = vocab.dimensions if vocab else {}
    body = _norm(unit.text)  # the unit's normalised text, read by the checks below
    fillers = tuple(slot_fillers(asked, unit.text))
    if not fillers and unit.row and asked in VALUE_SLOTS:
        fillers = _heading_unit_fillers(asked, unit)
    if not fillers and unit.row and asked == "yesno" and _charge_anchored(question):
        fillers = _heading_unit_fillers("amount", unit)  # 「…还得交钱吗」: a priced cell says how much, 0 included
    if not fillers and asked == "yesno":
        fillers = _negated_predicate(question["norm"], unit.text)
    if not fillers and asked == "yesno" and unit.context and _is_list_item(unit) \
            and not unit.context[-1].endswith(_ASKED_PIECE_END):  # an FAQ's question asks, it does not state
        fillers = tuple(slot_fillers(asked, unit.context[-1]))  # 「不适用…的商品」 over its items
    if asked == "count" and _CLASSIFIED_COUNT_RE.search(question["norm"]):
        fillers = tuple(f for f in fillers if _COUNT_RE.fullmatch(f.text))
        fillers += _labelled_counts(body, question.get("measure", ""))
    elif asked == "count":  # a bare 「多少」: any number answers (a phone number, a threshold) but a time
        timed = [(m.start(), m.end()) for m in _DURATION_RE.finditer(body)]
        fillers = tuple(f for f in fillers if not any(a <= f.start and f.end <= b for a, b in timed))
        fillers += tuple(Filler("count", m.group(0), m.start(), m.end())
                         for m in _IDENTIFIER_RE.finditer(body)
                         if not any(a <= m.start() < b for a, b in timed))
    if asked == "duration" and _LENGTH_ASKED_RE.search(question["norm"]):  # 「超过多长…」: a length answers too
        fillers += tuple(Filler("count", body[a:b], a, b) for family, _, a, b in _quantities(body) if family == "length")
    if asked == "person_org" and ORG_ASKED_RE.search(question["norm"]):  # 「哪家」: no 「…用户」
        fillers = tuple(f for f in fillers if not _PERSON_FILLER_RE.search(f.text))
    if asked in ("count", "none") and _PHONE_ASKED_RE.search(question["norm"]):  # 「预约电话号码是多少」: a number to dial
        fillers = tuple(Filler("count", m.group(0), m.start(), m.end()) for m in _PHONE_RE.finditer(body))
    if asked == "date" and "几点" in question["norm"]:
        fillers = tuple(Filler("date", m.group(0), m.start(), m.end())
                        for m in _CLOCK_RE.finditer(body))
    elif asked == "date" and "几号" in question["norm"]:  # a day of the month, not a duration
        fillers = tuple(Filler("date", m.group(0), m.start(), m.end())
                        for m in _DAY_RE.finditer(body))
    if asked == "yesno" and fillers and _INDEFINITE_SPAN_RE.search(question["norm"]) \
            and "span" not in _quantity_kinds(body):
        fillers = ()  # 「隔几个月也可以…吗」: whether the act holds after a while is told by a unit stating its span
    if asked == "yesno" and fillers and not _states_asked_act(question["norm"], unit):
        kinds = _quantity_kinds(_norm(question["norm"]))  # 「入会3个月能…吗」: by the least time asked
        objects = question_subject(question)
        fillers = tuple(f for f in fillers
                        if (_says_yes_or_no(body, f, objects) and _polarity_on_subject(unit, body, f, objects))
                        or (_VALUE_FILLER_RE.fullmatch(f.text) and _quantity_kinds(_norm(f.text)) & kinds))
    if asked == "procedure" and _REACH_ASKED_RE.search(question["norm"]):  # a way or a condition, no value
        fillers = _reach_fillers(unit)
    if asked == "amount" and _MONEY_ASKED_RE.search(question["norm"]):  # 「多少钱」: money, not a rate
        fillers = tuple(f for f in fillers if not _RATE_FILLER_RE.search(f.text))
    if fillers and question.get("per"):
        fillers = _rated(fillers, unit, str(question.get("per")))
    if asked == "amount" and fillers and _measure_absent(question, unit):
        fillers = ()  # 「骑8公里得付几块」: a price that never speaks of distance is not the price of that distance
    subject = question_subject(question)
    # 「A还是B」: a unit naming one option chooses, so the options' words are no subject it must carry
    options = _choice_options(question["norm"]) if asked == "yesno" else ()
    chosen = options if any(_term_present(o, body) for o in options) else ()
    subject = [t for t in subject if not any(t in o for o in chosen)]
    weights = weights if weights is not None else subject_weights(subject, vocab)
    lapse = asked in ("duration", "date")  # 「多久过期」: a validity span answers it
    asking = asking_clause(question["norm"], question["slot"])
    bind = subject_binding(subject, unit, weights, specific_term(weights), min_share, lapse=lapse, asking=asking)
    if asked in VALUE_SLOTS and fillers and bind.found:
        fillers = bound_fillers(fillers, unit, bind.found,
                                scopes=[v for vals in (question.get("qualifiers") or {}).values() for v in vals])
    if asked in VALUE_SLOTS and fillers:
        fillers = _aside_scoped(fillers, unit, question)
    if asked in VALUE_SLOTS and fillers and not unit.row:
        fillers = _not_owned_by_other(fillers, body, question)
    if asked == "amount" and fillers and not _THRESHOLD_ASKED_RE.search(question["norm"]):
        # 「满N元」 is the condition of a threshold, not what is charged
        fillers = tuple(f for f in fillers if not _THRESHOLD_BEFORE_RE.search(body[max(0, f.start - 3):f.start]))
    if asked == "duration" and fillers and not _SPAN_BAR_ASKED_RE.search(question["norm"]):
        # 「驾龄须满3年」 is a bar to reach, not how long something lasts or takes
        fillers = tuple(f for f in fillers if not _is_bar_span(body, f))
    if asked == "duration" and fillers and not _LEAD_ASKED_RE.search(question["norm"]):
        # 「开场前4小时」 says how early something must be done, not how long something takes
        fillers = tuple(f for f in fillers if not _LEAD_BEFORE_RE.search(body[max(0, f.start - 3):f.start]))
    if asked in VALUE_SLOTS and fillers and unit.row:
        fillers = _cell_fillers(fillers, unit, subject, str(question.get("measure", "")))
    if asked == "duration" and fillers:
        fillers = _headed_durations(fillers, unit, question, subject)
    if asked == "duration" and fillers:
        fillers = _spans_from_asked_act(fillers, body, question)
    anchors = [a for a in question.get("anchors") or [] if (vocab is None or vocab.document_frequency(a)
               or _VALUE_ANCHOR_RE.fullmatch(a)) and not any(a in o for o in chosen)]  # 「要钱吗」: a price answers
    if asked in VALUE_SLOTS and fillers:
        fillers = shaped_fillers(fillers, unit, anchors, _asked_bound(question), question.get("measure", ""),
                                 face_values=any(_INSTRUMENT_RE.search(t) for t in [*anchors, *subject]),
                                 lapse=lapse)
    quals = qualifier_check(regimes if regimes is not None else _without_domain_values(question, vocab), unit, dims)
    excluded = (_scoped_to(unit, question.get("excluded") or []) or _other_alternative(question, unit)
                or _excepted_subject(question, unit, bind.found)
                or _sibling_label(unit, bind.found) or _other_conjunct(unit, bind.found, subject)
                or _narrower_heading(question, unit, vocab)
                or _opposite_terms(subject, unit) or _about_document(unit)
                or _item_of_another_list(question, unit, subject) or _sibling_regime(question, unit, vocab)
                or _other_quantity(question, unit) or _other_row_option(question, unit)
                or _other_amount(question, unit)
                or _sibling_instead(question, unit, bind.missing, vocab))
    if excluded:
        quals = replace(quals, conflicts={**quals.conflicts, "excluded": excluded})
    reason = ""
    if unit.superseded:
        reason = "superseded"
    elif asked in ("none", "yesno", "procedure", "reason") and anchors and not _anchored(unit, anchors):
        reason = "anchor absent"  # 「怎么兑换」: a unit never naming the act does not say how (or why) it is done
    elif asked in ("none", "procedure") and _kind_unstated(question["subject_terms"], asking, bind):
        reason = "kind not stated"  # 「须具备哪些条件」: a unit stating no condition does not say which
    elif options and not chosen:
        reason = "choice absent"  # 「A还是B」 between two of a kind: a unit naming neither does not choose
    elif asked == "yesno" and question.get("bound") \
            and not _states_limit(unit, money=bool(_MONEY_WORD_RE.search(question["norm"])),
                                  side=str(question.get("bound") or "")):
        reason = "no limit stated"  # 「…设不设上限」 is answered only by a unit that speaks of a limit
    elif not fillers:
        reason = f"no {asked} filler"
    elif not bind.bound or _only_qualifiers_bound(question, subject, bind, vocab) \
            or (asked == "yesno" and _condition_missing(question, subject, bind, vocab)):
        reason = "subject not bound"
    elif not quals.ok:
        reason = "qualifier conflict" if quals.conflicts else "qualifier absent"
    return UnitVerdict(unit, not reason, fillers, bind, quals, reason)


def _kind_unstated(terms: Sequence[str], asking: str, bind: Binding) -> bool:
    """Return True when the clause that asks names the kind of answer wanted and the unit states none.

    「须具备哪些条件」「设了哪些限制」 ask for a condition or a limit: a unit on the same subject that
    states neither (「…暂不受理」) does not answer, however much of the subject it carries.
    """
    return any(t in asking and t not in bind.found for t in terms
               if _CONDITION_ASKED_RE.fullmatch(t) or _LIMIT_ASKED_RE.fullmatch(t))


def _only_qualifiers_bound(question: Question, subject: Sequence[str], bind: Binding,
                           vocab: Vocabulary | None) -> bool:
    """Return True when the unit carries none of the question's own subject terms, only its qualifiers.

    「普通会员金卡等级储物柜…」: a unit on the same tier and level but not on 储物柜 is about something
    else of that tier, however much of the share the qualifiers make up. Only own terms the
    knowledge base writes count (a customer's word it never uses cannot be asked of any unit),
    and no vague one (「直接」).
    """
    own = [t for t in question["subject_terms"] if t in subject and not _vague(t)]
    if any(t in bind.found for t in own):
        return False
    return any(vocab is None or any(vocab.document_frequency(a) for a in t.split(ALTERNATIVES) if a) for t in own)


# 「降级以后…」「退卡之后…」: the event the question's rule hangs on; a rule under another event is another's.
_EVENT_AFTER = r"了?(?:以后|之后|后)(?![台门面续来期])"
# Reaching or passing a limit (「超出以后」「用完后」) is a quantity, written as 「超…部分」「套餐外」: no event.
_LIMIT_REACHED_RE = re.compile(r"超|达到|用完|用光")


def _condition_missing(question: Question, subject: Sequence[str], bind: Binding, vocab: Vocabulary | None) -> bool:
    """Return True when the unit misses the event a yes-no question sets as its condition (「X以后…吗」).

    Only an event the knowledge base writes counts (a customer's word it never uses cannot be asked of any unit).
    In a question on a time (「X后多久…」) X is where the span starts, which a rule often leaves implicit or
    words as its own noun (an order for the act of ordering), so the caller asks this of yes-no questions only.
    """
    norm = question["norm"]
    events = [t for t in subject if ALTERNATIVES not in t and len(t) >= 2 and not _LIMIT_REACHED_RE.match(t)
              and re.search(re.escape(t) + _EVENT_AFTER, norm)
              and (vocab is None or vocab.document_frequency(t))]
    return bool(events) and not any(t in bind.found for t in events)


_CLAUSE_STOPS = r"，,。；;！!？?\s"
_CLAUSE_STOP_RE = re.compile(rf"[{_CLAUSE_STOPS}]")
_CHOICE_RE = re.compile(rf"还是([^{_CLAUSE_STOPS}]{{2,6}}?)[呢啊呀吧吗]?\s*(?:[{_CLAUSE_STOPS}]|$)")


# 「…是A还是B」: the copula opens the first option, whatever its length against the second.
_COPULA_OPTION_RE = re.compile(rf"(?<!还)是([^{_CLAUSE_STOPS}是]{{2,8}})$")


def _choice_options(norm: str) -> tuple[str, ...]:
    """Return the two options of a choice between things of one kind (「A还是B」, A and B of equal length, one head).

    「借1号柜还是2号柜」「选年卡还是季卡」: the option after 还是 ends the clause, and the
    characters of the same length before 还是 end with the same head; 「还是打不开」 (still) is no choice.
    After a copula (「是A还是B」) the first option is what follows 是, whatever its length.
    """
    for m in _CHOICE_RE.finditer(norm):
        right = m.group(1)
        left = norm[max(0, m.start() - len(right)):m.start()]
        copula = _COPULA_OPTION_RE.search(norm[:m.start()])
        if copula and copula.group(1) != right:  # 「是按月计费还是按次计费」: the option starts after 是
            left = copula.group(1)
        if (len(left) == len(right) or copula) and left != right and left[-1] == right[-1] \
                and not _CLAUSE_STOP_RE.search(left):
            same = len(os.path.commonprefix([left[::-1], right[::-1]]))
            if same >= 2 and len(left) - same >= 2:  # 「从付款开始算还是激活开始算」: the options are what differs
                return (left[:-same], right[:-same])
            return (left, right)
    return ()


# 「<词>几周后会…」「<词>了几个小时就…」: a span followed by what then happens is the length of
# the word right before it (「<词>多久<动作>」 asks instead how long until the act after it).
_SPAN_HEAD_RE = re.compile(r"([\u4e00-\u9fff]{2,4}?)(?:了|的)?(?:(?:多少|几)(?:个)?(?:工作日|天|日|小时|分钟|周|星期|月|年)"
                           r"|多久|多长时间)(?:以上|以后|之后|后)?(?:会|就|将|便)")


def _span_heads(question: Question, subject: Sequence[str]) -> list[str]:
    """Return the question's terms (``subject``: :func:`question_subject`) that the asked span of time is the length of."""
    terms = [*(question.get("anchors") or []), *subject]
    heads: list[str] = []
    for m in _SPAN_HEAD_RE.finditer(question["norm"]):
        before = m.group(1)
        heads += [t for t in terms if len(t) >= 2 and before.endswith(t)]
    return list(dict.fromkeys(heads))


def _headed_durations(fillers: Sequence[Filler], unit: Unit, question: Question,
                      subject: Sequence[str]) -> tuple[Filler, ...]:
    """Keep the spans of time that are the length of what the question measures.

    「<词>几周后会…」 asks how long <词> lasts. In a unit that names <词>, a span in the clause
    naming it answers, and a span in a clause about another act (「<词>…后，<另一动作>需N天」)
    is that act's. A row (its labels say what each cell is), a unit not naming <词> (it goes
    on under its heading) and a question naming no such word keep every span.
    """
    heads = _span_heads(question, subject)
    if not heads:
        return tuple(fillers)
    norm = _norm(unit.text)
    if unit.row or not any(_term_present(h, norm) for h in heads):
        return tuple(fillers)  # a row has its labels; a unit not naming the word goes on under its heading
    return tuple(f for f in fillers if any(_term_present(h, _clause_of(norm, f)) for h in heads))


# 「…多久送到书柜」 asks how long until an act; a span after that act (「送到书柜并登记后3天内须取走」)
# counts from it to another act, so it is not the time asked for.
_SPAN_ASKED_RE = re.compile(r"多久|多长时间|多长|几个?(?:工作日|天)|多少个?(?:工作日|天)")
_SPAN_MODALS = ("才能", "才可以", "可以", "能够", "能", "会", "才", "就", "要", "可", "需要", "需")
MAX_EVENT_GAP = 8  # characters between the act and the 「后」 that makes it a span's start (its object, 「并登记」)


@lru_cache(maxsize=1024)
def _span_end_act(norm: str) -> str:
    """Return the act whose time a span question asks (「…多久能送到书柜」 → 送到), ``""`` when none.

    The act is the verb right after the interrogative (a modal may stand between): a verb of two
    characters at least, so that a lone 「到」 (「多久到账」) is never taken for it.
    """
    m = _SPAN_ASKED_RE.search(norm)
    if m is None:
        return ""
    rest = norm[m.end():]
    rest = rest[len(next((w for w in _SPAN_MODALS if rest.startswith(w)), "")):]
    words = _tagged(rest)[:1]
    return words[0][0] if words and words[0][1].startswith("v") and len(words[0][0]) >= 2 else ""


def _spans_from_asked_act(fillers: Sequence[Filler], norm: str, question: Question) -> tuple[Filler, ...]:
    """Drop the spans that start where the asked act is done.

    「…多久送到书柜」 asks for the time until 送到; in 「图书送到书柜并登记后3天内须取走」 the act is
    the start of the span (「<act>…后」 before it in its clause), which runs to another act. A span
    whose clause names the act after it too (「…后2天内送到」) is kept. ``norm`` is the unit's
    normalised text; the act is read once per question (the same question meets every unit).
    """
    act = _span_end_act(question["norm"])
    if not act:
        return tuple(fillers)
    started = re.compile(re.escape(act) + rf"[^,;，；。]{{0,{MAX_EVENT_GAP}}}?(?:以后|之后|后)")
    out = []
    for f in fillers:
        before = norm[max([m.end() for m in _CLAUSE_RE.finditer(norm, 0, f.start)], default=0):f.start]
        end = _CLAUSE_RE.search(norm, f.end)
        if started.search(before) and act not in norm[f.end:end.start() if end else len(norm)]:
            continue
        out.append(f)
    return tuple(out)


def _reach_fillers(unit: Unit) -> tuple[Filler, ...]:
    """Return the unit's steps and conditions (a question of how a state is reached asks for them)."""
    norm = _norm(unit.text)
    found = [Filler("procedure", m.group(0), m.start(), m.end())
             for pattern in (_PROCEDURE_RE, _CONDITION_RE) for m in pattern.finditer(norm)]
    return tuple(sorted(found, key=lambda f: f.start))


# A quantity in a unit of measure, and each unit's family and scale (「1TB」 is 1,000,000 MB).
_QUANTITY_SCALE = {
    "tb": ("data", 1e6), "t": ("data", 1e6), "gb": ("data", 1e3), "g": ("data", 1e3), "mb": ("data", 1.0),
    "kb": ("data", 1e-3), "k": ("data", 1e-3),
    "gbps": ("rate", 1e3), "mbps": ("rate", 1.0), "m": ("rate", 1.0), "兆": ("rate", 1.0), "kbps": ("rate", 1e-3),
    "公里": ("length", 1e3), "千米": ("length", 1e3), "米": ("length", 1.0), "厘米": ("length", 1e-2),
    "毫米": ("length", 1e-3), "吨": ("weight", 1e3), "公斤": ("weight", 1.0), "千克": ("weight", 1.0),
    "斤": ("weight", 0.5), "克": ("weight", 1e-3), "升": ("volume", 1.0), "毫升": ("volume", 1e-3),
    "匹": ("power", 1.0), "wh": ("energy", 1.0), "kwh": ("energy", 1e3),
}
# Longest unit first, so that 「100mbps」 is a rate and not 「100mb」; a bare letter only before a non-letter.
_QUANTITY_RE = re.compile(r"(\d+(?:\.\d+)?)\s*("
                          + "|".join(sorted((u for u in _QUANTITY_SCALE if not re.fullmatch("[a-z]", u)), key=len, reverse=True))
                          + r"|[tgmk](?![a-z]))")
_RANGE_NEAR_RE = re.compile(r"最高|最低|最多|最少|至少|不超过|不低于|以上|以下|以内|及以上|及以下|起|[-–~～至到]|满|未满|超过|低于|高于")


def _quantities(norm: str) -> list[tuple[str, float, int, int]]:
    out: list[tuple[str, float, int, int]] = []
    for m in _QUANTITY_RE.finditer(norm):
        if m.group(2) == "g" and re.fullmatch(r"[2-6]", m.group(1)) and not norm[:m.start()][-1:].isdigit():
            continue  # 「4G」「5G」 name a network generation, not a size
        family, scale = _QUANTITY_SCALE[m.group(2)]
        out.append((family, float(m.group(1)) * scale, m.start(), m.end()))
    return out


# Spans of time in days, for a condition stated as a span before an event (「起飞前7天以上」).
_SPAN_SCALE = {"分钟": 1 / 1440, "小时": 1 / 24, "天": 1.0, "日": 1.0, "工作日": 1.0, "周": 7.0, "星期": 7.0,
               "月": 30.0, "年": 365.0}
_SPAN_UNITS = "分钟|小时|工作日|天|日|周|星期|月|年"
_SPAN_RE = re.compile(rf"(\d+(?:\.\d+)?)\s*({_SPAN_UNITS})")
_ABOVE_BEFORE_RE = re.compile(r"(?:≥|>|＞|(?<!不)(?:大于|超过|高于|满)|不少于|不低于|至少)\s*$")
_BELOW_BEFORE_RE = re.compile(r"(?:≤|<|＜|(?<!不)(?:小于|低于|少于)|不超过|不到|未满|不足|至多|最多)\s*$")
_INCLUSIVE = r"(?:\(含\)\s*)?"  # 「50元(含)以下」: the bound itself is included
_ABOVE_AFTER_RE = re.compile(rf"^\s*{_INCLUSIVE}(?:及?以上|起)")
_WITHIN_WORDS = "及?以下|以内|之内"  # 「30分钟以内」 bounds a span; a bare 「5日内到账」 is a deadline
_BELOW_AFTER_RE = re.compile(rf"^\s*{_INCLUSIVE}(?:{_WITHIN_WORDS}|内)")
_WITHIN_AFTER_RE = re.compile(rf"\s*(?:{_WITHIN_WORDS})")
_RANGE_DASH_RE = re.compile(r"^\s*[-–~～至到]\s*$")
# A span counted from an event: back (「提前3天」「离开课只剩3天」) or past it (「晚了5小时」「逾期2天」).
_FROM_EVENT_BEFORE_RE = re.compile(r"(?:提前|前|还有|只剩|剩|离[^，,。]{0,6}?|(?:晚|迟|迟到|超时|逾期|延误|延迟)了?)\s*$")
EPSILON = 1e-6


def _intervals(norm: str, found: list[tuple[str, float, int, int]]) -> list[tuple[str, float, float, int, int]]:
    """Return (family, low, high, start, end) of each quantity, its bound words and ranges applied.

    「100Wh–160Wh」 is [100, 160]; 「7天以上」「≥7天」 [7, ∞); 「不到100Wh」 (−∞, 100); a bare value a point.
    """
    out: list[tuple[str, float, float, int, int]] = []
    n = 0
    while n < len(found):
        family, value, a, b = found[n]
        nxt = found[n + 1] if n + 1 < len(found) else None
        if nxt and nxt[0] == family and _RANGE_DASH_RE.match(norm[b:nxt[2]]):
            out.append((family, value, nxt[1], a, nxt[3]))
            n += 2
            continue
        dash = re.search(r"(\d+(?:\.\d+)?)\s*[-–~～]\s*$", norm[:a])  # 「48-72小时」 shares the unit
        before, after = norm[max(0, a - 4):a], norm[b:b + 7]
        if dash:
            number = re.match(r"\d+(?:\.\d+)?", norm[a:b])
            stated = float(number.group(0)) if number else 0.0
            low = float(dash.group(1)) * (value / stated) if stated else value
            out.append((family, low, value, a - len(dash.group(0)), b))
        elif _ABOVE_BEFORE_RE.search(before) or _ABOVE_AFTER_RE.match(after):
            strict = bool(re.search(r"(?:>|＞|(?<!不)(?:大于|超过|高于))\s*$", before))
            out.append((family, value + (EPSILON if strict else 0.0), float("inf"), a, b))
        elif _BELOW_BEFORE_RE.search(before) or _BELOW_AFTER_RE.match(after):
            strict = bool(re.search(r"(?:<|＜|(?<!不)(?:小于|低于|少于)|不到|未满|不足)\s*$", before))
            out.append((family, float("-inf"), value - (EPSILON if strict else 0.0), a, b))
        else:
            out.append((family, value, value, a, b))
        n += 1
    return out


def _spans(norm: str, *, advance_only: bool) -> list[tuple[str, float, int, int]]:
    """Return the spans of time in ``norm`` (in days).

    ``advance_only``: only those counted from an event (back or past it) or bounded (「7天以上」「30分钟以内」).
    """
    out = []
    for m in _SPAN_RE.finditer(norm):
        before = norm[max(0, m.start() - 8):m.start()]
        ranged = re.search(r"[\d时天日周月年钟]\s*[-–~～至]\s*$", before) or re.match(r"\s*[-–~～至]\s*\d", norm[m.end():])
        if advance_only and not (ranged or _FROM_EVENT_BEFORE_RE.search(before) or _ABOVE_BEFORE_RE.search(before)
                                 or _BELOW_BEFORE_RE.search(before) or _ABOVE_AFTER_RE.match(norm[m.end():])
                                 or _WITHIN_AFTER_RE.match(norm[m.end():])):
            continue
        out.append(("span", float(m.group(1)) * _SPAN_SCALE[m.group(2)], m.start(), m.end()))
    return out


# A sum of money: 「500元」「10万元」, and 「10万」 before no other unit (not 「10万公里」).
_MONEY_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(万元|万(?![\u4e00-\u9fff])|元|块)")
_MONEY_SCALE = {"万元": 1e4, "万": 1e4, "元": 1.0, "块": 1.0}


def _sums(norm: str) -> list[tuple[str, float, int, int]]:
    return [("money", float(m.group(1)) * _MONEY_SCALE[m.group(2)], m.start(), m.end()) for m in _MONEY_RE.finditer(norm)]


_PRICED_FAMILIES = frozenset({"length", "weight", "volume", "data", "energy"})


def _measure_absent(question: Question, unit: Unit) -> bool:
    """Return True when the question prices a stated measure (「25公斤」) and the unit never speaks of that measure.

    The unit's text and headings must state a quantity of the same family or name one of its units
    (「每公斤」「按公里计」); a flat price elsewhere is the price of something else.
    """
    asked = {family for family, *_ in _quantities(_norm(question["norm"]))} & _PRICED_FAMILIES
    if not asked:
        return False
    text = _norm(" ".join([unit.text, *unit.context]))
    stated = {family for family, *_ in _quantities(text)}
    stated |= {family for word, (family, _) in _QUANTITY_SCALE.items() if _HAN_RE.search(word) and word in text}
    return not asked & stated


def _found(norm: str) -> list[tuple[str, float, int, int]]:
    """Return the quantities of ``norm``: measures, sums of money, and spans of time counted from an event or bounded."""
    return sorted(_quantities(norm) + _sums(norm) + _spans(norm, advance_only=True), key=lambda q: q[2])


# An option the question states (「订2小时」) selects a table's row by its first column when that
# column lists options of that kind (「50分钟」「包场」): a row keyed by another option prices something else.
_STATED_SPAN_RE = re.compile(rf"(\d+(?:\.\d+)?)\s*个?\s*({_SPAN_UNITS})")
_POINT_SPAN_CELL_RE = re.compile(rf"^(\d+(?:\.\d+)?)\s*个?\s*({_SPAN_UNITS})$")
SAME_SPAN_TOLERANCE = 0.05  # 「一年」 and 「十二个月」 are one option (365 and 360 days)


def _table_of(unit: Unit) -> tuple[list[str], list[list[str]]] | None:
    """Return (header, rows) of the table in the unit's chunk that holds the unit's row, else None."""
    header: list[str] = []
    rows: list[list[str]] = []
    lines = unit.chunk_text.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith("|"):
            header, rows = [], []
            continue
        if _TABLE_SEP_RE.match(stripped):
            continue
        if i + 1 < len(lines) and _TABLE_SEP_RE.match(lines[i + 1].strip()):
            header, rows = _cells(stripped), []
            continue
        cells = _cells(stripped)
        if header and len(cells) == len(header):
            rows.append(cells)
            if _render_row(header, cells) == unit.text:
                rest = [_cells(t) for t in lines[i + 1:]]
                return header, rows + _rows_while(rest, len(header))
    return None


def _rows_while(lines: list[list[str]], width: int) -> list[list[str]]:
    """Return the leading rows of ``width`` cells (the rest of the table after a row)."""
    out: list[list[str]] = []
    for cells in lines:
        if len(cells) != width or not any(cells):
            break
        out.append(cells)
    return out


def _point_span(cell: str) -> float | None:
    """Return a cell that is one span of time and nothing else (「50分钟」「2个小时」), in days."""
    match = _POINT_SPAN_CELL_RE.match(_norm(cell).replace(" ", ""))
    if not match:
        return None
    return float(match.group(1)) * _SPAN_SCALE[match.group(2)]


def _other_row_option(question: Question, unit: Unit) -> list[str]:
    """Return the option a table row is keyed by when the question states another (``[]`` if none).

    「订2小时多少钱」 against rows whose first cells are 「50分钟」 and 「包场」: that column lists
    spans of time as options (each a bare span or a word, no bound), and neither row's is the
    stated one, so neither prices it. A bounded first column (「满N年」「超过N小时」) states
    conditions, which the quantity checks compare; a span the question asks for states nothing.
    """
    if not unit.row or question["slot"] == "duration":
        return []
    stated = [float(m.group(1)) * _SPAN_SCALE[m.group(2)] for m in _STATED_SPAN_RE.finditer(_norm(question["norm"]))]
    table = _table_of(unit) if stated else None
    if table is None:
        return []
    header, rows = table
    keys = [r[0] for r in rows]
    points = [_point_span(k) for k in keys]
    if len(set(keys)) < 2 or not any(p is not None for p in points) \
            or any(p is None and _SPAN_RE.search(_norm(k)) for k, p in zip(keys, points, strict=True)):
        return []  # not a column of options, or one with a bound or range in it
    mine = next(r for r in rows if _render_row(header, r) == unit.text)
    point = _point_span(mine[0])
    if point is not None and any(abs(point - s) <= SAME_SPAN_TOLERANCE * max(point, s) for s in stated):
        return []
    return [mine[0]] if mine[0] else []


# A quantity that modifies a noun (「500米左右的泳道」「60升的柜子」) describes what is asked about:
# a condition, even when a bare 「多少」 could ask for a measure of its kind.
_MODIFIER_AFTER_RE = re.compile(r"\s*(?:左右|上下|以上|以下|以内|多)?\s*的")


# What a rule says of the part beyond a bound (「10公里内20元，超出部分3元/公里」): it covers every quantity.
_EXCESS_AFTER_RE = re.compile(r"[^。\n]{0,30}?(?:(?:超出|超过)的?部分|超出后)")


def _other_quantity(question: Question, unit: Unit) -> list[str]:
    """Return the unit's quantities that contradict one the question states (``[]`` if none).

    「有没有100升的，多少钱」 names a size: a unit stating only other sizes of the same kind
    (「储物柜（60升）：10元/月」) is about another product, whatever it costs. Bounds and ranges
    count (「不到100Wh」 is not answered by 「100Wh–160Wh」, but by 「不超过100Wh」); so does a
    span counted back from an event (「离开课只剩3天」 is not answered by 「开课前7天以上」), and
    only such a span, since a unit's other spans of time (「3个工作日内到账」) are about something else.
    A sum of money counts likewise against a table row's tier of sums (:func:`_tier_sum`).
    The family the question asks for (a duration, a counted measure) is the answer, not a condition.
    """
    qnorm, norm = _norm(question["norm"]), _norm(unit.text)
    skip = {"span"} if question["slot"] == "duration" else set()
    if question["slot"] in ("amount", "count"):
        skip.add("money")  # the sum asked for, or a bare 「多少」
    if question["slot"] == "count" and question.get("measure") in _QUANTITY_SCALE:
        skip.add(_QUANTITY_SCALE[str(question.get("measure"))][0])
    if question["slot"] == "count" and not question.get("measure"):
        skip |= {family for family, _ in _QUANTITY_SCALE.values()}  # a bare 「多少」 may ask for any measure
    asked = [q for q in _intervals(qnorm, _found(qnorm))
             if q[0] not in skip or _MODIFIER_AFTER_RE.match(qnorm, q[4])]
    if not asked:
        return []
    stated = [(f, lo, float("inf") if _EXCESS_AFTER_RE.match(norm, b) else hi, a, b)
              for f, lo, hi, a, b in _intervals(norm, _found(norm))]  # 「N以内…，超出部分…」 prices beyond N too
    out: list[str] = []
    for family, low, high, _, _ in asked:
        same = [(lo, hi, a, b) for f, lo, hi, a, b in stated if f == family and (f != "money" or _tier_sum(unit, norm, lo, hi, b))]
        if not same or any(lo <= high + 1e-9 and low <= hi + 1e-9 for lo, hi, _, _ in same):
            continue
        out.extend(norm[a:b] for _, _, a, b in same)
    return out


# 「押金在50元(含)以下的，当场退」: a bracket of sums that opens a condition clause (…的，).
_CONDITION_AFTER_RE = re.compile(r"[^，,。；;]{0,8}?的\s*[，,]")


def _tier_sum(unit: Unit, norm: str, low: float, high: float, end: int) -> bool:
    """Return True when a sum in ``unit`` is a tier's bracket: a table row's 「10万–50万元」 or 「50万元以上」.

    A price (「运费10元」) says nothing about what the customer spent, and a threshold in prose
    (「满199元包邮，不满收取20元」) states both sides of it, so neither contradicts a stated sum.
    A bracket that opens a condition clause (「押金在50元以下的，…」) is a tier in prose too.
    """
    if low == high or not (unit.row or _CONDITION_AFTER_RE.match(norm, end)):
        return False
    return (low != float("-inf") and high != float("inf")) or bool(
        _ABOVE_AFTER_RE.match(norm[end:]) or _BELOW_AFTER_RE.match(norm[end:]))


_AMOUNT_GLUE = frozenset("是为的了要在有共约计")  # 「费用为500元」: a copula before a sum is no act
_STATED_AMOUNT_RE = re.compile(r"([\u4e00-\u9fff]{1,2})\s*(\d+(?:\.\d+)?)\s*(?:元|块)")


def _other_amount(question: Question, unit: Unit) -> list[str]:
    """Return the unit's amounts that contradict a condition the question states (``[]`` if none).

    「要是存500元，每月返多少」 states what is paid: a unit stating the same act with another sum
    (「存300元，每月返20元」) is the rule for that sum, not the question's. The act is the word right
    before the sum in both; a sum beside a bound or in a range (「满300元」「300元以上」) is a threshold.
    """
    out: list[str] = []
    norm = _norm(unit.text)
    for match in _STATED_AMOUNT_RE.finditer(_norm(question["norm"])):
        value = float(match.group(2))
        if _RANGE_NEAR_RE.search(match.group(1)):
            continue
        stated: list[re.Match[str]] = []
        for act in dict.fromkeys((match.group(1), match.group(1)[-1])):  # 「要是存」: the act is 「存」
            if act[-1] not in _AMOUNT_GLUE and not stated:
                stated = list(re.finditer(rf"{re.escape(act)}\s*(\d+(?:\.\d+)?)\s*(?:元|块)", norm))
        if not stated or any(abs(float(m.group(1)) - value) < 1e-9 for m in stated):
            continue
        if any(_RANGE_NEAR_RE.search(norm[m.end():m.end() + 3]) for m in stated):
            continue
        out.extend(m.group(0) for m in stated)
    return out


def subject_weights(terms: Sequence[str], vocab: Vocabulary | None) -> dict[str, float]:
    """Weight subject terms by their rarity in the knowledge base (IDF over its chunks).

    A term the knowledge base never uses as a word (colloquial wording, a typo, characters that
    only meet across two of its words), or a vague everyday word (「东西」), weighs ``UNKNOWN_WEIGHT``: it cannot be bound anywhere,
    so it must not decide. Without a vocabulary every term weighs 1.
    """
    import math

    if vocab is None or not vocab.texts:
        return dict.fromkeys(terms, 1.0)
    n = len(vocab.texts)
    out: dict[str, float] = {}
    for key in terms:
        weights = []
        for term in key.split(ALTERNATIVES):  # an alternation weighs as its weightiest alternative
            df = vocab.document_frequency(term) if vocab.uses_word(term) and not _vague(term) else 0
            kb_idf = max(MIN_WEIGHT, math.log((n + 1) / (df + 0.5)))
            weights.append(kb_idf * _general_specificity(term) if df else UNKNOWN_WEIGHT)
        out[key] = max(weights)
    return out


EVERYDAY_IDF = 5.0  # jieba IDF below which a word is vague in any text (「东西」「问题」「时间」「影响」)


def _vague(term: str) -> bool:
    """Return True for a word so common in Chinese that it names nothing in particular."""
    return bool(_HAN_RE.search(term)) and _general_idf(term) < EVERYDAY_IDF


def _general_specificity(term: str) -> float:
    """Return how specific ``term`` is in general Chinese (jieba's IDF table, capped at 1).

    A word rare in one knowledge base but everyday in the language (「东西」) must not decide
    what the question is about; a word the table does not list counts as specific.
    """
    from jieba import analyse

    table = analyse.default_tfidf
    idf = table.idf_freq.get(term)
    return 1.0 if idf is None else min(1.0, float(idf) / float(table.median_idf))


def specific_term(weights: Mapping[str, float]) -> str | None:
    """Return the noun the knowledge base uses most rarely among the subject terms.

    That term must bind (be carried by the unit or its headings). Verbs and other words are
    weighed in the share but never required on their own.
    """
    known = {t: w for t, w in weights.items() if w > UNKNOWN_WEIGHT and _is_nominal(t)}
    return max(known, key=lambda t: known[t]) if known else None


@lru_cache(maxsize=8192)
def _is_nominal(term: str) -> bool:
    """Return True when jieba tags ``term`` (as one word) as a noun, name or foreign word."""
    import jieba.posseg as pseg

    pairs = list(pseg.cut(term, HMM=False))
    if len(pairs) != 1:
        return len(term) >= 2  # an unknown compound the customer typed: treat as a name
    flag = pairs[0].flag
    return flag[:1] in ("n", "x", "j") or flag in ("eng", "vn", "an", "nz")


@dataclass(frozen=True)
class AnswerGate:
    """The answerability decision over a turn's evidence."""

    verdicts: tuple[UnitVerdict, ...]
    parts_covered: tuple[bool, ...] = ()
    part_units: tuple[tuple[str, ...], ...] = ()  # per part of a multi-part question: its answering units' texts

    @property
    def answering(self) -> list[UnitVerdict]:
        """Return the verdicts of the units that answer."""
        return [v for v in self.verdicts if v.answers]

    @property
    def answerable(self) -> bool:
        """Return True when at least one unit answers."""
        return bool(self.answering)

    @property
    def partly_covered(self) -> bool:
        """Return True for a multi-part question some of whose parts no unit answers."""
        return bool(self.parts_covered) and not all(self.parts_covered) and any(self.parts_covered)

    def evidence_ids(self) -> list[str]:
        """Return the ids of the evidence items holding an answering unit (evidence order)."""
        return list(dict.fromkeys(v.unit.evidence_id for v in self.answering))

    def unit_ids(self) -> set[str]:
        """Return the ids of the answering units."""
        return {v.unit.id for v in self.answering}

    def accepts(self, text: str) -> bool:
        """Return True when ``text`` is (or contains) an answering unit's text."""
        return _holds_unit(text, [v.unit.text for v in self.answering])

    def part_accepts(self) -> list[Callable[[str], bool]]:
        """Return, per part of a multi-part question, :meth:`accepts` for that part alone."""
        return [partial(_holds_unit, units=texts) for texts in self.part_units]


def _holds_unit(text: str, units: Sequence[str]) -> bool:
    """Return True when ``text`` is (or contains) one of the unit texts ``units``."""
    plain = _CITE_RE.sub("", text).strip(" 。；;，,")
    return any(u.strip(" 。；;，,") in plain or plain in u for u in units)


def unknown_terms(question: Question, vocab: Vocabulary | None) -> list[str]:
    """Return the question's specific names that the knowledge base never uses.

    A noun the knowledge base has no text for (not even most of its characters' bigrams), that
    is not everyday Chinese (jieba's IDF at least ``MIN_ANCHOR_IDF``, unlike 「东西」), names a thing the
    knowledge base does not cover: no unit can answer about it. A one-character noun counts only
    when no text of the knowledge base holds that character at all (「猫」 in a library's rules)
    and it is not everyday (``EVERYDAY_IDF``; 「人」「钱」 are); other single characters are often
    the segmenter's leftovers. Latin words (product codes, English) are left to binding, and so
    is a word of a clause that only sets the scene (「我家小狗生病了，…」): the clause that asks
    decides. A word asking for the kind of value (「还得交钱吗」: a price) names no thing; the
    units' values answer it.
    """
    if vocab is None or not vocab.texts:
        return []
    out = []
    asking = asking_clause(question["norm"], question["slot"])
    for term in question["subject_terms"]:
        if term not in asking and term in question["norm"]:
            continue
        if len(term) == 1 and _HAN_RE.match(term) and is_plain_noun(term) and not vocab.document_frequency(term) \
                and _general_idf(term) >= EVERYDAY_IDF:
            out.append(term)  # 「猫」: a thing named by one character that no text of the knowledge base holds
            continue
        if len(term) < 2 or not _HAN_RE.search(term) or not is_plain_noun(term) or _asks_charge(term, question["norm"]):
            continue  # 「还得交钱吗」 asks for a price, which the knowledge base states in its own words
        if vocab.document_frequency(term) or _general_idf(term) < MIN_ANCHOR_IDF:
            continue
        if len(term) >= 3 and any(_term_present(term, t) for t in vocab.texts):
            continue
        out.append(term)
    return out


# A charge word asked about ends its clause or meets the question's particle (「还得交钱吗」「收不收钱」);
# one followed by another verb is the means of that act (「交钱升级」: paying to get something).
_ASKED_AFTER_RE = re.compile(r"\s*(?:吗|么|嘛|呢|不|没有?|[？?。，,；;！!]|$)")


def _asks_charge(term: str, norm: str) -> bool:
    """Return True when ``term`` is a charge word (:data:`_VALUE_ANCHOR_RE`) that the question asks about."""
    if not _VALUE_ANCHOR_RE.fullmatch(term):
        return False
    at = norm.find(term)
    return at >= 0 and bool(_ASKED_AFTER_RE.match(norm, at + len(term)))


def question_subject(question: Question) -> list[str]:
    """Return the terms a unit must bind: the subject terms plus the question's own qualifiers.

    A region, payment method or regime the question states is part of what it asks;
    qualifiers carried from earlier turns are not.
    """
    own = [v for vals in question["qualifiers"].values() for v in vals
           if v in question["norm"] and v not in question["subject_terms"]]
    held = [v for v in question["qualifiers"].get("region", []) if v not in question["norm"]]
    if held:  # 「澳门」 is bound where the policy names its country or group instead (「港澳线」)
        own = [ALTERNATIVES.join([v, *held]) if v in question["qualifiers"]["region"] else v for v in own]
    terms = list(dict.fromkeys([*question["subject_terms"], *own]))
    # A compound of other terms (「白条分期」 beside 「白条」 and 「分期」) would count them twice.
    return [t for t in terms if not _covered_by_parts(t, [o for o in terms if o != t])]


def _covered_by_parts(term: str, others: Sequence[str]) -> bool:
    """Return True when ``term`` is spelt out entirely by other terms (at least two of them)."""
    parts = [o for o in others if o in term]
    if len(parts) < 2:
        return False
    covered = [False] * len(term)
    for part in parts:
        start = term.find(part)
        for i in range(start, start + len(part)):
            covered[i] = True
    return all(covered)


# A label opening a list item, set off by a colon (「**补办**：」「补办方式：」): what the item is about.
_LEAD_LABEL_RE = re.compile(r"^\s*(?:\*\*([^*：:]{1,12})\*\*|([^*：:，,。]{1,12}))\s*(?<!\d)[：:]")  # not 「9:00」


def bound_fillers(fillers: Sequence[Filler], unit: Unit, found: Sequence[str],
                  scopes: Sequence[str] = ()) -> tuple[Filler, ...]:
    """Return the fillers that share a clause with a found subject term.

    A short leading clause set off by a comma (「签收后24小时内，」) belongs to the clause after it.

    A table row is one binding unit (its header names the subject); so is a unit whose last
    heading carries a found term (an FAQ question heading names what its answer is about), and
    an item whose opening label does (「**借书证补办**：…」), unless the label only names one of
    the question's ``scopes`` (its qualifier values: 「儿童：…」 scopes the item, it does not say
    what each of its values is about).
    """
    if unit.row or (unit.context and any(_term_present(t, _norm(unit.context[-1])) for t in found)):
        return tuple(fillers)
    norm = _norm(unit.text)
    label = _LEAD_LABEL_RE.match(norm)
    if label and any(_term_present(t, label.group(1) or label.group(2)) for t in found if t not in scopes):
        return tuple(fillers)  # 「**借书证补办**：…」: a labelled item is about its label, as under a heading
    return tuple(f for f in fillers if any(_term_present(t, _clause_of(norm, f)) for t in found)
                 or any(_term_present(t, _topic_before(norm, f)) for t in found))


# 「A的B为V」: the value is B's. Words naming only the kind of value (「价格」「期限」) own nothing.
_OWNED_VALUE_RE = re.compile(r"的([\u4e00-\u9fff]{2,6})(?:为|是|[：:])\s*$")
_VALUE_KIND_WORDS = frozenset("价格 费用 收费 金额 价钱 费率 单价 标准 时长 期限 时间 时效 额度 上限 下限 数量 次数 比例 折扣"
                              .split())


def _not_owned_by_other(fillers: Sequence[Filler], body: str, question: Question) -> tuple[Filler, ...]:
    """Drop the values the unit states as another thing's (「X的<别的项目>为N元」).

    「…的尊享套餐为N元/天」 prices that package, not what the question names: a value right after
    「的B为」 belongs to B unless B shares a character with the question (「租金」 for 「租…」) or only
    names the kind of value.
    """
    norm = _norm(question["norm"])
    terms = [t for t in question["subject_terms"] if len(t) >= 2]
    keep = []
    for f in fillers:
        owned = _OWNED_VALUE_RE.search(body[max(0, f.start - 12):f.start])
        owner = owned.group(1) if owned else ""
        if owner and owner not in _VALUE_KIND_WORDS and not any(ch in norm for ch in owner) \
                and not any(t in owner or owner in t for t in terms) and not _vague(owner):
            continue
        keep.append(f)
    return tuple(keep)


# A sum after 「满」 (or below which something holds: 「低于」「少于」「不足」) is the condition of a threshold;
# only a question about the threshold asks for it.
_THRESHOLD_BEFORE_RE = re.compile(r"(?:(?:实付|消费|订单)?满|(?<!不)(?:低于|少于)|不足)\s*$")
# A span after 「满」 (「须满3年」) is a bar to reach, unless an event follows it (「满30天后退还」);
# only a question about a bar (「满多久才能…」「至少几年」) asks for it.
_BAR_SPAN_BEFORE_RE = re.compile(r"(?<!每)满\s*$")
_BAR_SPAN_AFTER_RE = re.compile(r"\s*(?:后|以后|之后|时|起|即|的)")
_SPAN_BAR_ASKED_RE = re.compile(r"满|至少|最少|最低|门槛|才(?:能|可以?|行|算|有)|以上|够不够|够了?吗")


# A span after an event's 「前」 (「开场前4小时」「提早5天」) is a lead time: how early, asked only with
# 「前」 or a deadline word. 「前3个月」 after 的 or a stop is the first months, no lead time.
_LEAD_BEFORE_RE = re.compile(r"(?:(?<=[\u4e00-\u9fff])(?<![的首最头和与])前|提[前早])\s*$")
_LEAD_ASKED_RE = re.compile(r"前|最晚|最迟|截止|提早|预约")


def _is_bar_span(norm: str, filler: Filler) -> bool:
    """Return True when the duration ``filler`` is a bar to reach (「满1年」), not a span of time."""
    return bool(_BAR_SPAN_BEFORE_RE.search(norm[max(0, filler.start - 3):filler.start])) \
        and not _BAR_SPAN_AFTER_RE.match(norm, filler.end)


_THRESHOLD_ASKED_RE = re.compile(r"满多少|满几|(?:低于|少于|不足|不到)多少|门槛|起步|多少钱?(?:以上|起|才)|最低|最少|至少|够多少")
_PAREN_RE = re.compile(r"（[^（）]*）|\([^()]*\)")


def _aside_scoped(fillers: Sequence[Filler], unit: Unit, question: Question) -> tuple[Filler, ...]:
    """Return the fillers inside the aside that alone names a qualifier the question has.

    「均为满M元（偏远省份满N元），不满另收K元」: the bracket states the exception for the
    remote provinces, and only its own value (N元) is about them; the K元 after it is the
    general rule's. When the unit names the asked region, tier or payment way nowhere but in
    such a bracket (and its headings do not name it), only the values inside that bracket are.
    A bracket with no value of its own (「团课（银卡、金卡）」) labels what it follows instead.
    """
    norm = _norm(unit.text)
    asides = [(m.start(), m.end()) for m in _PAREN_RE.finditer(norm)]
    if not asides:
        return tuple(fillers)
    heading = _norm(" ".join(unit.context))
    for kind in ("region", "tier", "payment"):
        for value in question["qualifiers"].get(kind, []):
            spots = [m.start() for m in re.finditer(re.escape(value.lower()), norm)]
            inside = [(a, b) for a, b in asides if any(a <= p < b for p in spots)]
            kept = tuple(f for f in fillers if any(a <= f.start < b for a, b in inside))
            if spots and kept and all(any(a <= p < b for a, b in inside) for p in spots) \
                    and not _term_present(value, heading):
                return kept
    return tuple(fillers)


_CONTINUES_RE = re.compile(r"^(?:每|最高|最低|最多|最少|至多|至少|不超过|不低于|不少于|上限|封顶|可以?|能够?|须|需要?|应当?|不得|不能|不可)")
_CONDITION_END_RE = re.compile(r"(?:后|前|时|的话|期间|之内|以内|内)\s*$")


def _topic_before(norm: str, filler: Filler) -> str:
    """Return the clause before the filler's, when the filler's clause continues it (else ``""``).

    A clause that opens with a bound, a modal or a rate and names no subject (「…每月消费上限，最低可
    设置为100元」, 「复印另计，每页0.2元」) says more about the subject of the clause before it,
    across a comma; a clause after a colon lists the values of what the clause before the colon
    introduces. A clause before it that sets a time or a condition (「…通过后，」) is not that
    subject.
    """
    cuts = [m for m in _CLAUSE_RE.finditer(norm) if m.end() <= filler.start]
    if not cuts or cuts[-1].group(0) not in ("，", ",", "：", ":"):
        return ""
    lead_in = cuts[-1].group(0) in ("：", ":")  # 「…自开课日起算：甲3天、乙10天」: the values of what it introduces
    if not lead_in and not _CONTINUES_RE.match(norm[cuts[-1].end():filler.start].strip()):
        return ""
    start = cuts[-2].end() if len(cuts) > 1 else 0
    before = norm[start:cuts[-1].start()]
    return "" if _CONDITION_END_RE.search(before) else before


def _sibling_clause(clause: str, anchors: Sequence[str]) -> bool:
    """Return True when ``clause`` names a sibling of an anchor and no anchor itself.

    Two-character words with the same head and another modifier (上班/下班, 入库/出库, 运费/
    手续费's 续费) name parallel things; a value stated for one does not answer the other.
    """
    if any(_term_present(a, clause) for a in anchors):
        return False
    edges = word_edges(clause, hmm=False)
    for anchor in anchors:
        if len(anchor) != 2 or not _HAN_RE.fullmatch(anchor[-1]):
            continue
        for i in range(1, len(clause)):
            word = clause[i - 1:i + 1]
            if _is_sibling(word, anchor) and _HAN_RE.match(word[0]) and i - 1 in edges and i + 1 in edges:
                return True
    return False


def _clause_of(norm: str, filler: Filler, *, join: bool = True) -> str:
    """Return the clause of ``norm`` holding ``filler``.

    With ``join``, a short leading clause set off by a comma is one predicate with the clause after
    it: a filler in the leading clause takes in the clause after it (「签收后24小时内，…到账」), and
    the filler's clause takes in a leading clause before it that names what it is about
    (「储物柜钥匙遗失，照价赔偿50元」), also when the filler's clause leads on itself (「要补办
    会员卡的，核对后6天制好，…」), unless that clause only sets a time or a condition
    (「开卡完成后，须在7天内领取」: the 7 days are not the card's). A price is the price of the
    case its condition names (「课时耗尽后，改收单节N元」), so an amount takes a condition in too.
    """
    bounds = [0] + [m.end() for m in _CLAUSE_RE.finditer(norm)] + [len(norm) + 1]
    spans = list(zip(bounds, bounds[1:], strict=False))
    for n, (start, end) in enumerate(spans):
        if start <= filler.start < end:
            clause = norm[start:end]
            if join and _leads(clause) and n + 1 < len(spans):  # 「签收后24小时内，…到账」: one predicate
                clause += norm[spans[n + 1][0]:spans[n + 1][1]]
            if join and n > 0 and _leads(lead := norm[spans[n - 1][0]:spans[n - 1][1]]) \
                    and (filler.kind == "amount" or not _CONDITION_END_RE.search(lead.rstrip(",，"))):
                clause = lead + clause  # 「储物柜钥匙遗失，照价赔偿50元」
            return clause
    return ""


LEADING_CLAUSE_CHARS = 14


def _leads(clause: str) -> bool:
    """Return True for a short clause set off by a comma before its predicate (a time or condition)."""
    return clause.endswith((",", "，")) and len(clause) <= LEADING_CLAUSE_CHARS


# An amount followed by the name of a coupon, card or red packet is that instrument's face value.
_INSTRUMENTS = "券|红包|礼品卡|购物卡|储值卡"
_INSTRUMENT_RE = re.compile(_INSTRUMENTS)
_FACE_VALUE_RE = re.compile(rf"[\u4e00-\u9fff]{{0,5}}?(?:{_INSTRUMENTS})")
# Bound words of a value: the lower and the upper ones (a time's too: 最早, 不晚于).
_LOWER_WORDS = "最低|最少|最小|最短|最早|至少|不低于|不少于|不早于"
_UPPER_WORDS = "最高|最多|最大|最长|最晚|最迟|不超过|不高于|不晚于|上限|封顶|至多"
_LOWER_BEFORE_RE = re.compile(rf"(?:{_LOWER_WORDS}|满|起步价?|起)\s*$")
_UPPER_BEFORE_RE = re.compile(rf"(?:{_UPPER_WORDS})\s*$")
_LOWER_AFTER_RE = re.compile(r"^\s*(?:起|以上|及以上)")
_UPPER_AFTER_RE = re.compile(r"^\s*(?:以内|以下|及以下|内|封顶|为限)")  # 「以500元为限」: capped at it
BOUND_WINDOW = 4  # characters around a value where its bound word stands
_LOWER_WORD_RE = re.compile(_LOWER_WORDS)  # anywhere in a clause (a time's limit heads it)
_UPPER_WORD_RE = re.compile(_UPPER_WORDS)


RATE_WINDOW = 12  # characters around a value where its span (「每年」「/年」) stands


def _rated(fillers: Sequence[Filler], unit: Unit, per: str) -> tuple[Filler, ...]:
    """Return the fillers stated per ``per`` (「/年」「每年」「年费」「单日」 next to the value).

    A question asking what something costs or allows per year or day is not answered by a
    value stated for another span (a per-purchase rate for a per-year limit). The span may
    also stand in the unit's own heading (「每日限额」 over its values).
    """
    alts = _PER_UNITS.get(per, per)
    pattern = re.compile(rf"(?:每|/|单|(?<![\d.])1|全|当|按)\s*个?\s*(?:自然|日历)?(?:{alts})"  # 「每个日历月」
                         rf"|(?:{alts})(?:费|度|均|限额|累计|上限|付|租|包|卡)")  # 「年付：1200元」「月租」
    if unit.context and pattern.search(_norm(unit.context[-1])):
        return tuple(fillers)
    norm = _norm(unit.text)
    return tuple(f for f in fillers
                 if pattern.search(norm[max(0, f.start - RATE_WINDOW):f.end + RATE_WINDOW]))


_CELL_HEAD_RE = re.compile(r"(?:^|[，,])([^，,：:\d][^，,：:]{0,15}(?<!\d))[：:]")  # not 「22:00」


def _row_cells(norm: str) -> list[tuple[str, int, int]]:
    """Return a rendered table row's cells as (header, value start, value end) offsets."""
    heads = list(_CELL_HEAD_RE.finditer(norm))
    ends = [h.start() for h in heads[1:]] + [len(norm)] if heads else []
    return [(h.group(1), h.end(), end) for h, end in zip(heads, ends, strict=True)]


def _cell_fillers(fillers: Sequence[Filler], unit: Unit, terms: Sequence[str],
                  measure: str = "") -> tuple[Filler, ...]:
    """Return the fillers of a table row that lie in the cells whose header names what was asked.

    In 「读者类型：学生，馆内阅览：免费，馆外借阅：按册数收费」 the 「免费」 is the 馆内阅览
    column's value: a question on 馆外借阅 is answered only by the cell under the header naming
    most of its terms. A header whose label counts the question's ``measure`` (「几个人」 and
    「可住人数（人）」) names what was asked as well. These headers do not count:

    - the first column's, which labels the row (「课程：私教课」);
    - a cell's whose value names a term and holds no filler: it is what the question is about,
      not what it asks (「负责人：游泳教练」 for a question on 教练);
    - a term the table's headings name (a deposit table's every column says 押金);
    - a one-character term that is only the edge of a longer word of the header (「车」 in
      「车辆…」): the header names the longer word.

    A row whose other headers name none of the terms is left as it is. A filler that is a word
    (「免费」, no digit) inside a header is the header's own word, never a value of the row.
    """
    norm = _norm(unit.text)
    cells = _row_cells(norm)
    if cells:  # 「免费宽限：30分钟」: a word in a header names the column, it is no value of the row
        fillers = [f for f in fillers if any(ch.isdigit() for ch in f.text) or any(a <= f.start < b for _, a, b in cells)]
    heading = _norm(" ".join(unit.context))
    own = [t for t in terms if (_HAN_RE.search(t) or t.isalpha()) and not _term_present(t, heading)]

    def holds_subject(a: int, b: int) -> bool:  # names a term and carries no value asked for
        return any(_term_present(t, norm[a:b]) for t in own) and not any(a <= f.start < b for f in fillers)

    named = [0 if i == 0 or holds_subject(a, b) else sum(_header_names(t, head) for t in own)
             for i, (head, a, b) in enumerate(cells)]
    best = max(named, default=0)
    if best == 0:
        return tuple(fillers)
    spans = [(a, b) for (head, a, b), n in zip(cells, named, strict=True)
             if n == best or (measure and n == 0 and _label_counts(head, measure))]
    return tuple(f for f in fillers if any(a <= f.start and f.end <= b for a, b in spans))


def _header_names(term: str, head: str) -> bool:
    """Return True when a column header names ``term`` (a one-character word only as a word of its own)."""
    if ALTERNATIVES in term:
        return any(_header_names(t, head) for t in term.split(ALTERNATIVES) if t)
    if len(term) == 1 and _HAN_RE.match(term):
        return next(whole_word_starts(term, head, hmm=False), None) is not None
    return _term_present(term, head)


def _anchored(unit: Unit, anchors: Sequence[str], *, lapse: bool = False) -> bool:
    """Return True when an anchor occurs in the unit, its title, heading path or category, or its value does.

    An anchor that names the kind of a value is carried by a value of that kind: 「有折扣吗」 by
    「9折」, 「要钱吗」「收费吗」 by an amount of money or a statement that it is free, 「电话」「热线」
    by a phone number, and (with ``lapse``, a question on when something lapses) 「过期」 by a
    validity span (「有效期：90天」).
    """
    text = _norm(" ".join([unit.text, unit.category, *unit.context]))  # the category scopes it as a title does
    if any(_term_present(a, text) for a in anchors):
        return True
    body = _norm(unit.text)
    if any(_DISCOUNT_ANCHOR_RE.fullmatch(a) for a in anchors) and _DISCOUNT_VALUE_RE.search(body):
        return True
    if lapse and any(_LAPSE_RE.fullmatch(a) for a in anchors) and _VALIDITY_RE.search(body):
        return True
    if any(_PHONE_WORD_RE.fullmatch(a) for a in anchors) and _PHONE_RE.search(body):
        return True
    return any(_CHARGE_ANCHOR_RE.fullmatch(a) for a in anchors) and _states_charge(unit)


# 「多长」 without 「时间」 asks a length as often as a time: a quantity of the length family answers it too.
_LENGTH_ASKED_RE = re.compile(r"多长(?!时间)")
# When (or after how long) something lapses is answered by how long it is valid: 「…多久过期」 by
# 「有效期：发放后90天」 or 「自领取之日起30天内有效」 (a span, not a validity named as a condition).
_LAPSE_RE = re.compile(r"过期|失效|到期")
_VALIDITY_RE = re.compile(r"有效期[^，,。；;]{0,10}?\d|\d[^，,。；;]{0,8}?内?有效")
_DISCOUNT_ANCHOR_RE = re.compile(r"折扣|打折|折")
_DISCOUNT_VALUE_RE = re.compile(r"\d+(?:\.\d+)?\s*折")
_CHARGE_ANCHOR_RE = re.compile(r"(?:[要收加花掏付交补]|多[收交付])钱|收费|要费用|[加另]收|扣钱")
_LIMIT_ASKED_RE = re.compile(r"限制|限额|上限")
# A word naming only the dimension of the value asked (「年龄」「比例」「重量」) is met by a value in that
# dimension (「满7周岁」「30%」「8公斤」), as 「收费」 is met by a price: never by the word alone.
_DIMENSION_WORDS = (
    (re.compile(r"比例|比率|百分比|百分之|占比"), re.compile(r"\d\s*[%‰]|百分之[\d一二三四五六七八九十]")),
    (re.compile(r"年龄|岁数"), re.compile(r"\d\s*周?岁")),
    (re.compile(r"重量"), re.compile(r"\d\s*(?:公斤|千克|克|斤|吨|kg)(?![a-z])")),
    (re.compile(r"尺寸|长度|体积"), re.compile(r"\d\s*(?:厘米|毫米|米|cm|mm)(?![a-z])|\d\s*[×x*]\s*\d")),
    (_DISCOUNT_ANCHOR_RE, _DISCOUNT_VALUE_RE),
)
_CONDITION_ASKED_RE = re.compile(r"要求|条件")


def _kind_stated(term: str, unit: Unit, *, lapse: bool = False, dimension: bool = False) -> bool:
    """Return True when ``term`` names the kind of answer asked for and the unit states one.

    「要钱吗」「收费吗」 is bound by a price (「每次2元」) or by 「免费」; 「有没有…限制」 by a stated
    limit (「最多」「不超过」「不限」) or a time window (「上车后60分钟内」); 「有哪些要求」 by a
    stated condition (「须」「满…」) or limit; 「电话」「热线」「号码」 by a phone number; with
    ``lapse``, 「过期」「失效」 by a validity span; with ``dimension`` (the word stands in the clause
    that asks), a word naming only a value's dimension (「年龄」「比例」「重量」) by a value in it
    (「满7周岁」「30%」); never by the word itself alone.
    """
    if _is_charge_word(term):
        return _states_charge(unit)
    parts, body = term.split(ALTERNATIVES), _norm(unit.text)
    if any(_LIMIT_ASKED_RE.fullmatch(t) for t in parts):
        return bool(_BOUND_CELL_RE.search(body) or _SPAN_WITHIN_RE.search(body))
    if any(_CONDITION_ASKED_RE.fullmatch(t) for t in parts):
        return bool(_CONDITION_RE.search(body) or _BOUND_CELL_RE.search(body))
    if lapse and any(_LAPSE_RE.fullmatch(t) for t in parts):
        return bool(_VALIDITY_RE.search(body))
    if any(_PHONE_WORD_RE.fullmatch(t) for t in parts):
        return bool(_PHONE_RE.search(body))
    return dimension and any(asked.fullmatch(t) and value.search(body) for asked, value in _DIMENSION_WORDS
                             for t in parts)


def _is_charge_word(term: str) -> bool:
    """Return True when ``term`` (or one alternative of it, 「收费|收取」) asks for a charge."""
    return any(_CHARGE_ANCHOR_RE.fullmatch(t) for t in term.split(ALTERNATIVES))


def _charge_anchored(question: Question) -> bool:
    """Return True when the question asks whether something costs money (an anchor such as 「收费」)."""
    return any(_is_charge_word(a) for a in question.get("anchors") or [])


def _states_charge(unit: Unit) -> bool:
    """Return True when a unit says what something costs: a sum of money, a rate, or that it is free.

    A rate counts in a clause that charges (「按书价的1%收取」). A table row states its sums in
    bare cells when the heading gives their unit or names prices (「收费标准」, 「单位：元/场」):
    「通宵场：0」 there is a price.
    """
    body = _norm(unit.text)
    if _FREE_RE.search(body) or _MONEY_VALUE_RE.search(body):
        return True
    if any(_CHARGE_VERB_RE.search(_clause_of(body, Filler("amount", m.group(0), m.start(), m.end())))
           for m in _CHARGE_RATE_RE.finditer(body)):
        return True  # 「按书价的1%收取」: a charge stated as a rate of another sum
    return unit.row and bool(_heading_unit_fillers("amount", unit))


_VALUE_ANCHOR_RE = re.compile(rf"{_DISCOUNT_ANCHOR_RE.pattern}|{_CHARGE_ANCHOR_RE.pattern}")
_FREE_RE = re.compile(f"免费|{_NO_CHARGE_WORDS}")
_CHARGE_RATE_RE = re.compile(r"\d+(?:\.\d+)?\s*[%‰]|[百千万]分之[\d一二三四五六七八九十]+")
_CHARGE_VERB_RE = re.compile(r"[收扣缴付]")  # 收取, 加收, 扣除, 缴纳, 支付…
_MONEY_VALUE_RE = re.compile(rf"\d\s*(?:{_MONEY_UNITS})|[¥￥]\s*\d")


# 「几个人」 counts people: a value in any classifier of people answers it (「3个不同机主」「2位」「5名」).
_MEASURE_ALIASES = {"分": ("分", "积分"), "积分": ("分", "积分"), "岁": ("岁",), "周岁": ("岁",), "次": ("次", "回"),
                    "人": ("人", "个", "位", "名"), "距离": ("公里", "千米", "米", "km"),
                    "重量": ("公斤", "千克", "克", "斤", "吨", "kg")}


# A limit word anywhere in a value's cell or in the heading the unit answers (「每日借阅限额：读者证5本」,
# 「三、借阅限额」) makes the value a limit; 「满」「起」 count only beside the value (above).
_FLOOR_CELL_WORDS = "最低|最少|最小|最短|至少|不低于|不少于|下限|以上|不足"
_CAP_CELL_WORDS = "最高|最多|最大|最长|不超过|不高于|上限|封顶|至多|限|以内|以下"
_BOUND_CELL_RE = re.compile(f"{_FLOOR_CELL_WORDS}|{_CAP_CELL_WORDS}")
_SPAN_WITHIN_RE = re.compile(rf"\d\s*{_TIME_UNIT}内")  # 「60 分钟内」: a time window is a limit
_CELL_SEP_RE = re.compile(r"[，,；;。！？!?]")
# The same limit words by side, a cap or a floor; 「不限」 (there is none) answers either.
_SIDED_LIMIT_RE = {"max": re.compile(_CAP_CELL_WORDS), "min": re.compile(f"{_FLOOR_CELL_WORDS}|不限")}
# What one may do, stated with a modal before the value in its cell (「可带3位同伴」「可加：2张」), is a
# capacity: the most one gets, so it answers 「最多…」 (never 「最少…」). 「可能」 is a guess, 「不可」 a ban.
_CAPACITY_RE = re.compile(r"(?:(?<![不无])可以?(?!能)|(?<![不无可])能够?|(?<![不无])允许)[\u4e00-\u9fff]")


# A bare number after a label (「兑换积分：900」「可容纳人数（人）：6」): the label says what it counts.
_LABELLED_NUMBER_RE = re.compile(
    r"(?P<label>[^：:，,；;。！？!?|]{1,16})[：:]\s*(?P<num>\d+(?:\.\d+)?)(?![\d.%‰]|\s*[\u4e00-\u9fffA-Za-z])")
_LABEL_UNIT_RE = re.compile(r"[（(]([^（）()]{1,6})[)）]")


_UNLIMITED_RE = re.compile(_UNLIMITED)


def _label_counts(label: str, measure: str) -> bool:
    """Return True when a value's label names ``measure`` as what it counts (not a unit of another kind).

    「兑换积分」 and 「使用人数（人）」 count points and people; 「长度（米）」 or 「时长（分钟）」
    do not, whatever characters they share with the measure.
    """
    names = _MEASURE_ALIASES.get(measure, (measure,))
    unit = _LABEL_UNIT_RE.search(label)
    if unit:
        return unit.group(1) in names
    return any(re.search(rf"{re.escape(n)}(?!钟|之|期)", label) for n in names)


def _labelled_counts(norm: str, measure: str) -> tuple[Filler, ...]:
    """Return the bare numbers whose label names the asked measure (「几个人」, 「多少积分」)."""
    if not measure:
        return ()
    return tuple(Filler("count", m.group("num"), m.start("num"), m.end("num"))
                 for m in _LABELLED_NUMBER_RE.finditer(norm) if _label_counts(m.group("label"), measure))


def _cell_before(norm: str, filler: Filler) -> str:
    """Return the text from the last separator (not a colon) before ``filler`` up to it."""
    cut = max((m.end() for m in _CELL_SEP_RE.finditer(norm, 0, filler.start)), default=0)
    return norm[cut:filler.start]


_SHARE_ASKED_RE = re.compile(r"百分之几|比例|几成")
_SHARE_BOUND_RE = re.compile(r"(?:最[高低多少]|至[多少]|上限|下限)[^，,。？?]{0,3}(?:百分之几|比例|几成)")


def _asked_bound(question: Question) -> str:
    """Return the question's bound, unless it names a thing and the question asks a share of it.

    「最低消费额怎么定，占年费的百分之几」 asks the share that makes up the minimum spend, not the
    least share: a bound only bounds a share it stands next to (「最高退百分之几」).
    """
    bound = str(question.get("bound", ""))
    norm = question["norm"]
    if bound and _SHARE_ASKED_RE.search(norm) and not _SHARE_BOUND_RE.search(norm):
        return ""
    return bound


def shaped_fillers(fillers: Sequence[Filler], unit: Unit, anchors: Sequence[str], bound: str,
                   measure: str, *, face_values: bool = False, lapse: bool = False) -> tuple[Filler, ...]:
    """Return the fillers that have the shape the question asks for.

    - **anchored**: the unit or its headings carry one of the question's anchors (:func:`_anchored`;
      ``lapse``: a lapse word is carried by a validity span), the words the
      asked slot attaches to; a value whose clause names a sibling of the anchor instead of
      the anchor (「下班」 for 「上班」) is that sibling's;
    - **bounded**: a question asking for an upper bound (「最多」) is not answered by a value the
      evidence states as a lower bound (「每次最少3节」「满14周岁」「最短7天」), and vice versa; nor
      by a plain value, one with no limit word beside it, in its cell or in the heading the
      unit answers (「私教课每节80元」 is a price, not the least one pays). A time's limit word
      may head its clause (「最晚须在开课前2小时」);
    - **measured**: a count in a named classifier (「几张」) needs a value in that classifier, or a
      bare number or 「不限」 whose label names what is counted (「每人可借册数：不限」);
    - **numeric**: a bound question needs a number (「全额」「立即」 state no limit);
    - **not a face value**: an amount naming a coupon's or card's value (「5元无门槛优惠券」) does
      not answer a question about anything but such an instrument (``face_values``).
    """
    if anchors and not _anchored(unit, anchors, lapse=lapse):
        return ()
    norm = _norm(unit.text)
    if anchors and not unit.row:  # 「22:00下班…次日上班」: the value is the time of 下班
        fillers = [f for f in fillers if not _sibling_clause(_clause_of(norm, f, join=False), anchors)]
    keep: list[Filler] = []
    bound_heading = bool(unit.context) and bool(_BOUND_CELL_RE.search(_norm(unit.context[-1])))
    for filler in fillers:
        if not face_values and filler.kind == "amount" and _FACE_VALUE_RE.match(norm, filler.end):
            continue  # 「赠送5元无门槛优惠券」: the coupon's face value, not what was asked
        cell = _cell_before(norm, filler)
        if measure and not any(m in filler.text for m in _MEASURE_ALIASES.get(measure, (measure,))) \
                and not ((filler.text.replace(".", "").isdigit() or _UNLIMITED_RE.fullmatch(filler.text))
                         and _label_counts(cell, measure)):
            continue
        before, after = norm[max(0, filler.start - BOUND_WINDOW):filler.start], norm[filler.end:filler.end + 3]
        before = before.rstrip(":： ")  # 「每次最低：2元」: the bound word heads the value's cell
        lower = _LOWER_BEFORE_RE.search(before) or _LOWER_AFTER_RE.search(after) or _LOWER_WORD_RE.match(filler.text)
        upper = _UPPER_BEFORE_RE.search(before) or _UPPER_AFTER_RE.search(after) or _UPPER_WORD_RE.match(filler.text)
        if filler.kind == "duration":  # 「最晚须在开课前2小时」: a time limit heads its clause (its cell)
            lower, upper = lower or _LOWER_WORD_RE.search(cell), upper or _UPPER_WORD_RE.search(cell)
        if (bound == "max" and lower and not upper) or (bound == "min" and upper and not lower):
            continue
        if bound and filler.kind in ("amount", "count", "duration") and not lower and not upper \
                and not _BOUND_CELL_RE.search(cell) and not bound_heading \
                and not (bound == "max" and _CAPACITY_RE.search(cell)):
            continue  # 「私教课每节80元」 states a price, not the least (or most) one pays
        if bound and filler.kind in ("amount", "count") and _RATE_FILLER_RE.search(filler.text) \
                and not (upper if bound == "max" else lower):
            continue  # 「罚息最高多少」 is not answered by a plain rate (「按千分之三计收」)
        if bound and not any(ch.isdigit() for ch in filler.text):  # a limit is a number, not 「全额」「立即」
            continue
        keep.append(filler)
    return tuple(keep)


def _says_nothing_specific(question: Question, vocab: Vocabulary | None,
                           weights: Mapping[str, float] | None = None) -> bool:
    """Return True when every own subject term is vague or unknown and no anchor is left.

    「…会有影响吗」 names only a qualifier and a vague word: whatever unit carries the qualifier
    would bind, so nothing can be said to answer it.
    """
    terms = question["subject_terms"]
    if vocab is None or not terms or question.get("anchors"):
        return False
    if weights is None or any(t not in weights for t in terms):
        weights = subject_weights(terms, vocab)
    return all(weights.get(t, 1.0) <= UNKNOWN_WEIGHT for t in terms)


def _judge_units(question: Question, units: Sequence[Unit], vocab: Vocabulary | None,
                 weights: Mapping[str, float] | None, *, check_unknown: bool,
                 min_share: float = MIN_SUBJECT_SHARE) -> list[UnitVerdict]:
    """Judge every unit; a question naming something the knowledge base never uses gets none."""
    unknown = unknown_terms(question, vocab) if check_unknown else []
    if unknown:
        empty = Binding(0.0, (), tuple(unknown), False)
        return [UnitVerdict(u, False, (), empty, QualifierCheck(), f"unknown term {unknown[0]}") for u in units]
    if _says_nothing_specific(question, vocab, weights):
        empty = Binding(0.0, (), tuple(question["subject_terms"]), False)
        return [UnitVerdict(u, False, (), empty, QualifierCheck(), "vague subject") for u in units]
    regimes = _without_domain_values(question, vocab)
    return [judge_unit(question, u, vocab=vocab, weights=weights, min_share=min_share, regimes=regimes) for u in units]


def answerability(question: Question, evidence: Sequence[Mapping[str, Any]], *,
                  vocab: Vocabulary | None = None, min_share: float = MIN_SUBJECT_SHARE) -> AnswerGate:
    """Judge every unit of the (non-tool) evidence against the question.

    A multi-part question is judged part by part (``parts_covered``); a unit answers when it
    answers the whole question or one of its parts.
    """
    units = evidence_units(evidence)
    settled = settled_qualifiers(question["qualifiers"], evidence)  # the version in force answered them
    if settled is not question["qualifiers"]:
        question = cast(Question, {**question, "qualifiers": settled})
    weights = subject_weights(question_subject(question), vocab)
    verdicts = _judge_units(question, units, vocab, weights, check_unknown=not question["parts"],
                            min_share=min_share)
    covered: list[bool] = []
    answering: list[tuple[str, ...]] = []
    if question["parts"]:
        from strategies.rules.question import analyze_question  # noqa: PLC0415

        for part in question["parts"]:
            sub = analyze_question(part, vocab=vocab)
            sub["qualifiers"] = {**question["qualifiers"], **sub["qualifiers"]}
            if not sub["subject_terms"]:  # 「…？最晚几点关」: an elliptical part asks about the first one's subject
                sub["subject_terms"] = _topic_of(question["subject_terms"])
            part_verdicts = _judge_units(sub, units, vocab, None, check_unknown=True, min_share=min_share)
            covered.append(any(v.answers for v in part_verdicts))
            answering.append(tuple(v.unit.text for v in _prefer_rules(part_verdicts) if v.answers))
            verdicts = [a if a.answers or not b.answers else b
                        for a, b in zip(verdicts, part_verdicts, strict=True)]
    return AnswerGate(_prefer_rules(verdicts), tuple(covered), tuple(answering))



# --------------------------------------------------------------------------- the answerer gate

TRACE_UNITS = 8  # units of a gate decision kept in a trace: the answering ones, then the nearest misses
_QUESTION_REASON_RE = re.compile(r"unknown term|vague subject")


def gate_summary(question: Question, gate: AnswerGate) -> dict[str, Any]:
    """Return the gate's decision as a small JSON-able record (why a turn was or was not answered).

    The question's analysis (slot, subject terms, anchors, qualifiers) and, for at most
    ``TRACE_UNITS`` units (the answering ones first, then those that carried a filler of the
    asked slot), the verdict: its reason, the subject terms found and missing, and any
    qualifier conflicts.
    """
    ranked = sorted(gate.verdicts, key=lambda v: (not v.answers, not v.fillers))
    reasons = {v.reason for v in gate.verdicts}
    only = reasons.pop() if len(reasons) == 1 else ""
    whole = only if _QUESTION_REASON_RE.match(only) else ""
    return {
        "slot": question["slot"],
        "subject": list(question["subject_terms"]),
        "anchors": list(question.get("anchors") or []),
        "qualifiers": {k: list(v) for k, v in question["qualifiers"].items()},
        "answerable": gate.answerable,
        "parts_covered": list(gate.parts_covered),
        "reason": whole,  # a decision about the question itself (a term the KB never uses), not a unit
        "units": [] if whole else [{"id": v.unit.id, "answers": v.answers, "reason": v.reason or "answers",
                   "fillers": [f.text for f in v.fillers][:4], "found": list(v.binding.found),
                   "missing": list(v.binding.missing), "share": round(v.binding.share, 3),
                   "specific_ok": v.binding.specific_ok,
                   "conflicts": {k: list(x) for k, x in v.qualifiers.conflicts.items()}}
                  for v in ranked[:TRACE_UNITS]],
    }


UNCOVERED_PART = "您问题中的另一部分在当前知识库中没有找到相关信息，如需进一步帮助可以为您转接人工客服。"


class GatedAnswerer:
    """Wrap an answerer so that only evidence the gate accepts reaches it (the code decides).

    No unit answers the question (and no tool result is there to report) → the fixed no-answer
    reply with ``no_evidence``, whatever the wrapped answerer would have said; otherwise the
    wrapped answerer sees the tool results and only the chunks holding an answering unit.
    A multi-part question whose parts are only partly covered gets a sentence saying so.
    """

    def __init__(self, inner: Any) -> None:
        """Wrap ``inner`` (an ``Answerer``)."""
        self.inner = inner

    def answer(self, request: Any) -> Any:
        """Return the wrapped answerer's draft over the accepted evidence, or the no-answer reply."""
        from dataclasses import replace

        from strategies.protocols import Draft
        from strategies.rules.answer import NO_ANSWER

        question = request.turn.question
        chunks = [e for e in request.evidence if e.get("kind") != "tool"]
        if not question or not question.get("text") or not chunks:
            return self.inner.answer(request)
        share = float((request.turn.profile or {}).get("min_subject_share", MIN_SUBJECT_SHARE))
        gate = answerability(question, chunks, vocab=request.turn.vocab, min_share=share)
        tools = [e for e in request.evidence if e.get("kind") == "tool"]
        accepted = set(gate.evidence_ids())
        summary = gate_summary(question, gate)
        if not gate.answerable and not tools:
            return Draft(text=NO_ANSWER, fail_reason="no_evidence", gate=summary)
        kept = [e for e in request.evidence if e.get("kind") == "tool" or str(e.get("id")) in accepted]
        draft = replace(self.inner.answer(replace(request, evidence=kept)), gate=summary)
        if gate.partly_covered and draft.text != NO_ANSWER:
            draft = replace(draft, text=draft.text + UNCOVERED_PART)
        if draft.text != NO_ANSWER and any(e.get("version_frame") == IN_FORCE_OLD for e in kept):
            note = version_note(str(question.get("text")))
            if not draft.text.startswith(note):
                draft = replace(draft, text=note + draft.text)  # which rule this is, in any mode
        return draft
