"""Text normalisation and jieba tokenisation for BM25 (and for lexical features).

``normalize_text`` makes spelling variants meet: full-width → half-width and lower case (NFKC),
traditional → simplified Chinese (OpenCC ``t2s``), and Chinese numerals before a counter or unit
→ Arabic digits (「七天」→「7天」, 「十五个工作日」→「15个工作日」, 「两年」→「2年」).
``tokenize`` runs jieba's search-mode segmentation over the normalised text with a shop user
dictionary (七天无理由, 运费险, 价保, 以旧换新, Plus会员 …) and drops punctuation and stop words.

jieba keeps its dictionary cache in a folder set by :func:`configure_jieba` (the ingest and the
index put it inside the index dir); its logging is kept at WARNING.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import unicodedata
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from knowledge.gazetteer import expand_places

logger = logging.getLogger(__name__)

# Shop vocabulary, written in normalised form (digits, lower case, simplified).
SHOP_WORDS: tuple[str, ...] = (
    "7天无理由", "7天无理由退货", "无理由退货", "15天换货", "运费险", "退货运费", "运费", "价保",
    "价格保护", "以旧换新", "plus会员", "会员", "花呗", "白条", "分期", "免息", "京豆", "积分",
    "优惠券", "满减", "红包", "秒杀", "预售", "定金", "尾款", "发票", "电子发票", "增值税专用发票",
    "专票", "普票", "保修", "质保", "延保", "售后", "退款", "退货", "换货", "维修", "返修",
    "签收", "拒收", "包邮", "偏远地区", "港澳台", "自提", "次日达", "当日达", "工作日",
    "原路退回", "余额", "银行卡", "信用卡", "微信支付", "支付宝", "货到付款", "实名认证",
    "绑定手机", "登录密码", "支付密码", "异地登录", "账户冻结", "注销账户", "修改地址",
    "取消订单", "订单取消", "物流", "快递", "催发货", "缺货", "赔付", "补偿", "质量问题",
    "人为损坏", "二次销售", "激活", "拆封", "生鲜", "定制商品", "虚拟商品", "大件商品",
    "上门取件", "客服", "人工客服", "差价", "补差价", "保价", "以旧换新补贴", "检测报告",
)

STOPWORDS: frozenset[str] = frozenset(
    """的 了 吗 呢 吧 啊 呀 哦 嘛 么 是 我 我的 你 你们 您 他 她 它 在 和 与 及 或 或者 就 都 也 还 又
    被 把 给 对 从 到 这 那 这个 那个 这些 那些 哪 哪个 个 请问 请 一下 怎么 怎么办 怎样 如何 什么
    吗 么 啥 咋 能 能不能 可以 可不可以 会 要 想 得 地 着 过 呗 嗯 哈 之 其 而 并 等 等等 如果 因为
    所以 但是 但 然后 那么 以及 有没有 没有 有""".split()
)

_T2S: Any = None
_T2S_LOCK = threading.Lock()

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
_COUNTERS = (
    "个工作日|工作日|自然日|小时|分钟|个月|天|日|周|年|月|元|块|件|次|倍|折|期|单|张|台|位|岁|星期|"
    "公斤|千克|斤|克|米|公里|级|项|种|笔|份"
)
_CN_NUM_RE = re.compile(rf"(?<![\d.])([零〇一二两三四五六七八九十百千万]+)(?=(?:{_COUNTERS}))")
# 「5万元」「1.5万元」「2千块」: a digit with a Chinese myriad or thousand (not 千克/千米, which are units).
_DIGIT_MAGNITUDE_RE = re.compile(rf"(\d+(?:\.\d+)?)([万千])(?!克|米)(?=(?:{_COUNTERS}))")
_MAGNITUDES = {"万": 10000, "千": 1000}
NORMALIZER_VERSION = 3  # part of the index settings: an index built with another version is rebuilt
_NUM_UNIT_RE = re.compile(rf"(\d+(?:\.\d+)?)({_COUNTERS}|%)")
_SPACE_RE = re.compile(r"\s+")
_TOKEN_OK_RE = re.compile(r"[0-9a-z\u4e00-\u9fff]")


def chinese_to_int(text: str) -> int | None:
    """Parse a Chinese numeral such as 「十五」 or 「一百二十」; return None if it is not one."""
    if not text:
        return None
    if all(ch in _CN_DIGITS for ch in text) and len(text) > 1:
        # digit-by-digit form such as 「二〇二六」
        return int("".join(str(_CN_DIGITS[ch]) for ch in text))
    total, section, number = 0, 0, 0
    for ch in text:
        if ch in _CN_DIGITS:
            number = _CN_DIGITS[ch]
        elif ch in _CN_UNITS:
            unit = _CN_UNITS[ch]
            if unit == 10000:
                section = (section + number) * unit
                total += section
                section = 0
            else:
                section += (number or 1) * unit
            number = 0
        else:
            return None
    return total + section + number


def _numerals_to_digits(text: str) -> str:
    def repl(match: re.Match[str]) -> str:
        value = chinese_to_int(match.group(1))
        if value is None:
            return match.group(1)
        before = match.string[match.start() - 1:match.start()]
        return f" {value}" if before.isascii() and before.isalpha() else str(value)  # 「SUV一天」: not 「suv1」

    def scale(match: re.Match[str]) -> str:
        value = Decimal(match.group(1)) * _MAGNITUDES[match.group(2)]
        return str(value.quantize(Decimal(1)) if value == value.to_integral_value() else value.normalize())

    return _CN_NUM_RE.sub(repl, _DIGIT_MAGNITUDE_RE.sub(scale, text))


def _t2s(text: str) -> str:
    global _T2S
    if _T2S is None:
        with _T2S_LOCK:
            if _T2S is None:
                from opencc import OpenCC

                _T2S = OpenCC("t2s")
    return str(_T2S.convert(text))


NORMALIZE_CACHE_SIZE = 16384  # distinct texts kept (the KB's units recur every turn)


@lru_cache(maxsize=NORMALIZE_CACHE_SIZE)
def normalize_text(text: str) -> str:
    """Return ``text`` normalised for matching (not for display); pure, so results are cached.

    The same knowledge-base units are normalised in every turn that retrieves them (the
    answerability gate, the extractive answerer, the verifier), and the traditional → simplified
    conversion is the costly part, so the results are kept (least recently used first out).

    Args:
        text: any text.

    Returns:
        NFKC-folded (full-width → half-width), lower-cased, simplified Chinese with Chinese
        numerals before counters turned into digits and whitespace runs collapsed.

    """
    text = unicodedata.normalize("NFKC", text).lower()
    if any("\u4e00" <= ch <= "\u9fff" for ch in text):
        text = _t2s(text)
        text = _numerals_to_digits(text)
    return _SPACE_RE.sub(" ", text).strip()


_JIEBA_LOCK = threading.Lock()
_JIEBA: Any = None
_JIEBA_CACHE_DIR: Path | None = None


def _default_cache_dir() -> Path:
    data = os.environ.get("CSAGENT_DATA_DIR")
    if data:
        return Path(data) / "jieba"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "csagent" / "jieba"


def configure_jieba(cache_dir: str | os.PathLike[str]) -> None:
    """Set the folder for jieba's dictionary cache (takes effect if jieba is not loaded yet)."""
    global _JIEBA_CACHE_DIR
    if _JIEBA is None:
        _JIEBA_CACHE_DIR = Path(cache_dir)


def _tokenizer() -> Any:
    global _JIEBA
    if _JIEBA is None:
        with _JIEBA_LOCK:
            if _JIEBA is None:
                import jieba

                jieba.setLogLevel(logging.WARNING)
                cache_dir = _JIEBA_CACHE_DIR or _default_cache_dir()
                try:
                    cache_dir.mkdir(parents=True, exist_ok=True)
                except OSError:  # read-only location: fall back to jieba's default
                    logger.warning("cannot create jieba cache dir %s", cache_dir)
                else:
                    jieba.dt.tmp_dir = str(cache_dir)
                jieba.dt.initialize()
                for word in SHOP_WORDS:
                    jieba.dt.add_word(word, freq=20000)
                _JIEBA = jieba.dt
    return _JIEBA


def tokenize(text: str) -> list[str]:
    """Return BM25 tokens for ``text``: jieba search-mode words of the normalised text.

    Punctuation, whitespace and stop words are dropped; ASCII words are kept lower-cased.
    """
    norm = normalize_text(text)
    if not norm:
        return []
    tokens: list[str] = []
    for tok in _tokenizer().cut_for_search(norm, HMM=True):
        tok = tok.strip()
        if not tok or tok in STOPWORDS or not _TOKEN_OK_RE.search(tok):
            continue
        tokens.append(tok)
    # number+unit tokens (「7天」, 「15个工作日」) so amounts and periods match as a whole
    seen = set(tokens)
    for match in _NUM_UNIT_RE.finditer(norm):
        if match.group(0) not in seen:
            tokens.append(match.group(0))
        if match.group(1) not in seen:
            tokens.append(match.group(1))
    return tokens


_CJK_RUN_RE = re.compile(r"[\u4e00-\u9fff]{2,}")


def cjk_bigrams(text: str) -> list[str]:
    """Return the overlapping Chinese character bigrams of the normalised text."""
    out: list[str] = []
    for run in _CJK_RUN_RE.findall(normalize_text(text)):
        out.extend(run[i:i + 2] for i in range(len(run) - 1))
    return out


def bm25_terms(text: str) -> list[str]:
    """Return the BM25 terms of ``text``: jieba tokens plus Chinese character bigrams.

    Bigrams let colloquial spellings meet policy wording when jieba segments them differently
    (「退钱」 vs 「退款」 share nothing, but 「内裤拆开」 and 「拆封」 or 「几天到」 and 「到账」
    share bigrams); on the dev set they raise BM25 chunk MRR@10 by about 5 points (see the
    retrieval benchmark report). A bigram equal to a two-character jieba word simply adds to
    that word's term frequency (measured slightly better than keeping them apart).
    """
    return tokenize(text) + cjk_bigrams(text)


@lru_cache(maxsize=4096)
def tokenize_query(text: str) -> tuple[str, ...]:
    """Return :func:`bm25_terms` of a query, cached (queries repeat in chat and benchmarks)."""
    return tuple(bm25_terms(text))


@lru_cache(maxsize=4096)
def place_terms(text: str) -> tuple[str, ...]:
    """Return BM25 terms of the province-level regions of the cities ``text`` names.

    Policies list delivery times and fees by province or region while customers name their
    city: for 「寄到大连多久」 this returns the terms of 「辽宁」 (see
    :mod:`knowledge.gazetteer`). Regions the text already names are left out; text without a
    known city gives ``()``. The caller decides how much these terms weigh.
    """
    regions = expand_places(normalize_text(text))
    return tuple(bm25_terms(" ".join(regions))) if regions else ()


_OLD_VERSION_RE = re.compile(
    r"旧版|老版|上一版|之前的版本|以前的版本|\d{4}年?版|[旧老]的?(?:规则|政策|条款|标准|规定)"
    r"|(?:以前|之前|原来|当时)的?(?:规则|政策|条款|标准|规定)"
)


def asks_for_old_version(text: str) -> bool:
    """Return True when ``text`` explicitly asks about an old version of a policy.

    「旧版本的规定是什么」, 「2023版的条款」 and 「按老规定来」 do;
    「以旧换新」 and 「以前买过」 do not. Search uses it to skip the demotion of
    superseded documents for such questions.
    """
    return bool(_OLD_VERSION_RE.search(normalize_text(text)))


_CALENDAR_DATE_RE = re.compile(r"(?:\d{4}|[去前今])年|(?<![个\d])(?:\d{1,2}|[一二三四五六七八九十]{1,2})月(?:份|\d|底|初|中|[以之]?[前后])?")


def names_a_calendar_date(text: str) -> bool:
    """Return True when ``text`` dates something by the calendar (「去年10月」「九月份」「2024年」).

    Such a question may be governed by an older version of a policy (the one in force on that
    date), so search lets the old versions compete on equal terms; which one governs is decided
    after retrieval (``strategies.rules.versions``). A span from now (「3个月内」) dates nothing.
    """
    return bool(_CALENDAR_DATE_RE.search(normalize_text(text)))
