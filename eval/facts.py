"""The evaluation's own fact extraction, independent of the product's verifier.

The verifier has its own extractor; if the evaluation used it, a bug there would be invisible
to the measurement. This module shares no code with the product: its own normalisation (width,
case, Chinese numerals via ``cn2an``, ranges, dates, amounts) and its own closed word lists.

A *fact* is a number with its unit (「7天」, 「99元」, 「1-3工作日」, 「50%」), a date, a clock time,
an order or ticket id, or a closed-class word: an order state, a policy term, a member tier, a
payment method or a region.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

_CITE_RE = re.compile(r"【来源[:：][^】]*】")
_CN_NUMERAL = "零〇一二两三四五六七八九十百千万"
_RANGE_RE = re.compile(r"(\d)\s*(?:~|～|〜|－|—|–|-|至|到)\s*(\d)")
_YMD_RE = re.compile(r"(\d{4})\s*[年/.-]\s*(\d{1,2})\s*[月/.-]\s*(\d{1,2})\s*[日号]?")
_MD_RE = re.compile(r"(?<![\d-])(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")
_UNITS = ("工作日|自然日|小时|分钟|个月|天|日|周|星期|年|月|次|件|元|倍|折|公斤|千克|kg|斤|克|积分|张|单|级|"
          "人|岁|%|个|分|米|台|期|笔|份|位|条|层|项|种|箱|瓶|秒")
_NUMBER_RE = re.compile(rf"(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?\s*({_UNITS})?")
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}|(?<![\d-])\d{2}-\d{2}(?![\d-])")
_TIME_RE = re.compile(r"(?<!\d)\d{1,2}:\d{2}(?!\d)")
_ORDER_ID_RE = re.compile(r"(?<![a-z0-9])[a-z]{1,4}\d{8,}(?![0-9])")
_ENUMERATOR_RE = re.compile(r"(^|[\n。；;：:|])\s*(?:\d{1,2}|[一二三四五六七八九十]{1,2})[.、)）]\s*")

ORDER_STATES = ("待付款", "待发货", "已发货", "运输中", "派送中", "已签收", "已取消", "退款中", "已退款",
                "已完成", "已揽收", "处理中", "已关闭", "待审核", "审核中", "已通过", "已拒绝")
MEMBER_TIERS = ("plus会员", "普通会员", "非会员", "银卡会员", "金卡会员", "金牌会员", "铂金会员", "钻石会员",
                "黑卡会员", "新用户", "企业用户")
PAYMENT_METHODS = ("支付宝", "微信支付", "微信零钱", "银行卡", "信用卡", "储蓄卡", "借记卡", "花呗", "白条",
                   "货到付款", "余额", "礼品卡", "云闪付", "apple pay", "数字人民币")
POLICY_TERMS = ("无理由", "运费险", "价保", "保价", "以旧换新", "先行赔付", "极速退款", "上门取件", "延保",
                "三包", "电子发票", "纸质发票", "专票", "普票", "次日达", "当日达", "免运费券", "冷链", "定金",
                "尾款", "积分", "成长值")
REGIONS = ("北京", "天津", "上海", "重庆", "河北", "山西", "辽宁", "吉林", "黑龙江", "江苏", "浙江", "安徽",
           "福建", "江西", "山东", "河南", "湖北", "湖南", "广东", "海南", "四川", "贵州", "云南", "陕西",
           "甘肃", "青海", "台湾", "内蒙古", "广西", "西藏", "宁夏", "新疆", "香港", "澳门", "江浙沪",
           "京津冀", "珠三角", "长三角", "偏远地区", "海外", "境外")


@dataclass(frozen=True)
class Number:
    """A number or range with its unit (``unit`` may be empty)."""

    low: str
    high: str | None
    unit: str

    def __str__(self) -> str:
        """Render as 「1-3工作日」."""
        return (self.low if self.high is None else f"{self.low}-{self.high}") + self.unit


@dataclass
class Facts:
    """Every fact of one text."""

    numbers: list[Number] = field(default_factory=list)
    dates: list[str] = field(default_factory=list)
    times: list[str] = field(default_factory=list)
    order_ids: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)

    def tokens(self) -> list[str]:
        """Return every fact as a display string."""
        return [str(n) for n in self.numbers] + self.dates + self.times + self.order_ids + self.words


# Words whose 一 counts nothing (「另一部分」「进一步」「统一」): cn2an would read each as the number 1.
_NOT_A_NUMBER_RE = re.compile(r"另一|进一步|一起|一些|一下|一般|一样|一直|统一|唯一|一旦|一定|一律|一并|一致|一切|逐一|万一|一同|之一")
_HELD_ONE = "\ue000"  # a private-use character that stands for such a 一 while cn2an runs


def _cn_numerals(text: str) -> str:
    """Turn Chinese numerals into digits (「九十九元」 → 「99元」); text without them is unchanged.

    The 一 of a word that counts nothing (「另一部分」「进一步」) stays a character.
    """
    if not any(ch in _CN_NUMERAL for ch in text):
        return text
    held = _NOT_A_NUMBER_RE.sub(lambda m: m.group(0).replace("一", _HELD_ONE), text)
    return _cn2an(held).replace(_HELD_ONE, "一")


def _cn2an(text: str) -> str:
    """Return ``text`` with cn2an's numerals as digits (unchanged where cn2an fails)."""
    import warnings

    try:
        import cn2an

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # cn2an warns on every numeral it cannot parse
            return str(cn2an.transform(text, "cn2an"))
    except Exception:  # noqa: BLE001 - cn2an rejects some mixed strings; keep them as they are
        return text


def normalize(text: str) -> str:
    """Return ``text`` normalised for fact comparison (idempotent, citations removed)."""
    text = normalize_values(unicodedata.normalize("NFKC", _CITE_RE.sub("", text)).lower())
    return re.sub(r"\s+", "", text)


def normalize_values(text: str) -> str:
    """Rewrite the values in ``text`` canonically, keeping everything else (citations too).

    Chinese numerals become digits, ranges ``a-b``, 「个工作日」 「工作日」, dates ISO (``2026-03-17``
    or ``03-17``), amounts 「元」.
    """
    text = re.sub(r"百分之([零〇一二两三四五六七八九十百\d.]+)", r"\1%", text)
    text = re.sub(r"两(?=[个次件张天周年月元倍期笔份位条层项种箱瓶])", "2", text)
    text = _cn_numerals(text)
    text = re.sub(r"[¥￥]\s*(\d+(?:\.\d+)?)|rmb\s*(\d+(?:\.\d+)?)", lambda m: f"{m.group(1) or m.group(2)}元", text)
    text = text.replace("块钱", "元").replace("人民币", "")
    text = re.sub(r"(\d)\s*块", r"\1元", text)
    text = re.sub(r"(\d+)\.0+(?!\d)", r"\1", text)
    text = re.sub(r"(\d),(\d{3})", r"\1\2", text)
    text = _RANGE_RE.sub(r"\1-\2", text)
    text = re.sub(r"(\d)\s*个\s*(工作日|自然日|小时|月)", r"\1\2", text)
    text = re.sub(r"(\d)\s*自然日", r"\1天", text)
    text = _YMD_RE.sub(lambda m: f"{m.group(1)}-{int(m.group(2)):02d}-{int(m.group(3)):02d}", text)
    text = _MD_RE.sub(lambda m: f"{int(m.group(1)):02d}-{int(m.group(2)):02d}", text)
    text = re.sub(r"(\d)\s*日(?=内|之内|以内|后|起)", r"\1天", text)
    return re.sub(r"(\d{1,2})\s*[:：]\s*(\d{2})", r"\1:\2", text)


def strip_enumerators(text: str) -> str:
    """Drop list enumerators (「9. 」, 「3、」) at line or sentence starts: they are not facts."""
    return _ENUMERATOR_RE.sub(r"\1", text)


def _words(norm: str, words: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    for word in sorted(words, key=len, reverse=True):
        if word in norm and not any(word in longer for longer in found):
            found.append(word)
    return found


def extract(text: str) -> Facts:
    """Return the facts of ``text`` (normalised first)."""
    norm = normalize(strip_enumerators(text))
    facts = Facts()
    facts.order_ids = _ORDER_ID_RE.findall(norm)
    rest = _ORDER_ID_RE.sub(" ", norm)
    facts.dates = _DATE_RE.findall(rest)
    rest = _DATE_RE.sub(" ", rest)
    facts.times = _TIME_RE.findall(rest)
    rest = _TIME_RE.sub(" ", rest)
    facts.numbers = [Number(m.group(1), m.group(2), m.group(3) or "") for m in _NUMBER_RE.finditer(rest)]
    facts.words = (_words(norm, ORDER_STATES) + _words(norm, POLICY_TERMS) + _words(norm, MEMBER_TIERS)
                   + _words(norm, PAYMENT_METHODS) + _words(norm, REGIONS))
    return facts


def number_in(token: Number, pool: list[Number]) -> bool:
    """Return True when ``token`` occurs in ``pool``: same unit (or none given) and value.

    A range must match as a whole; a single value may be either end of a range.
    """
    for other in pool:
        if token.unit and other.unit != token.unit:
            continue
        if token.high is not None:
            if (token.low, token.high) == (other.low, other.high):
                return True
        elif token.low in (other.low, other.high):
            return True
    return False


def unsupported(answer: str, support_texts: list[str]) -> list[str]:
    """Return the facts of ``answer`` that none of ``support_texts`` contains, in order."""
    support = "\n".join(support_texts)
    support_norm = normalize(strip_enumerators(support))
    pool = extract(support).numbers
    facts = extract(answer)
    missing = [str(n) for n in facts.numbers if not number_in(n, pool)]
    missing += [w for w in facts.dates + facts.times + facts.order_ids + facts.words if w not in support_norm]
    return list(dict.fromkeys(missing))
