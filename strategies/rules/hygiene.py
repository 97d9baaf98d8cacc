"""Evidence hygiene: text that must never be relayed to a customer, found by its form.

Three classes of passage are screened, each by the *form* of the text, never by a topic:

- ``instruction``: text addressed to the assistant or the model rather than to a customer
  (「忽略之前的所有规则」, 「【系统指令】」, "ignore previous instructions", "you are now …",
  chat-template role markers, requests to reveal the prompt);
- ``credential``: a request that someone hand over a secret (password, 验证码, card number,
  CVV …) — a sharing verb and a secret noun in one clause, not negated (「客服不会索要您的验证码」
  is a warning, not a request);
- ``contact``: a contact point (URL or domain, email, phone number, QQ / WeChat / Telegram id)
  that is not on the operator's allow-list (:class:`Allowlist`).

Where it is applied: :func:`screen_evidence` on every knowledge-base evidence item at answer
time (an item with an instruction or a credential request is dropped whole: the document is
untrusted; a sentence with an unknown contact point is cut), :func:`screen_tool_text` on tool
data (a customer's own after-sales reason is data, never markup: fake 【来源:…】 tags are
neutralised and instruction / credential / contact sentences cut), and :func:`scan` at ingest,
which reports such passages. :func:`clean_text` turns any input into valid text (lone
surrogates, control characters) before it is traced or stored.

The allow-list comes from ``CSAGENT_CONTACT_ALLOWLIST`` (comma-separated entries, or ``@FILE``
with one entry per line) and else from ``<data dir>/contact-allowlist.txt`` or the demo shop's
``data/contact-allowlist.txt``; see :func:`load_allowlist`.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, TypedDict, TypeVar, cast

FindingKind = Literal["instruction", "credential", "contact"]
E = TypeVar("E", bound=Mapping[str, Any])
MASK = "（已隐去）"
KINDS: tuple[FindingKind, ...] = ("instruction", "credential", "contact")
ALLOWLIST_ENV = "CSAGENT_CONTACT_ALLOWLIST"
ALLOWLIST_FILE = "contact-allowlist.txt"
DEMO_ALLOWLIST = Path(__file__).resolve().parents[2] / "data" / ALLOWLIST_FILE
# Evidence kinds dropped whole when found in a knowledge-base passage.
DROP_KINDS: frozenset[str] = frozenset({"instruction", "credential"})


class Finding(TypedDict):
    """One screened span: its class, the matched text and where it is."""

    kind: FindingKind
    text: str
    start: int
    end: int


# --- input text ---------------------------------------------------------------------------------

_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(text: str) -> str:
    r"""Return ``text`` as valid, printable Unicode: lone surrogates → U+FFFD, controls removed.

    Python strings may hold lone surrogates (``"\ud800"`` from JSON, or undecodable bytes
    smuggled in by ``surrogateescape``); they cannot be encoded as UTF-8, so a trace, a
    checkpoint or a terminal write of them fails. Tabs and newlines are kept.
    """
    if not isinstance(text, str):
        text = str(text)
    return _CONTROL_RE.sub("", _SURROGATE_RE.sub("\ufffd", text))


# --- patterns -----------------------------------------------------------------------------------

_OPEN, _CLOSE = r"[【\[［<〈《(（{]", r"[】\]］>〉》)）}]"
_ROLE_WORDS = (r"(?:系统指令|系统提示|系统消息|系统设定|指令|提示词|管理员指令|开发者|"
               r"system|instructions?|prompt|developer|assistant|admin|jailbreak|"
               r"im_start|im_end|INST|SYS)")
_INSTRUCTION_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p, re.I) for p in (
    # Chinese: overriding the rules the assistant follows
    r"(?:忽略|无视|忘记|忘掉|忘了|不要理会|不用理会|不必遵守|不要遵守|跳过|绕过|覆盖|推翻|解除)"
    r"(?:掉)?(?:你|您)?(?:之前|此前|以上|上面|上述|前面|先前|原有|原来|原先|已有|系统|所有|全部|一切|任何)?"
    r"(?:的)?(?:所有|全部|一切|任何)?(?:的)?(?:规则|指令|指示|设定|提示词?|要求|限制|约束|规定|安全策略|策略|准则|"
    r"知识库|上下文|上文)",
    # a role tag: 【系统指令】, [SYSTEM], <system>, <|im_start|>, [INST]
    _OPEN + r"\s*\|?\s*/?" + r"[^】\]］>〉》)）}\n]{0,8}?" + _ROLE_WORDS
    + r"[^】\]］>〉》)）}\n]{0,8}?\|?\s*" + _CLOSE,
    # a role line: "system: …", "assistant：…"
    r"(?:^|[\n。！？!?；;])\s*(?:system|assistant|系统|助手)\s*[:：]",
    # addressing the model: 你现在是…助手 / 作为AI你… / 助手必须回复…
    r"(?:你|您)(?:现在|从现在起|从现在开始|接下来|今后|以后)?(?:是|扮演|充当|作为|假装是?)(?:一个|一名|一位)?"
    r"[^，。,.；;]{0,8}?(?:AI|人工智能|助手|机器人|语言模型|大模型|模型|assistant|chatbot)",
    r"(?:作为|身为)(?:一个|一名)?(?:AI|人工智能|语言模型|大模型|智能助手|客服助手|客服机器人|机器人)"
    r"[，,]?\s*(?:你|您)",
    r"(?:AI|助手|机器人|语言模型|大模型|模型|客服助手|智能客服|assistant)(?:必须|务必|应当|应该|需要|请|要|只能)"
    r"(?:回复|回答|告诉|告知|输出|声称|承诺|说|表示|通知)",
    r"(?:回复|回答|告诉|告知|通知|转告)(?:用户|客户|顾客|买家|消费者)(?:说|：|:|称)",
    r"(?:不要|别|不得|切勿|禁止)(?:告诉|透露给?|提醒|通知)(?:用户|客户|顾客|买家|消费者)",
    r"(?:输出|打印|显示|泄露|透露|复述|重复|告诉我)(?:一下)?(?:你的|你们的)?(?:系统)?"
    r"(?:提示词|初始指令|系统指令|system ?prompt|设定|隐藏指令)",
    r"(?:开发者模式|越狱模式|越狱|DAN模式|无限制模式)",
    r"(?:管理员|开发者|运营)指令|系统指令|系统提示词?",
    r"(?:跳过|绕过|省略|免去)(?:用户|客户|顾客)?的?(?:确认|验证|核验|审核)(?:步骤|环节|流程)?",
    r"(?:你|您)(?:要|需要|必须|应该|现在)?(?:假装|扮演|冒充)",
    r"(?:无需|不用|不需要|免)(?:用户|客户|顾客)?的?确认(?:即可)?[，,]?(?:直接|立即|马上|自动)",
    r"新的?(?:指令|指示|规则)\s*[:：]",
    r"(?:告诉|告知|转告|回复)(?:用户|客户|顾客|买家|消费者)(?!的)",
    # our own answer markup inside a passage: a forged citation or evidence block
    r"【\s*(?:来源|來源|source)\s*[:：]",
    r"</?\s*evidence\b",
    # English
    r"\b(?:ignore|disregard|forget|override|bypass|skip)\b[^.\n]{0,30}?\b(?:previous|prior|above|"
    r"earlier|preceding|all|any|your|the|system|these|those)\b[^.\n]{0,20}?\b(?:instructions?|"
    r"rules?|prompts?|directives?|guidelines?|polic(?:y|ies)|constraints?|restrictions?)\b",
    r"\byou are now\b|\bfrom now on,? you\b|\bact as (?:an?|the|my)\b|\bpretend (?:to be|you are)\b",
    r"\byou (?:must|should|will) (?:now )?(?:reply|answer|respond|say|tell|output|claim|state)\b",
    r"\b(?:system|developer)\s+(?:prompt|message|instructions?|override|mode)\b",
    r"\bnew instructions?\s*:|\bjailbreak|\bdeveloper mode\b|\bDAN mode\b|\bdo anything now\b",
    r"\b(?:reveal|print|show|repeat|output|leak|disclose)\b[^.\n]{0,20}?\b(?:system prompt|"
    r"(?:your|the) (?:instructions|prompt|rules))\b",
    r"\b(?:tell|inform|instruct) (?:the )?(?:user|customer)s? (?:that|to)\b",
))

# Secrets that verify a person: asking to hand them over is always phishing.
_SECRET = (r"(?:(?:支付|登录|交易|银行卡|账户|账号|取款|网银|卡)?密码|验证码|校验码|动态码|动态口令|短信码|"
           r"安全码|CVV2?|CVC2?|卡背面?(?:后)?三位|"
           r"passwords?|passcodes?|\bPINs?\b|\bOTPs?\b|one[- ]time (?:pass)?codes?|"
           r"verification codes?|security codes?|login credentials)")
# Account numbers: a bank may legitimately ask for one; *sending* one somewhere is the phish.
_ACCOUNT = (r"(?:银行卡号|信用卡号|借记卡号|卡号|银行账号|card numbers?|credit card (?:number|details)|"
            r"bank account (?:number|details))")
_SEND = (r"(?:发送|发给|发到|发至|发过来|私信|转发|截图|加我|联系|"
         r"\bsend\b|\bemail\b|\btext\b|\bforward\b|\bDM\b|\bmessage\b)")
_SHARE = (r"(?:提供|发送|发给|发到|发至|发过来|告诉|告知|报给|报出|报一下|透露|私信|回复|转发|填写到|填到|"
          r"输入到|输入至|提交到|提交给|截图|索要|索取|核对|给我|给客服|交给|"
          r"\bsend\b|\bprovide\b|\bshare\b|\btell\b|\bgive\b|\breply with\b|\btext\b|\bemail\b|"
          r"\bsubmit\b|\benter\b|\bconfirm\b|\bverify\b|\bforward\b)")
_NEGATION = re.compile(r"不会|绝不|决不|从不|从来不|不要|不得|请勿|切勿|勿|禁止|谨防|警惕|不可|不能|严禁|"
                       r"\bnever\b|\bnot\b|\bdon't\b|\bdo not\b|\bwon't\b|\bwill not\b|\bno one\b|"
                       r"\bnobody\b", re.I)
_SECRET_RE = re.compile(_SECRET, re.I)
_ACCOUNT_RE = re.compile(_ACCOUNT, re.I)
_SHARE_RE = re.compile(_SHARE, re.I)
_SEND_RE = re.compile(_SEND, re.I)
_CLAUSE_RE = re.compile(r"[^，,。；;！!？?\n]+")

_TLDS = r"(?:com|cn|net|org|top|xyz|vip|cc|io|info|shop|site|online|link|me|co|club|biz|app|ru|tk)"
_CONTACT_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("email", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")),
    ("url", re.compile(r"(?:https?://|hxxps?://|www\.)[^\s<>\"'，。；、）)】」]+", re.I)),
    ("url", re.compile(r"(?<![@\w.-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+" + _TLDS
                       + r"\b(?:/[^\s，。；、）)】」]*)?", re.I)),
    ("phone", re.compile(r"(?<![A-Za-z0-9])(?:\+?86[- ]?)?1[3-9]\d(?:[- ]?\d{4}){2}(?!\d)")),
    ("phone", re.compile(r"(?<![A-Za-z0-9])[48]00[- ]?\d{3}[- ]?\d{4}(?!\d)")),
    ("phone", re.compile(r"(?<![A-Za-z0-9-])0\d{2,3}-\d{7,8}(?!\d)")),
    ("phone", re.compile(r"(?<![A-Za-z0-9])\+\d{1,3}[- ]?\d{3,4}[- ]?\d{3,4}[- ]?\d{0,4}(?!\d)")),
    ("handle", re.compile(r"(?:QQ|扣扣|企鹅)(?:号|群|号码)?\s*[:：]?\s*\d{5,12}", re.I)),
    ("handle", re.compile(r"(?:微信|weixin|wechat|威信|薇信|V信|vx|wx)(?:号|ID|账号)?\s*[:：]?\s*"
                          r"[A-Za-z][-_A-Za-z0-9]{5,19}", re.I)),
    ("handle", re.compile(r"(?:telegram|whatsapp|飞机|TG|line)\s*(?:号|ID)?\s*[:：]\s*@?[\w.-]{4,}",
                          re.I)),
)
_HANDLE_VALUE_RE = re.compile(r"([A-Za-z0-9][\w.-]*)\s*$")


# --- allow-list ---------------------------------------------------------------------------------

def _digits(text: str) -> str:
    digits = re.sub(r"\D", "", text)
    return digits[2:] if digits.startswith("86") and len(digits) == 13 else digits


@dataclass(frozen=True)
class Allowlist:
    """Contact points the operator vouches for: phone numbers, domains, emails and ids.

    Entries: a phone number in any spelling (``400-820-6688``), a domain (``example.com``,
    which also allows its subdomains and URLs), an email address, or an account id.
    """

    phones: frozenset[str] = field(default_factory=frozenset)
    domains: frozenset[str] = field(default_factory=frozenset)
    emails: frozenset[str] = field(default_factory=frozenset)
    handles: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def parse(cls, entries: Iterable[str]) -> Allowlist:
        """Build an allow-list from entries (blank lines and ``#`` comments are ignored)."""
        phones, domains, emails, handles = set(), set(), set(), set()
        for raw in entries:
            entry = raw.split("#", 1)[0].strip().lower()
            if not entry:
                continue
            if entry.startswith("@") and "." in entry:
                domains.add(entry[1:])  # "@example.com": every address at that domain
            elif "@" in entry and "." in entry.split("@")[-1]:
                emails.add(entry)
            elif re.fullmatch(r"\+?[\d\s()-]{5,}", entry):
                phones.add(_digits(entry))
            elif re.fullmatch(r"(?:https?://)?(?:[a-z0-9-]+\.)+[a-z]{2,}(?:/.*)?", entry):
                domains.add(re.sub(r"^https?://", "", entry).split("/")[0].removeprefix("www."))
            else:
                handles.add(entry.lstrip("@"))
        return cls(frozenset(phones), frozenset(domains), frozenset(emails), frozenset(handles))

    def allows(self, kind: str, value: str) -> bool:
        """Return True when the contact ``value`` of ``kind`` is on the list."""
        text = value.strip().lower()
        if kind == "phone":
            return _digits(text) in self.phones
        if kind == "email":
            return text in self.emails or text.split("@")[-1] in self.domains
        if kind == "url":
            host = re.sub(r"^(?:h(?:tt|xx)ps?://)", "", text).split("/")[0].split(":")[0]
            host = host.removeprefix("www.")
            return any(host == d or host.endswith("." + d) for d in self.domains)
        match = _HANDLE_VALUE_RE.search(text)
        return match is not None and match.group(1) in self.handles

    def __len__(self) -> int:
        return len(self.phones) + len(self.domains) + len(self.emails) + len(self.handles)


_ALLOW_CACHE: dict[tuple[str, str], Allowlist] = {}
_ALLOW_LOCK = threading.Lock()


def _read_entries(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def load_allowlist(data_dir: str | Path | None = None) -> Allowlist:
    """Return the operator's contact allow-list (cached per source).

    Order: ``CSAGENT_CONTACT_ALLOWLIST`` (comma-separated entries; ``@FILE`` reads a file of
    entries), else ``<data_dir>/contact-allowlist.txt`` (``data_dir`` defaults to
    ``CSAGENT_DATA_DIR``), else the demo shop's ``data/contact-allowlist.txt``, else empty
    (every contact point is then unknown).
    """
    env = os.environ.get(ALLOWLIST_ENV, "")
    base = data_dir if data_dir is not None else os.environ.get("CSAGENT_DATA_DIR", "")
    key = (env, str(base))
    with _ALLOW_LOCK:
        cached = _ALLOW_CACHE.get(key)
        if cached is not None:
            return cached
        entries: list[str] = []
        if env.strip():
            for part in env.split(","):
                part = part.strip()
                entries.extend(_read_entries(Path(part[1:]).expanduser())
                               if part.startswith("@") else [part])
        else:
            local = Path(base) / ALLOWLIST_FILE if base else None
            path = local if local is not None and local.is_file() else DEMO_ALLOWLIST
            entries = _read_entries(path)
        allow = _ALLOW_CACHE[key] = Allowlist.parse(entries)
        return allow


# --- scanning -----------------------------------------------------------------------------------

def _credential_findings(text: str) -> list[Finding]:
    out: list[Finding] = []
    for clause in _CLAUSE_RE.finditer(text):
        part = clause.group(0)
        asks = (_SECRET_RE.search(part) and _SHARE_RE.search(part)) \
            or (_ACCOUNT_RE.search(part) and _SEND_RE.search(part))
        if asks and not _NEGATION.search(part):
            out.append({"kind": "credential", "text": part.strip(), "start": clause.start(),
                        "end": clause.end()})
    return out


def scan(text: str, allow: Allowlist | None = None) -> list[Finding]:
    """Return every instruction, credential request and unknown contact point in ``text``.

    Args:
        text: Any text (a KB passage, a tool field, an answer draft).
        allow: The contact allow-list (None: :func:`load_allowlist`).

    Returns:
        Findings in text order (possibly overlapping).

    """
    if not text:
        return []
    allow = load_allowlist() if allow is None else allow
    return [Finding(**f) for f in _scan_cached(text, allow)]  # copies: callers may mutate


@lru_cache(maxsize=4096)
def _scan_cached(text: str, allow: Allowlist) -> tuple[Finding, ...]:
    """Scan once per (text, allow-list): KB passages come back turn after turn."""
    found: list[Finding] = []
    for pattern in _INSTRUCTION_PATTERNS:
        found.extend({"kind": "instruction", "text": m.group(0).strip(), "start": m.start(),
                      "end": m.end()} for m in pattern.finditer(text))
    found.extend(_credential_findings(text))
    taken: list[tuple[int, int]] = []
    for kind, pattern in _CONTACT_PATTERNS:
        for m in pattern.finditer(text):
            if any(s <= m.start() < e for s, e in taken):
                continue  # an email's domain is not a second finding
            taken.append((m.start(), m.end()))
            if not allow.allows(kind, m.group(0)):
                found.append({"kind": "contact", "text": m.group(0), "start": m.start(),
                              "end": m.end()})
    return tuple(sorted(found, key=lambda f: (f["start"], f["end"])))


def kinds_of(findings: Iterable[Finding]) -> list[str]:
    """Return the distinct finding kinds, in :data:`KINDS` order."""
    got = {f["kind"] for f in findings}
    return [k for k in KINDS if k in got]


_SENTENCE_RE = re.compile(r"[^。！？!?；;\n]*(?:[。！？!?；;]+|\n|$)")


def redact(text: str, findings: Iterable[Finding]) -> str:
    """Return ``text`` without the sentences that contain a finding (other sentences kept)."""
    spans = [(f["start"], f["end"]) for f in findings]
    if not spans:
        return text
    kept: list[str] = []
    for m in _SENTENCE_RE.finditer(text):
        if m.start() == m.end():
            continue
        if not any(s < m.end() and e > m.start() for s, e in spans):
            kept.append(m.group(0))
    return re.sub(r"\n{3,}", "\n\n", "".join(kept)).strip()


# --- markup in data -----------------------------------------------------------------------------

_TAG_RE = re.compile(r"【\s*(来源|來源|source)\s*[:：]", re.I)
_EVIDENCE_TAG_RE = re.compile(r"</?\s*evidence\b", re.I)


def neutralize_markup(text: str) -> str:
    """Return data text with answer markup defused: 【来源:x】 → （来源 x）, ``<evidence`` → ‹evidence.

    Text that comes from a customer or a backend (an after-sales reason, a product name) is
    data: it must not be read back as a citation of ours or as an evidence block.
    """
    text = _TAG_RE.sub(lambda m: f"（{m.group(1)} ", text)
    text = re.sub(r"（(来源|來源|source) ([^】\n]*)】", r"（\1 \2）", text, flags=re.I)
    return _EVIDENCE_TAG_RE.sub(lambda m: m.group(0).replace("<", "‹"), text)


# --- evidence -----------------------------------------------------------------------------------

def screen_evidence(item: E, allow: Allowlist | None = None) -> E | None:
    """Return a knowledge-base evidence item fit to relay, or None when it must be dropped.

    An item holding an instruction to the assistant or a credential request is dropped whole
    (its source is untrusted); sentences with a contact point not on the allow-list are cut
    (the item is dropped when nothing is left). The returned copy records what was removed in
    ``hygiene`` (kinds and matched texts), for the trace.
    """
    raw = clean_text(str(item.get("text") or ""))
    findings = scan(raw, allow)
    text = neutralize_markup(raw)
    if not findings:
        return item if text == item.get("text") else cast(E, {**item, "text": text})
    kinds = kinds_of(findings)
    if DROP_KINDS & set(kinds):
        return None
    kept = neutralize_markup(redact(raw, findings))
    if not kept.strip():
        return None
    return cast(E, {**item, "text": kept,
                    "hygiene": {"kinds": kinds, "removed": [f["text"] for f in findings][:10]}})


def screen_evidence_list(items: Iterable[E], allow: Allowlist | None = None) -> list[E]:
    """Apply :func:`screen_evidence` to knowledge items (tool items pass through unchanged)."""
    allow = load_allowlist() if allow is None else allow
    out: list[E] = []
    for item in items:
        if item.get("kind") == "tool":
            out.append(item)
            continue
        clean = screen_evidence(item, allow)
        if clean is not None:
            out.append(clean)
    return out


def mask(text: str, findings: Iterable[Finding]) -> str:
    """Return ``text`` with every finding's span replaced by 「（已隐去）」 (overlaps merged)."""
    spans = sorted((f["start"], f["end"]) for f in findings)
    out: list[str] = []
    pos = 0
    for start, end in spans:
        if end <= pos:
            continue
        start = max(start, pos)
        out.append(text[pos:start] + MASK)
        pos = end
    out.append(text[pos:])
    return "".join(out)


_TERMINATORS_RE = re.compile(r"\s*[。！？!?；;\n]+\s*")


def screen_tool_data(value: Any, allow: Allowlist | None = None) -> Any:
    """Return a tool result's data with every string made a safe, single-clause value.

    A string holding an instruction or a credential request is replaced whole by 「（已隐去）」
    (unknown contact points alone are masked), and its inner sentence terminators become
    「，」: a field value (a customer's after-sales reason, a backend note) is one fact of
    the record, not several sentences, so quoting it cannot split an answer into uncited
    sentences. Dicts and lists are copied; other values are returned as they are.
    """
    allow = load_allowlist() if allow is None else allow
    if isinstance(value, str):
        raw = clean_text(value)
        findings = scan(raw, allow)  # before defusing: a forged 【来源】 tag is itself hostile
        if DROP_KINDS & {f["kind"] for f in findings}:
            return MASK  # an instruction or a credential request: the whole value is hostile
        text = neutralize_markup(mask(raw, findings) if findings else raw)
        return _TERMINATORS_RE.sub("，", text.strip().rstrip("。！？!?；; \n")).strip("，")
    if isinstance(value, Mapping):
        return {k: screen_tool_data(v, allow) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [screen_tool_data(v, allow) for v in value]
    return value


def screen_tool_text(text: str, allow: Allowlist | None = None) -> str:
    """Return tool data text safe to state: markup neutralised, hostile spans masked.

    Unlike a KB passage, a tool result is never dropped (the customer must learn what the tool
    did) and its lines are kept whole (a line holds the ticket or order the answer reports);
    only the spans that carry an instruction, a credential request or an unknown contact point
    are replaced by 「（已隐去）」.
    """
    text = neutralize_markup(clean_text(text))
    findings = scan(text, allow)
    return mask(text, findings) if findings else text
