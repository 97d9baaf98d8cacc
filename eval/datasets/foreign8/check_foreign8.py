"""Validate the eighth foreign-KB evaluation set (沄泽银行信用卡); standard library only.

Checks: KB front matter fields and ids (= file names); supersedes/superseded pairs;
question fields, unique ids, gold documents exist, every gold fact occurs verbatim in one
of its gold documents; retrieval.jsonl repeats the answerable questions (keys id, query, gold_doc_ids); minimum counts
(documents >= 22, tables >= 12, exactly 2 superseded, answerable >= 100, unanswerable >= 40, oos = 8).

Usage: python3 check_foreign8.py   (exit status 0 = pass)
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
KB_DIR = HERE / "kb"
FIELDS = ("id", "title", "version", "effective_date", "status", "category", "tags")
MIN_ANSWERABLE, MIN_UNANSWERABLE, N_OOS = 100, 40, 8
MIN_DOCS, MIN_TABLES, N_SUPERSEDED = 22, 12, 2
KINDS = {"text", "table", "regime", "situation", "faq", "multi", "steps", "superseded"}
MIN_SUPERSEDED_QS = 4


def parse(path: Path) -> tuple[dict[str, str], str]:
    """Return (front matter, body) of a KB file."""
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        raise ValueError(f"{path.name}: no front matter")
    head, sep, body = text[4:].partition("\n---\n")
    if not sep:
        raise ValueError(f"{path.name}: front matter not closed")
    fields = {}
    for line in head.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            fields[key.strip()] = value.strip()
    return fields, body


def load_jsonl(path: Path, errors: list[str]) -> list[dict]:
    """Read a JSONL file; malformed lines become errors."""
    rows: list[dict] = []
    if not path.exists():
        errors.append(f"{path.name}: missing")
        return rows
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                errors.append(f"{path.name}:{n}: bad JSON ({exc})")
    return rows


def main() -> int:
    errors: list[str] = []
    docs: dict[str, tuple[dict[str, str], str]] = {}
    tables = 0
    for path in sorted(KB_DIR.glob("*.md")):
        try:
            fm, body = parse(path)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        for key in FIELDS:
            if not fm.get(key):
                errors.append(f"{path.name}: front matter lacks {key}")
        if fm.get("id") != path.stem:
            errors.append(f"{path.name}: id {fm.get('id')!r} differs from file name")
        if fm.get("status") not in ("current", "superseded"):
            errors.append(f"{path.name}: status must be current or superseded")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", fm.get("effective_date", "")):
            errors.append(f"{path.name}: effective_date is not YYYY-MM-DD")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", fm.get("effective_date", "")) or not fm.get("effective_date", "").startswith(("2025", "2026")):
            errors.append(f"{path.name}: effective_date must be in 2025-2026")
        if not re.fullmatch(r"\[.+\]", fm.get("tags", "")):
            errors.append(f"{path.name}: tags must be a [list]")
        tables += sum(1 for line in body.splitlines() if re.match(r"^\|\s*-{3}", line))
        docs[path.stem] = (fm, body)

    # supersedes / superseded pairs
    superseded = {d for d, (fm, _) in docs.items() if fm.get("status") == "superseded"}
    linked = set()
    for d, (fm, body) in docs.items():
        old = fm.get("supersedes")
        if not old:
            continue
        linked.add(old)
        if fm.get("status") != "current":
            errors.append(f"{d}: supersedes {old} but is not current")
        if old not in docs:
            errors.append(f"{d}: supersedes unknown doc {old}")
            continue
        ofm = docs[old][0]
        if ofm.get("status") != "superseded":
            errors.append(f"{d}: supersedes {old}, whose status is not superseded")
        if old != f"{d}-v1":
            errors.append(f"{d}: superseded doc should be named {d}-v1")
        if ofm.get("effective_date", "") >= fm.get("effective_date", ""):
            errors.append(f"{old}: effective_date not older than {d}")
        if "仍按本版" not in docs[old][1]:
            errors.append(f"{old}: does not state when it still applies")
    for d in sorted(superseded - linked):
        errors.append(f"{d}: superseded but no current document supersedes it")

    # questions
    qs = load_jsonl(HERE / "questions.jsonl", errors)
    ids = Counter(q.get("id") for q in qs)
    errors += [f"questions: duplicate id {i}" for i, c in ids.items() if c > 1]
    n_ans = n_un = n_oos = 0
    for q in qs:
        qid = q.get("id")
        if not re.fullmatch(r"r\d{3}", str(qid)):
            errors.append(f"{qid}: ids look like r001")
        for key in ("question", "kind"):
            if not isinstance(q.get(key), str) or not q.get(key):
                errors.append(f"{qid}: missing {key}")
        gold = q.get("gold_doc_ids")
        if not isinstance(gold, list):
            errors.append(f"{qid}: gold_doc_ids must be a list")
            gold = []
        for d in gold:
            if d not in docs:
                errors.append(f"{qid}: unknown gold doc {d!r}")
        if q.get("answerable") is True:
            n_ans += 1
            if q.get("kind") not in KINDS:
                errors.append(f"{qid}: unknown answerable kind {q.get('kind')!r}")
            facts = q.get("gold_facts")
            if not gold or not isinstance(facts, list) or not facts:
                errors.append(f"{qid}: answerable needs gold_facts and gold_doc_ids")
                continue
            bodies = [docs[d][1] for d in gold if d in docs]
            for fact in facts:
                if not any(fact in b for b in bodies):
                    errors.append(f"{qid}: gold fact {fact!r} not verbatim in {gold}")
        elif q.get("answerable") is False:
            if q.get("gold_facts"):
                errors.append(f"{qid}: unanswerable must not have gold_facts")
            if q.get("kind") == "oos":
                n_oos += 1
                if gold:
                    errors.append(f"{qid}: oos must have empty gold_doc_ids")
            else:
                n_un += 1
                if not str(q.get("kind")).startswith("unanswerable:"):
                    errors.append(f"{qid}: unanswerable kind must be unanswerable:<topic>")
                if not gold or not q.get("why"):
                    errors.append(f"{qid}: related unanswerable needs gold_doc_ids and why")
        else:
            errors.append(f"{qid}: answerable must be true or false")

    # retrieval
    rets = load_jsonl(HERE / "retrieval.jsonl", errors)
    answerable = [q for q in qs if q.get("answerable") is True]
    if len(rets) != len(answerable):
        errors.append(f"retrieval: {len(rets)} lines for {len(answerable)} answerable questions")
    for q, r in zip(answerable, rets):
        if set(r) != {"id", "query", "gold_doc_ids"}:
            errors.append(f"retrieval: line for {q.get('id')} must have exactly id, query, gold_doc_ids")
        if r.get("id") != "r" + str(q.get("id")):
            errors.append(f"retrieval: id {r.get('id')!r} should be r{q.get('id')}")
        if r.get("query") != q.get("question") or r.get("gold_doc_ids") != q.get("gold_doc_ids"):
            errors.append(f"retrieval: line for {q.get('id')} does not repeat its question/docs")
    for r in rets:
        for d in r.get("gold_doc_ids", []) or ["<none>"]:
            if d not in docs:
                errors.append(f"retrieval: unknown doc {d!r}")

    n_sup_q = sum(1 for q in answerable if q.get("kind") == "superseded")
    if n_sup_q < MIN_SUPERSEDED_QS:
        errors.append(f"count: superseded questions {n_sup_q} < {MIN_SUPERSEDED_QS}")
    for q in answerable:
        if q.get("kind") == "superseded" and not any(docs.get(d, ({}, ""))[0].get("status") == "superseded" for d in q.get("gold_doc_ids", [])):
            errors.append(f"{q.get('id')}: superseded question must cite a superseded document")
    if len(docs) < MIN_DOCS:
        errors.append(f"count: documents {len(docs)} < {MIN_DOCS}")
    if tables < MIN_TABLES:
        errors.append(f"count: tables {tables} < {MIN_TABLES}")
    if len(superseded) != N_SUPERSEDED:
        errors.append(f"count: superseded documents {len(superseded)} != {N_SUPERSEDED}")
    if n_ans < MIN_ANSWERABLE:
        errors.append(f"count: answerable {n_ans} < {MIN_ANSWERABLE}")
    if n_un < MIN_UNANSWERABLE:
        errors.append(f"count: related unanswerable {n_un} < {MIN_UNANSWERABLE}")
    if n_oos != N_OOS:
        errors.append(f"count: oos {n_oos} != {N_OOS}")

    print(f"documents            {len(docs)} ({len(docs) - len(superseded)} current, {len(superseded)} superseded)")
    print(f"tables               {tables}")
    print(f"questions            {len(qs)}")
    print(f"answerable           {n_ans}  (min {MIN_ANSWERABLE})")
    print(f"related unanswerable {n_un}  (min {MIN_UNANSWERABLE})")
    print(f"out of scope         {n_oos}  (exactly {N_OOS})")
    print(f"retrieval queries    {len(rets)}")
    print(f"superseded questions {n_sup_q}  (min {MIN_SUPERSEDED_QS})")
    for e in errors:
        print("ERROR", e)
    print("PASS" if not errors else f"FAIL ({len(errors)} errors)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
