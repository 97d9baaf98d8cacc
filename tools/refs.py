r"""Record references in a customer's message, read against the id format a tool declares.

Customers write order ids in many ways: 「SO2026112800104」, 「so 2026112800104」, the digits
alone (「订单2026112800104到哪了」), full-width digits, a zero-width space pasted from a chat app,
or only part of it (「尾号0104的订单」). :func:`find_refs` reads them all against the id
pattern of the tool's schema (``ToolSpec.id_pattern()``, e.g. ``^SO\d{13}$``):

* ``exact``: the canonical id (prefix upper-cased, separators removed) matches the pattern;
* ``partial``: a fragment that cannot be a whole id (too few or too many digits, a suffix
  after 「尾号」) — it must be resolved against the customer's OWN records
  (:func:`match_fragment`): one match is that record, several or none is a question back.

A bare number counts only when it is as long as a whole id or follows an order cue
(「订单」「单号」「尾号」), so amounts, dates and phone numbers are never taken for ids.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

# Invisible characters a paste can carry inside an id (zero-width space/joiners, word joiner, BOM).
_INVISIBLE_RE = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u00ad]")
_PREFIX_RE = re.compile(r"^\^?([A-Za-z]+)")
_DIGITS_RE = re.compile(r"\\d\{(\d+)\}")
# A reference: optional letters, then digits possibly broken by single spaces or hyphens.
_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]{1,4})?[\s:：#-]?(\d(?:[\d]|[\s-](?=\d))*\d)(?![0-9])")
# Words right before a bare number that make it a record reference.
_CUE_RE = re.compile(r"(?:订单|单号|订单号|编号|尾号|后四位|后几位|末尾|结尾是?|号码)[是为:：\s]*$")
_SUFFIX_CUE_RE = re.compile(r"(?:尾号|后四位|后几位|末尾|结尾是?)[是为:：\s]*$")
MIN_FRAGMENT_DIGITS = 4  # fewer digits can mean too many records: never matched, always asked
MIN_CUED_DIGITS = 2  # after an order cue (「尾号01」) even a short number is a (too short) reference


@dataclass(frozen=True)
class Ref:
    """One reference to a record in the message."""

    kind: Literal["exact", "partial"]
    value: str  # exact: the canonical id; partial: the digits written
    raw: str  # the text as written (after invisible characters were removed)
    suffix: bool = False  # written as the id's ending (「尾号0104」)


def clean_text(text: str) -> str:
    """Return ``text`` with invisible characters removed and full-width forms made ASCII (NFKC)."""
    return unicodedata.normalize("NFKC", _INVISIBLE_RE.sub("", text))


def id_shape(pattern: str | None) -> tuple[str, int | None]:
    r"""Return (literal letter prefix, digit count) of an id pattern such as ``^SO\d{13}$``."""
    if not pattern:
        return "", None
    prefix = _PREFIX_RE.match(pattern)
    digits = _DIGITS_RE.search(pattern)
    return (prefix.group(1).upper() if prefix else ""), (int(digits.group(1)) if digits else None)


def find_refs(text: str, pattern: str | None) -> list[Ref]:
    """Return the record references in ``text`` read against the id ``pattern`` (in order, unique).

    Args:
        text: The customer's message.
        pattern: The id's regular expression from the tool schema; None finds nothing.

    """
    if not pattern:
        return []
    prefix, _ = id_shape(pattern)
    compiled = re.compile(pattern)
    clean = clean_text(text)
    refs: list[Ref] = []
    for match in _TOKEN_RE.finditer(clean):
        letters, digits = (match.group(1) or "").upper(), re.sub(r"[\s-]", "", match.group(2))
        if letters and letters != prefix:
            continue  # another kind of number (a tracking number, a model name)
        before = clean[: match.start()]
        canonical = (prefix or letters) + digits
        if compiled.fullmatch(canonical):
            refs.append(Ref("exact", canonical, match.group(0).strip()))
        elif letters or (_CUE_RE.search(before) and len(digits) >= MIN_CUED_DIGITS):
            refs.append(Ref("partial", digits, match.group(0).strip(),
                            suffix=bool(_SUFFIX_CUE_RE.search(before))))
    unique: dict[tuple[str, str], Ref] = {}
    for ref in refs:
        unique.setdefault((ref.kind, ref.value), ref)
    return list(unique.values())


def match_fragment(ref: Ref, own_ids: Iterable[str]) -> list[str]:
    """Return the customer's own ids that ``ref`` can mean (never anyone else's).

    A suffix reference matches ids ending with its digits; any other fragment matches ids whose
    digits contain it (at least ``MIN_FRAGMENT_DIGITS`` digits; a longer-than-possible fragment
    matches nothing).
    """
    if len(ref.value) < MIN_FRAGMENT_DIGITS:
        return []
    out = []
    for own in own_ids:
        digits = re.sub(r"\D", "", own)
        if (digits.endswith(ref.value) if ref.suffix else ref.value in digits):
            out.append(own)
    return out


