"""Text normalisation for comparing answers with evidence (full width, numerals, currency).

Applied symmetrically to answer and evidence, so 「七天」 meets 「7天」, 「¥99」 meets 「99元」,
「１５％」 meets 「15%」. Deliberately self-contained (no jieba, no index) so the verifier runs
anywhere, including ``csagent verify`` without an index.
"""

from __future__ import annotations

import re
from functools import lru_cache

from strategies.rules.lexicon import REGION_ALIASES

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
_CN_NUM = "零〇一二两三四五六七八九十百千万"
# Chinese numerals are converted only before these units, so 「一些」「万一」 stay as they are.
_UNIT_AFTER = (r"(?=个?工作日|个?自然日|天|日|小时|个小时|分钟|周|个月|月|年|次|件|元|块|倍|折|"
               r"公斤|斤|克|积分|张|单|级|人|岁|成|%)")
_CN_NUMBER_RE = re.compile(rf"[{_CN_NUM}]+{_UNIT_AFTER}")
_PERCENT_RE = re.compile(rf"百分之([{_CN_NUM}\d.]+)")
_RANGE_RE = re.compile(r"(\d)\s*(?:~|～|〜|－|—|–|-|至|到)\s*(\d)")
_YUAN_PREFIX_RE = re.compile(r"(?:¥|￥|RMB|rmb)\s*(\d+(?:\.\d+)?)")
_TRAILING_ZERO_RE = re.compile(r"(\d+)\.0+(?!\d)")
_SPACE_RE = re.compile(r"[ \t\u3000]+")


def cn_to_int(text: str) -> int | None:
    """Convert a Chinese numeral such as 「十五」 or 「三十」 to an int, or None if it is not one."""
    if not text or any(ch not in _CN_DIGITS and ch not in _CN_UNITS for ch in text):
        return None
    total, section, number = 0, 0, 0
    for ch in text:
        if ch in _CN_DIGITS:
            number = _CN_DIGITS[ch]
        else:
            unit = _CN_UNITS[ch]
            if unit == 10000:
                total += (section + number) * unit
                section, number = 0, 0
            else:
                section += (number or 1) * unit
                number = 0
    return total + section + number


def full_to_half(text: str) -> str:
    """Convert full-width ASCII characters and the ideographic space to half width."""
    out = []
    for ch in text:
        code = ord(ch)
        if 0xFF01 <= code <= 0xFF5E:
            out.append(chr(code - 0xFEE0))
        elif code == 0x3000:
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def _replace_cn_number(match: re.Match[str]) -> str:
    value = cn_to_int(match.group(0))
    return str(value) if value is not None else match.group(0)


_YMD_RE = re.compile(r"(\d{4})\s*(?:年|-|/|\.)\s*(\d{1,2})\s*(?:月|-|/|\.)\s*(\d{1,2})\s*(?:日|号)?")
_MD_RE = re.compile(r"(?<!\d)(\d{1,2})\s*月\s*(\d{1,2})\s*(?:日|号)")


def _replace_percent(match: re.Match[str]) -> str:
    value = cn_to_int(match.group(1))
    return f"{value if value is not None else match.group(1)}%"


def normalize_dates(text: str) -> str:
    """Rewrite 「2026年1月5日」/「2026/1/5」 as 2026-01-05 and 「1月5日」 as 01-05."""
    text = _YMD_RE.sub(lambda m: f"{m.group(1)}-{int(m.group(2)):02d}-{int(m.group(3)):02d}", text)
    return _MD_RE.sub(lambda m: f"{int(m.group(1)):02d}-{int(m.group(2)):02d}", text)


@lru_cache(maxsize=16384)
def normalize_for_compare(text: str) -> str:
    """Return ``text`` normalised for fact comparison (idempotent; pure, so results are cached).

    Args:
        text: Any answer or evidence text.

    """
    text = full_to_half(text)
    text = _PERCENT_RE.sub(_replace_percent, text)
    text = _CN_NUMBER_RE.sub(_replace_cn_number, text)
    text = _YUAN_PREFIX_RE.sub(r"\1元", text)
    text = text.replace("块钱", "元").replace("人民币", "")
    text = re.sub(r"(\d)\s*块", r"\1元", text)
    text = _TRAILING_ZERO_RE.sub(r"\1", text)
    text = re.sub(r"(\d),(\d{3})", r"\1\2", text)
    text = _RANGE_RE.sub(r"\1-\2", text)
    text = re.sub(r"(\d)\s*个工作日", r"\1工作日", text)
    text = re.sub(r"(\d)\s*个自然日", r"\1天", text)
    text = re.sub(r"(\d)\s*个小时", r"\1小时", text)
    text = normalize_dates(text)
    text = re.sub(r"(\d)\s*日(?=内|之内|以内|后|起|无理由|价保|退|换|发货|送达|到账)", r"\1天", text)
    text = re.sub(r"初([一二三四五六七八九十]+)", lambda m: f"初{cn_to_int(m.group(1))}", text)
    for long, short in REGION_ALIASES.items():
        text = text.replace(long, short)
    return _SPACE_RE.sub(" ", text).strip()
