"""Validate the fifth foreign-KB evaluation set (驰途租车) (plain Python, no project imports).

Checks: KB front matter and ids, `supersedes` links, table count, question/retrieval ids
unique, every gold doc id exists, every gold fact occurs literally in one of its case's gold
documents, table-cell cases really have their facts in a table row, out-of-scope cases have
no gold documents, the retrieval file starts with the answerable questions in order, and
the minimum counts.

Usage: python eval/datasets/foreign5/check_foreign5.py   (exit status 0 = pass)
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
KB_DIR = HERE / "kb"
REQUIRED_FIELDS = ("id", "title", "version", "effective_date", "status", "category", "tags")
KINDS = ("text", "table", "regime", "table+regime")
MINIMUMS = {
    "documents": 24,
    "tables": 30,
    "current documents": 22,
    "superseded documents": 2,
    "questions": 170,
    "answerable": 100,
    "related-unanswerable": 60,
    "out-of-scope": 7,
    "table-cell-only answerable": 20,
    "similar-regime answerable": 25,
    "retrieval queries": 120,
    "extra retrieval queries": 20,
}


def parse_doc(path: Path) -> tuple[dict[str, str], str]:
    """Return (front matter fields, body) of one KB Markdown file."""
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        raise ValueError(f"{path.name}: no front matter")
    head, sep, body = text[4:].partition("\n---\n")
    if not sep:
        raise ValueError(f"{path.name}: front matter not closed")
    fields: dict[str, str] = {}
    for line in head.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields, body


def count_tables(body: str) -> int:
    """Count Markdown tables (one separator row |---|... per table)."""
    return sum(1 for line in body.splitlines() if line.startswith("|---"))


def table_lines(body: str) -> list[str]:
    """Return the table rows of a body."""
    return [line for line in body.splitlines() if line.startswith("|")]


def prose_lines(body: str) -> list[str]:
    """Return the non-table lines of a body."""
    return [line for line in body.splitlines() if not line.startswith("|")]


def load_jsonl(path: Path, errors: list[str]) -> list[dict]:
    """Load a JSONL file, recording malformed lines as errors."""
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            errors.append(f"{path.name}:{n}: bad JSON ({exc})")
    return rows


def check_docs(errors: list[str], counts: Counter[str]) -> dict[str, tuple[dict[str, str], str]]:
    """Parse and check every KB document; return {doc id: (fields, body)}."""
    docs: dict[str, tuple[dict[str, str], str]] = {}
    for path in sorted(KB_DIR.glob("*.md")):
        try:
            fields, body = parse_doc(path)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        for key in REQUIRED_FIELDS:
            if not fields.get(key):
                errors.append(f"{path.name}: missing front matter field {key!r}")
        doc_id = fields.get("id", "")
        if doc_id != path.stem:
            errors.append(f"{path.name}: id {doc_id!r} differs from the file name")
        if doc_id in docs:
            errors.append(f"{path.name}: duplicate doc id {doc_id!r}")
        status = fields.get("status")
        if status not in ("current", "superseded"):
            errors.append(f"{path.name}: status must be current|superseded")
        if status == "superseded" and not doc_id.endswith("-v1"):
            errors.append(f"{path.name}: superseded documents carry the -v1 suffix")
        if "\n## " not in "\n" + body:
            errors.append(f"{path.name}: no ## heading")
        docs[doc_id] = (fields, body)
        counts["documents"] += 1
        counts["tables"] += count_tables(body)
        counts["superseded documents"] += status == "superseded"
        counts["current documents"] += status == "current"
    superseded_by: Counter[str] = Counter()
    for doc_id, (fields, _) in docs.items():
        sup = fields.get("supersedes")
        if not sup:
            continue
        if sup not in docs or docs[sup][0].get("status") != "superseded":
            errors.append(f"{doc_id}: supersedes {sup!r}, which is missing or not superseded")
        if fields.get("status") != "current":
            errors.append(f"{doc_id}: only current documents may supersede")
        superseded_by[sup] += 1
    for doc_id, (fields, _) in docs.items():
        if fields.get("status") == "superseded" and superseded_by[doc_id] != 1:
            errors.append(f"{doc_id}: superseded but not named by exactly one current document")
    return docs


def check_questions(
    docs: dict[str, tuple[dict[str, str], str]], errors: list[str], counts: Counter[str]
) -> list[dict]:
    """Check questions.jsonl; return the answerable questions in file order."""
    questions = load_jsonl(HERE / "questions.jsonl", errors)
    ids = Counter(q.get("id") for q in questions)
    errors += [f"questions: duplicate id {i}" for i, c in ids.items() if c > 1]
    answerable = []
    for q in questions:
        qid, gold = q.get("id"), q.get("gold_doc_ids", [])
        if not str(qid).startswith("c") or str(qid).startswith("cr"):
            errors.append(f"{qid}: question ids are c001, c002, …")
        if not q.get("question"):
            errors.append(f"{qid}: empty question")
        for d in gold:
            if d not in docs:
                errors.append(f"{qid}: unknown gold doc {d!r}")
        if q.get("answerable") is True:
            answerable.append(q)
            counts["answerable"] += 1
            if not gold or not q.get("gold_facts"):
                errors.append(f"{qid}: answerable needs gold_facts and gold_doc_ids")
            bodies = [docs[d][1] for d in gold if d in docs]
            for fact in q.get("gold_facts", []):
                if not any(fact in b for b in bodies):
                    errors.append(f"{qid}: gold fact {fact!r} not literally in {gold}")
            kind = q.get("kind", "")
            if kind not in KINDS:
                errors.append(f"{qid}: kind {kind!r} not one of {KINDS}")
            counts[f"kind {kind}"] += 1
            if "regime" in kind:
                counts["similar-regime answerable"] += 1
            if kind.startswith("table"):
                in_table = all(
                    any(fact in line for b in bodies for line in table_lines(b))
                    for fact in q.get("gold_facts", [])
                )
                if not in_table:
                    errors.append(f"{qid}: kind {kind!r} but a fact is not in a table row")
                only_table = not any(
                    fact in line for b in bodies for line in prose_lines(b)
                    for fact in q.get("gold_facts", [])
                )
                counts["table-cell-only answerable"] += only_table
        elif q.get("answerable") is False and q.get("out_of_scope"):
            counts["out-of-scope"] += 1
            if gold:
                errors.append(f"{qid}: out-of-scope cases have empty gold_doc_ids")
            if not q.get("why"):
                errors.append(f"{qid}: out-of-scope needs why")
        elif q.get("answerable") is False:
            counts["related-unanswerable"] += 1
            if not gold or not q.get("why"):
                errors.append(f"{qid}: unanswerable needs gold_doc_ids and why")
        else:
            errors.append(f"{qid}: answerable must be true or false")
    counts["questions"] = len(questions)
    return answerable


def check_retrieval(
    docs: dict[str, tuple[dict[str, str], str]],
    answerable: list[dict],
    errors: list[str],
    counts: Counter[str],
) -> None:
    """Check retrieval.jsonl: ids, gold docs, and the answerable questions first, in order."""
    retrieval = load_jsonl(HERE / "retrieval.jsonl", errors)
    rids = Counter(r.get("id") for r in retrieval)
    errors += [f"retrieval: duplicate id {i}" for i, c in rids.items() if c > 1]
    for r in retrieval:
        if not str(r.get("id")).startswith("cr"):
            errors.append(f"{r.get('id')}: retrieval ids are cr001, cr002, …")
        if not r.get("query") or not r.get("gold_doc_ids"):
            errors.append(f"{r.get('id')}: needs query and gold_doc_ids")
        for d in r.get("gold_doc_ids", []):
            if d not in docs:
                errors.append(f"{r.get('id')}: unknown gold doc {d!r}")
    for q, r in zip(answerable, retrieval):
        if q["question"] != r.get("query") or q["gold_doc_ids"] != r.get("gold_doc_ids"):
            errors.append(f"{r.get('id')}: does not match answerable question {q['id']}")
    counts["retrieval queries"] = len(retrieval)
    counts["extra retrieval queries"] = max(0, len(retrieval) - len(answerable))


def check() -> int:
    """Run every check, print a summary, return the exit status."""
    errors: list[str] = []
    counts: Counter[str] = Counter()
    docs = check_docs(errors, counts)
    answerable = check_questions(docs, errors, counts)
    check_retrieval(docs, answerable, errors, counts)
    for name, minimum in MINIMUMS.items():
        status = "ok" if counts[name] >= minimum else "TOO FEW"
        print(f"{name:28s} {counts[name]:4d}  (min {minimum})  {status}")  # noqa: T201
        if counts[name] < minimum:
            errors.append(f"count {name}: {counts[name]} < {minimum}")
    for kind in KINDS:
        print(f"{'kind ' + kind:28s} {counts['kind ' + kind]:4d}")  # noqa: T201
    for err in errors:
        print("ERROR", err)  # noqa: T201
    print("PASS" if not errors else f"FAIL ({len(errors)} errors)")  # noqa: T201
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(check())
