"""``csagent verify``: run the answer verifier alone, for answers generated elsewhere.

Input: JSON on stdin (one object, a JSON array, or JSONL) or ``--input FILE.jsonl``; each item
``{"question", "answer", "evidence": [{"id", "text"}, ...]}``. Output: one JSON line per valid
item, ``{"overall": "pass"|"fail"|"need_recheck", "claims": [{"claim", "status",
"evidence_ids"}, ...]}`` (plus the item's ``"id"`` when it had one). Bad lines are reported on
stderr with their line number and skipped; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from csagent.errors import UsageError
from strategies.rules.hygiene import clean_text

HELP = "check answers against their evidence with the verifier alone (JSON in, JSON lines out)"
logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the command's arguments."""
    parser.add_argument("--input", type=Path, default=None, metavar="FILE.jsonl",
                        help="read items from this JSONL file instead of stdin")
    parser.add_argument("--offline", action="store_true",
                        help="code checks only, even when an LLM endpoint is configured")


def validate_item(item: Any) -> dict[str, Any]:
    """Return ``item`` checked as a verify input, or raise ``ValueError`` saying what is wrong.

    Args:
        item: A decoded JSON value.

    Returns:
        ``{"question", "answer", "evidence", "id"?}`` with ``evidence`` items ``{"id", "text", ...}``.

    """
    if not isinstance(item, dict):
        raise ValueError("expected a JSON object")
    question, answer, evidence = item.get("question", ""), item.get("answer"), item.get("evidence")
    if not isinstance(question, str):
        raise ValueError('"question" must be a string')
    if not isinstance(answer, str) or not answer.strip():
        raise ValueError('"answer" must be a non-empty string')
    if not isinstance(evidence, list):
        raise ValueError('"evidence" must be a list of {"id", "text"} objects')
    clean: list[dict[str, Any]] = []
    for i, ev in enumerate(evidence):
        if not isinstance(ev, dict) or not isinstance(ev.get("id"), str | int) \
                or not isinstance(ev.get("text"), str):
            raise ValueError(f'evidence[{i}] must be an object with string "id" and "text"')
        clean.append({**ev, "id": clean_text(str(ev["id"])), "text": clean_text(ev["text"])})
    out: dict[str, Any] = {"question": clean_text(question), "answer": clean_text(answer),
                           "evidence": clean}
    if "id" in item:
        out["id"] = item["id"]
    return out


def iter_items(text: str) -> Iterator[tuple[int, Any, str | None]]:
    """Yield ``(line_number, decoded_value, error)`` from one JSON document or JSONL text.

    A whole-text JSON object or array counts as line 1 (array items get their index + 1).
    """
    stripped = text.strip()
    if not stripped:
        return
    if stripped[0] in "{[" and "\n" in stripped:
        try:
            whole = json.loads(stripped)
        except (json.JSONDecodeError, RecursionError):
            whole = None
        if isinstance(whole, dict):
            yield 1, whole, None
            return
        if isinstance(whole, list):
            for i, value in enumerate(whole, 1):
                yield i, value, None
            return
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, None, f"invalid JSON ({exc.msg} at column {exc.colno})"
            continue
        except RecursionError:
            yield number, None, "invalid JSON (nested too deeply)"
            continue
        yield number, value, None


def _output(result: Mapping[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    claims = [{"claim": c.get("claim", ""), "status": c.get("status", "unknown"),
               "evidence_ids": list(c.get("evidence_ids") or [])} for c in result.get("claims", [])]
    out: dict[str, Any] = {"overall": result.get("overall", "need_recheck"), "claims": claims}
    if "id" in item:
        out["id"] = item["id"]
    return out


def run(args: argparse.Namespace) -> int:
    """Verify every item; return 0, or 1 when some lines were bad."""
    from csagent.config import Settings
    from strategies.combined import check_answer

    if args.input is not None:
        try:
            text = args.input.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {args.input}: {exc}") from None
    else:
        if sys.stdin.isatty():
            raise UsageError("give --input FILE.jsonl or pipe JSON on stdin")
        buffer = getattr(sys.stdin, "buffer", None)
        try:
            text = buffer.read().decode("utf-8") if buffer is not None else sys.stdin.read()
        except UnicodeDecodeError as exc:
            raise UsageError(f"stdin is not valid UTF-8 (byte {exc.start + 1})") from None
    llm = None
    settings = Settings.from_env()
    if not args.offline and settings.llm_configured:
        from csagent.llm import build_chat_model

        llm = build_chat_model(settings)
    bad = good = 0
    for number, value, error in iter_items(text):
        if error is None:
            try:
                item = validate_item(value)
            except ValueError as exc:
                error = str(exc)
        if error is not None:
            bad += 1
            sys.stderr.write(f"line {number}: {error}; skipped\n")
            continue
        result = check_answer(item["question"], item["answer"], item["evidence"], llm=llm)
        sys.stdout.write(json.dumps(_output(result, item), ensure_ascii=False) + "\n")
        sys.stdout.flush()
        good += 1
    if good == 0 and bad == 0:
        raise UsageError("no input items")
    return 1 if bad else 0
