"""Generated test suites: leave-gold-out, swap, and the foreign knowledge base loader.

- *leave-gold-out*: every normal and distractor KB question is asked again with its gold
  documents excluded from retrieval (:class:`ExcludingRetriever`); the turn must decline unless
  its answer still states every gold fact (another document says it too).
- *swap*: a correct answer's value is swapped for another value of the same kind from the same
  evidence (a number with the same unit, a date, a region, a member tier: :func:`swaps`); the
  verifier must flag the swapped answer and pass the original.
- *foreign*: questions over a second knowledge base the project was never tuned on
  (:func:`load_foreign`); answerable cases carry ``gold_facts`` and ``gold_doc_ids``,
  unanswerable ones ``"answerable": false``.

Values are found with the evaluation's own extractor (:mod:`eval.facts`), never the product's.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval import facts as ef

logger = logging.getLogger(__name__)

FOREIGN_DIR = Path(__file__).resolve().parent / "datasets" / "foreign"
OVERFETCH = 4  # ask the inner retriever for this many times k, then drop excluded documents


class ExcludingRetriever:
    """Wrap a retriever so that the documents in ``excluded`` are never returned.

    ``excluded`` is set per case (``with retriever.excluding(doc_ids): ...``); everything else
    is delegated to the wrapped retriever. Thread-local, so concurrent cases do not mix.
    """

    def __init__(self, inner: Any) -> None:
        """Wrap ``inner`` (anything with ``search`` and ``get_chunk``)."""
        self.inner = inner
        self._local = threading.local()

    @property
    def excluded(self) -> frozenset[str]:
        """Return the document ids currently excluded."""
        return frozenset(getattr(self._local, "excluded", frozenset()))

    def excluding(self, doc_ids: Sequence[str]) -> _Exclusion:
        """Return a context manager that excludes ``doc_ids`` while it is active."""
        return _Exclusion(self, frozenset(str(d) for d in doc_ids))

    def search(self, query: str, *, k: int = 5, **kwargs: Any) -> list[Any]:
        """Return the top ``k`` hits of the wrapped retriever that are not excluded."""
        excluded = self.excluded
        if not excluded:
            return list(self.inner.search(query, k=k, **kwargs))
        hits = self.inner.search(query, k=k * OVERFETCH, **kwargs)
        return [h for h in hits if h.chunk.doc_id not in excluded][:k]

    def get_chunk(self, chunk_id: str) -> Any:
        """Return a chunk by id unless its document is excluded."""
        chunk = self.inner.get_chunk(chunk_id)
        return None if chunk is None or chunk.doc_id in self.excluded else chunk

    def __getattr__(self, name: str) -> Any:
        """Delegate everything else (``chunks``, ``documents``, …) to the wrapped retriever."""
        return getattr(self.inner, name)


@dataclass
class _Exclusion:
    retriever: ExcludingRetriever
    doc_ids: frozenset[str]

    def __enter__(self) -> ExcludingRetriever:
        self.retriever._local.excluded = self.doc_ids
        return self.retriever

    def __exit__(self, *exc: object) -> None:
        self.retriever._local.excluded = frozenset()


def leave_gold_out_cases(suites: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Return the leave-gold-out cases: normal and distractor KB questions with gold documents."""
    out: list[dict[str, Any]] = []
    for suite in ("normal", "distractor"):
        for case in suites.get(suite, []):
            if case.get("needs_tool") or not case.get("gold_doc_ids"):
                continue
            out.append({**case, "id": f"{suite}/{case['id']}", "source_suite": suite})
    return out


# --------------------------------------------------------------------------- swap

_KIND_WORDS: dict[str, tuple[str, ...]] = {"region": ef.REGIONS, "tier": ef.MEMBER_TIERS,
                                           "payment": ef.PAYMENT_METHODS}
_CITE_RE = re.compile(r"【来源[:：][^】]*】")


@dataclass(frozen=True)
class Swap:
    """One value swapped for another of the same kind from the same evidence."""

    kind: str
    original: str
    replacement: str
    answer: str


def _number_values(text: str) -> list[tuple[str, str]]:
    """Return (display value, unit) of the numbers in ``text`` as written after normalisation."""
    return [(str(n), n.unit) for n in ef.extract(text).numbers if n.unit]


def _surface_variants(value: str) -> list[str]:
    """Return the ways ``value`` (canonical, e.g. 「1-3工作日」, 「7天」) may be written in text."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?(.*)", value)
    if not match:
        return [value]
    low, high, unit = match.groups()
    units = [unit] + ([f"个{unit}"] if unit in ("工作日", "小时", "月", "自然日") else [])
    lows = [low] + ([_to_chinese(low)] if high is None and low.isdigit() and int(low) <= 99 else [])
    out: list[str] = []
    for u in units:
        if high is None:
            out += [f"{lo}{u}" for lo in lows] + [f"{low} {u}"]
        else:
            out += [f"{low}{sep}{high}{u}" for sep in ("-", "至", "~", "～", "到", "—")]
    return out


def _to_chinese(number: str) -> str:
    """Return a small integer in Chinese numerals (「15」 → 「十五」)."""
    digits = "零一二三四五六七八九"
    n = int(number)
    if n < 10:
        return digits[n]
    tens, ones = divmod(n, 10)
    return ("" if tens == 1 else digits[tens]) + "十" + (digits[ones] if ones else "")


def _replace_once(answer: str, original: str, replacement: str) -> str | None:
    """Replace the first written form of ``original`` outside citation tags, or None."""
    pieces = re.split(r"(【来源[:：][^】]*】)", answer)
    for variant in _surface_variants(original):
        pattern = rf"(?<![\d.]){re.escape(variant)}" if variant[:1].isdigit() else re.escape(variant)
        for i, piece in enumerate(pieces):
            if piece.startswith("【来源"):
                continue
            if re.search(pattern, piece, flags=re.IGNORECASE):
                pieces[i] = re.sub(pattern, replacement, piece, count=1, flags=re.IGNORECASE)
                return "".join(pieces)
    return None


def swaps(answer: str, evidence_texts: Sequence[str]) -> Iterator[Swap]:
    """Yield swapped variants of ``answer``: each value replaced by another one of its kind.

    For every number with a unit in the answer, the first number of the same unit (and another
    value) that the evidence states; for every date, another date of the evidence; for every
    region, tier or payment method, another one the evidence names. At most one swap per value.
    """
    plain = _CITE_RE.sub("", ef.normalize(answer))
    ev = "\n".join(evidence_texts)
    ev_facts = ef.extract(ev)
    ev_norm = ef.normalize(ev)
    seen: set[str] = set()
    stated = {v for v, _ in _number_values(answer)}
    for value, unit in _number_values(answer):
        others = [v for v, u in _number_values(ev) if u == unit and v not in stated]
        if others and value not in seen:
            seen.add(value)
            new = _replace_once(answer, value, others[0])
            if new is not None:
                yield Swap("number", value, others[0], new)
    for date in ef.extract(answer).dates:
        others = [d for d in ev_facts.dates if d not in ef.extract(answer).dates]
        if others and date not in seen:
            seen.add(date)
            new = _replace_once(answer, date, others[0])
            if new is not None:
                yield Swap("date", date, others[0], new)
    for kind, words in _KIND_WORDS.items():
        named = [w for w in words if w in plain]
        for word in named:
            others = [w for w in words if w in ev_norm and w not in plain and not (w in word or word in w)]
            if others and word not in seen:
                seen.add(word)
                new = _replace_once(answer, word, others[0])
                if new is not None:
                    yield Swap(kind, word, others[0], new)


def control(answer: str) -> str:
    """Return the unswapped control: the correct answer exactly as it was."""
    return answer


# --------------------------------------------------------------------------- foreign KB


def load_foreign(folder: Path = FOREIGN_DIR) -> tuple[list[dict[str, Any]], list[str]]:
    """Read ``<folder>/questions.jsonl``: one question per line.

    A case is answerable unless it says ``"answerable": false``; an answerable case needs
    ``gold_facts`` (a correct answer states them) and normally ``gold_doc_ids``. Bad lines are
    skipped and reported.

    Returns:
        ``(cases, errors)``.

    """
    path = folder / "questions.jsonl"
    cases: list[dict[str, Any]] = []
    errors: list[str] = []
    if not path.is_file():
        return [], [f"{path}: does not exist"]
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"{path.name}:{number}: invalid JSON ({exc.msg})")
            continue
        if not isinstance(case, dict) or not case.get("question"):
            errors.append(f"{path.name}:{number}: missing question")
            continue
        answerable = case.get("answerable", True) is not False
        if answerable and not case.get("gold_facts"):
            errors.append(f"{path.name}:{number}: answerable case without gold_facts")
            continue
        case.setdefault("id", f"f{number:03d}")
        case["answerable"] = answerable
        cases.append(case)
    return cases, errors


def foreign_kb_dir(folder: Path = FOREIGN_DIR) -> Path:
    """Return the foreign knowledge base folder (``kb/`` inside the foreign dataset)."""
    return folder / "kb"
