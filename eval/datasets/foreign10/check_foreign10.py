"""Validate the tenth foreign-KB evaluation set (青鸾速运); standard library only.

Checks: KB front matter fields and ids (= file names); supersedes/superseded pairs (the old
version must say when it still applies); question fields, unique ids and question texts, gold
documents exist, every gold fact occurs verbatim in one of its gold documents; retrieval.jsonl
repeats the answerable questions in order (keys id, query, gold_doc_ids); minimum counts
(documents >= 28, documents with a table >= 15, exactly 2 superseded, answerable >= 240,
unanswerable >= 60 of which related >= 55, out of scope >= 8, superseded questions >= 4) and
that every answerable kind is used.

Usage: python3 check_foreign10.py   (exit status 0 = pass)
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
MIN_DOCS, MIN_TABLE_DOCS, N_SUPERSEDED = 28, 15, 2
MIN_ANSWERABLE, MIN_UNANSWERABLE, MIN_RELATED, MIN_OOS = 240, 60, 55, 8
MIN_SUPERSEDED_QS = 4
KINDS = {"text", "table", "regime", "situation", "faq", "multi", "steps", "superseded"}
TABLE_RULE = re.compile(r"^\|\s*-{3}")


def parse(path: Path) -> tuple[dict[str, str], str]:
    """Return (front matter, body) of a KB file."""
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        raise ValueError(f"{path.name}: no front matter")
    head, sep, body = text[4:].partition("\n---\n")
    if not sep:
        raise ValueError(f"{path.name}: front matter not closed")
    fields: dict[str, str] = {}
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
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"{path.name}:{n}: bad JSON ({exc})")
            continue
        if not isinstance(row, dict):
            errors.append(f"{path.name}:{n}: not a JSON object")
            continue
        rows.append(row)
    return rows


def check_docs(errors: list[str]) -> tuple[dict[str, tuple[dict[str, str], str]], int, int]:
    """Parse the KB; return (docs, number of tables, number of documents with a table)."""
    docs: dict[str, tuple[dict[str, str], str]] = {}
    tables = table_docs = 0
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
        date = fm.get("effective_date", "")
        if not re.fullmatch(r"(2025|2026)-\d{2}-\d{2}", date):
            errors.append(f"{path.name}: effective_date must be YYYY-MM-DD in 2025-2026")
        if not re.fullmatch(r"\[.+\]", fm.get("tags", "")):
            errors.append(f"{path.name}: tags must be a [list]")
        if not re.search(r"^# \S", body, re.M):
            errors.append(f"{path.name}: no level-1 heading")
        n = sum(1 for line in body.splitlines() if TABLE_RULE.match(line))
        tables += n
        table_docs += 1 if n else 0
        docs[path.stem] = (fm, body)
    return docs, tables, table_docs


def check_pairs(docs: dict[str, tuple[dict[str, str], str]], errors: list[str]) -> set[str]:
    """Check supersedes/superseded links; return the superseded document ids."""
    superseded = {d for d, (fm, _) in docs.items() if fm.get("status") == "superseded"}
    linked: set[str] = set()
    for d, (fm, _) in docs.items():
        old = fm.get("supersedes")
        if not old:
            continue
        linked.add(old)
        if fm.get("status") != "current":
            errors.append(f"{d}: supersedes {old} but is not current")
        if old not in docs:
            errors.append(f"{d}: supersedes unknown doc {old}")
            continue
        ofm, obody = docs[old]
        if ofm.get("status") != "superseded":
            errors.append(f"{d}: supersedes {old}, whose status is not superseded")
        if old != f"{d}-v1":
            errors.append(f"{d}: superseded doc should be named {d}-v1")
        if ofm.get("effective_date", "") >= fm.get("effective_date", ""):
            errors.append(f"{old}: effective_date not older than {d}")
        if "仍按本版" not in obody:
            errors.append(f"{old}: does not state when it still applies")
    for d in sorted(superseded - linked):
        errors.append(f"{d}: superseded but no current document supersedes it")
    return superseded


def main() -> int:
    errors: list[str] = []
    docs, tables, table_docs = check_docs(errors)
    superseded = check_pairs(docs, errors)

    # questions
    qs = load_jsonl(HERE / "questions.jsonl", errors)
    ids = Counter(q.get("id") for q in qs)
    errors += [f"questions: duplicate id {i}" for i, c in ids.items() if c > 1]
    texts = Counter(q.get("question") for q in qs)
    errors += [f"questions: duplicate question {t!r}" for t, c in texts.items() if c > 1]
    n_ans = n_rel = n_oos = 0
    for n, q in enumerate(qs, 1):
        qid = q.get("id")
        if qid != f"s{n:03d}":
            errors.append(f"{qid}: ids must run s001, s002, ... in file order (line {n})")
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
                if not isinstance(fact, str) or not fact.strip():
                    errors.append(f"{qid}: empty gold fact")
                elif not any(fact in b for b in bodies):
                    errors.append(f"{qid}: gold fact {fact!r} not verbatim in {gold}")
        elif q.get("answerable") is False:
            if q.get("gold_facts"):
                errors.append(f"{qid}: unanswerable must not have gold_facts")
            if q.get("kind") == "oos":
                n_oos += 1
                if gold:
                    errors.append(f"{qid}: oos must have empty gold_doc_ids")
            else:
                n_rel += 1
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
        if r.get("id") != "s" + str(q.get("id")):
            errors.append(f"retrieval: id {r.get('id')!r} should be s{q.get('id')}")
        if r.get("query") != q.get("question") or r.get("gold_doc_ids") != q.get("gold_doc_ids"):
            errors.append(f"retrieval: line for {q.get('id')} does not repeat its question/docs")
    for r in rets:
        for d in r.get("gold_doc_ids") or ["<none>"]:
            if d not in docs:
                errors.append(f"retrieval: unknown doc {d!r}")

    # superseded questions must cite an old version
    n_sup_q = 0
    for q in answerable:
        if q.get("kind") != "superseded":
            continue
        n_sup_q += 1
        if not any(d in superseded for d in q.get("gold_doc_ids", [])):
            errors.append(f"{q.get('id')}: superseded question must cite a superseded document")

    # counts
    n_un = n_rel + n_oos
    checks = [
        (len(docs) >= MIN_DOCS, f"documents {len(docs)} < {MIN_DOCS}"),
        (table_docs >= MIN_TABLE_DOCS, f"documents with a table {table_docs} < {MIN_TABLE_DOCS}"),
        (len(superseded) == N_SUPERSEDED, f"superseded documents {len(superseded)} != {N_SUPERSEDED}"),
        (n_ans >= MIN_ANSWERABLE, f"answerable {n_ans} < {MIN_ANSWERABLE}"),
        (n_un >= MIN_UNANSWERABLE, f"unanswerable {n_un} < {MIN_UNANSWERABLE}"),
        (n_rel >= MIN_RELATED, f"related unanswerable {n_rel} < {MIN_RELATED}"),
        (n_oos >= MIN_OOS, f"oos {n_oos} < {MIN_OOS}"),
        (n_sup_q >= MIN_SUPERSEDED_QS, f"superseded questions {n_sup_q} < {MIN_SUPERSEDED_QS}"),
    ]
    errors += [f"count: {msg}" for ok, msg in checks if not ok]

    kinds = Counter(q.get("kind") for q in answerable)
    for k in sorted(KINDS - set(kinds)):
        errors.append(f"count: no answerable question of kind {k}")
    print(f"documents            {len(docs)} ({len(docs) - len(superseded)} current, {len(superseded)} superseded)")
    print(f"tables               {tables} in {table_docs} documents  (min {MIN_TABLE_DOCS} documents)")
    print(f"questions            {len(qs)}")
    print(f"answerable           {n_ans}  (min {MIN_ANSWERABLE})")
    print("  by kind            " + ", ".join(f"{k} {c}" for k, c in kinds.most_common()))
    print(f"unanswerable         {n_un}  (min {MIN_UNANSWERABLE})")
    print(f"  related            {n_rel}  (min {MIN_RELATED})")
    print(f"  out of scope       {n_oos}  (min {MIN_OOS})")
    print(f"retrieval queries    {len(rets)}")
    print(f"superseded questions {n_sup_q}  (min {MIN_SUPERSEDED_QS})")
    for e in errors:
        print("ERROR", e)
    print("PASS" if not errors else f"FAIL ({len(errors)} errors)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
