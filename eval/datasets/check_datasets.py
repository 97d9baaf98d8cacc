"""Check the evaluation datasets against the demo knowledge base and the demo shop data.

Run from the repository root: ``python eval/datasets/check_datasets.py``. It asserts, for
every case of every set, that the fields follow docs/CONTRACTS.md ("Dataset formats"), that
ids are unique per file, that every referenced doc id / user id / order id exists, and that
every gold fact is literally present (no normalisation) in a cited KB document or, for tool
cases, in ``shop/seed.py`` and in that user's own records. Verifier evidence must be verbatim
KB text and each pair must differ by exactly the injected span. Exits non-zero on any error.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT / "eval" / "datasets"
KB_DIR = ROOT / "data" / "kb"
SEED_PATH = ROOT / "shop" / "seed.py"

STATUSES = {"answered", "refused", "handoff", "needs_confirmation"}
BOUNDARY_EXPECTED = {"refused", "handoff", "refused_or_handoff"}
ERROR_TYPES = {"number", "date", "amount", "region", "condition", "invented_policy",
               "claimed_action"}
CITE_RE = re.compile(r"【来源:([^】]+)】")
ORDER_RE = re.compile(r"SO\d{13}")


def load_kb() -> dict[str, dict[str, str]]:
    """Return ``{doc_id: {"body", "status"}}`` for every KB document (front matter parsed)."""
    docs: dict[str, dict[str, str]] = {}
    for path in sorted(KB_DIR.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        meta: dict[str, str] = {}
        body = text
        if text.startswith("---\n"):
            head, _, body = text[4:].partition("\n---\n")
            for line in head.splitlines():
                key, _, value = line.partition(":")
                meta[key.strip()] = value.strip()
        docs[meta.get("id", path.stem)] = {"body": body, "status": meta.get("status", "current")}
    return docs


def load_seed() -> tuple[str, dict[str, str], dict[str, str]]:
    """Return the seed source, ``{user_id: json of the user's records}`` and ``{order: user}``."""
    sys.path.insert(0, str(ROOT))
    from shop import seed  # imported here: the repo root must be on sys.path first

    source = SEED_PATH.read_text(encoding="utf-8")
    owner = {o["id"]: o["user_id"] for o in seed.ORDERS}
    records: dict[str, list[Any]] = defaultdict(list)
    for user in seed.USERS:
        records[user["id"]].append(user)
    for order in seed.ORDERS:
        records[order["user_id"]].append(order)
    for shipment in seed.SHIPMENTS:
        records[owner[shipment["order_id"]]].append(shipment)
    for ticket in seed.TICKETS:
        records[ticket["user_id"]].append(ticket)
    dumps = {uid: json.dumps(recs, ensure_ascii=False) for uid, recs in records.items()}
    return source, dumps, owner


def read_jsonl(name: str, errors: list[str]) -> list[dict[str, Any]]:
    """Read one dataset file; report bad JSON and duplicate ids."""
    rows: list[dict[str, Any]] = []
    path = DATASETS / name
    if not path.exists():
        errors.append(f"{name}: file missing")
        return rows
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            errors.append(f"{name}:{lineno}: not JSON ({exc})")
    dupes = [i for i, n in Counter(r.get("id") for r in rows).items() if n > 1]
    if dupes:
        errors.append(f"{name}: duplicate ids {dupes}")
    return rows


class Checker:
    """Collect errors for all sets."""

    def __init__(self) -> None:
        self.kb = load_kb()
        self.seed_source, self.user_dump, self.order_owner = load_seed()
        self.errors: list[str] = []

    def err(self, where: str, msg: str) -> None:
        """Record one error."""
        self.errors.append(f"{where}: {msg}")

    def keys(self, where: str, row: dict[str, Any], required: set[str]) -> None:
        """Check that exactly the contract's keys are present."""
        if set(row) != required:
            self.err(where, f"keys {sorted(set(row) ^ required)} differ from the contract")

    def user(self, where: str, user_id: Any, *, optional: bool = True) -> None:
        """Check that a user id is a demo user (or null where allowed)."""
        if user_id is None and optional:
            return
        if user_id not in self.user_dump:
            self.err(where, f"unknown user_id {user_id!r}")

    def docs(self, where: str, doc_ids: list[str]) -> None:
        """Check that doc ids exist."""
        for doc_id in doc_ids:
            if doc_id not in self.kb:
                self.err(where, f"unknown doc id {doc_id!r}")

    def facts(self, where: str, facts: list[str], doc_ids: list[str], user_id: Any,
              needs_tool: bool) -> None:
        """Check that each gold fact is literally in a cited doc or in the user's seed records."""
        for fact in facts:
            if not isinstance(fact, str) or not fact.strip():
                self.err(where, f"empty gold fact {fact!r}")
                continue
            in_doc = any(fact in self.kb[d]["body"] for d in doc_ids if d in self.kb)
            in_seed = (needs_tool and fact in self.seed_source
                       and fact in self.user_dump.get(user_id, ""))
            if not (in_doc or in_seed):
                self.err(where, f"gold fact {fact!r} not found in {doc_ids or 'seed of ' + str(user_id)}")

    def orders(self, where: str, text: str, user_id: Any, *, allow_foreign: bool = False) -> None:
        """Check that order ids mentioned exist and (unless allowed) belong to the user."""
        for order_id in ORDER_RE.findall(text):
            owner = self.order_owner.get(order_id)
            if owner is None:
                if not allow_foreign:
                    self.err(where, f"order {order_id} does not exist in seed.py")
            elif owner != user_id and not allow_foreign:
                self.err(where, f"order {order_id} belongs to {owner}, not {user_id}")

    def check_normal(self, name: str, extra: set[str]) -> list[dict[str, Any]]:
        """Check normal.jsonl or distractor.jsonl."""
        rows = read_jsonl(name, self.errors)
        required = {"id", "question", "user_id", "category", "gold_facts", "gold_doc_ids",
                    "needs_tool"} | extra
        for row in rows:
            where = f"{name}:{row.get('id')}"
            self.keys(where, row, required)
            self.user(where, row.get("user_id"))
            self.docs(where, row.get("gold_doc_ids", []))
            if not row.get("gold_facts"):
                self.err(where, "no gold facts")
            if row.get("needs_tool"):
                if row.get("user_id") is None:
                    self.err(where, "needs_tool without user_id")
                self.orders(where, row["question"], row.get("user_id"))
            elif not row.get("gold_doc_ids"):
                self.err(where, "no gold_doc_ids")
            for d in row.get("gold_doc_ids", []):
                if self.kb.get(d, {}).get("status") == "superseded":
                    self.err(where, f"gold doc {d} is superseded")
            self.facts(where, row.get("gold_facts", []), row.get("gold_doc_ids", []),
                       row.get("user_id"), bool(row.get("needs_tool")))
            if "distractor_doc_ids" in extra:
                self.docs(where, row.get("distractor_doc_ids", []))
                if not row.get("distractor_doc_ids") or not row.get("trap"):
                    self.err(where, "missing distractor_doc_ids or trap")
                if set(row.get("distractor_doc_ids", [])) & set(row.get("gold_doc_ids", [])):
                    self.err(where, "a distractor doc is also a gold doc")
        return rows

    def check_boundary(self) -> list[dict[str, Any]]:
        """Check boundary.jsonl."""
        rows = read_jsonl("boundary.jsonl", self.errors)
        for row in rows:
            where = f"boundary.jsonl:{row.get('id')}"
            self.keys(where, row, {"id", "question", "user_id", "category", "expected"})
            self.user(where, row.get("user_id"))
            if row.get("expected") not in BOUNDARY_EXPECTED:
                self.err(where, f"bad expected {row.get('expected')!r}")
            if not row.get("question", "").strip() or not row.get("category"):
                self.err(where, "empty question or category")
        return rows

    def check_verifier(self) -> list[dict[str, Any]]:
        """Check verifier.jsonl: verbatim evidence, valid citations, pairs one span apart."""
        rows = read_jsonl("verifier.jsonl", self.errors)
        required = {"id", "pair_id", "question", "evidence", "answer", "label", "error_type",
                    "injected_span"}
        pairs: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            where = f"verifier.jsonl:{row.get('id')}"
            self.keys(where, row, required)
            pairs[row.get("pair_id", "")].append(row)
            ev_ids = [e.get("id") for e in row.get("evidence", [])]
            if not 1 <= len(ev_ids) <= 3:
                self.err(where, f"{len(ev_ids)} evidence items (want 1-3)")
            for ev in row.get("evidence", []):
                doc_id = str(ev.get("id", "")).split("#")[0]
                if doc_id not in self.kb:
                    self.err(where, f"evidence doc {doc_id!r} unknown")
                elif ev.get("text", "") not in self.kb[doc_id]["body"] or not ev.get("text"):
                    self.err(where, f"evidence {ev.get('id')} is not verbatim KB text")
            cites = CITE_RE.findall(row.get("answer", ""))
            if not cites:
                self.err(where, "answer has no 【来源:id】 tag")
            for cid in cites:
                if cid not in ev_ids:
                    self.err(where, f"answer cites {cid!r}, not in its evidence")
            if row.get("label") == "correct":
                if row.get("error_type") is not None or row.get("injected_span") is not None:
                    self.err(where, "correct answer with an error_type or injected_span")
                plain = CITE_RE.sub("", row.get("answer", ""))
                evidence_text = "".join(e.get("text", "") for e in row.get("evidence", []))
                for num in re.findall(r"\d+(?:\.\d+)?", plain):
                    if num not in evidence_text:
                        self.err(where, f"correct answer number {num} not in its evidence")
            elif row.get("label") == "injected":
                if row.get("error_type") not in ERROR_TYPES:
                    self.err(where, f"bad error_type {row.get('error_type')!r}")
                span = row.get("injected_span") or ""
                if not span or span not in row.get("answer", ""):
                    self.err(where, "injected_span missing from the answer")
            else:
                self.err(where, f"bad label {row.get('label')!r}")
        for pair_id, members in pairs.items():
            labels = sorted(m.get("label", "") for m in members)
            if labels != ["correct", "injected"]:
                self.err(f"verifier.jsonl pair {pair_id}", f"labels {labels}")
                continue
            good, bad = sorted(members, key=lambda m: m["label"])
            if good["question"] != bad["question"] or good["evidence"] != bad["evidence"]:
                self.err(f"verifier.jsonl pair {pair_id}", "question/evidence differ in the pair")
            if good["answer"] == bad["answer"]:
                self.err(f"verifier.jsonl pair {pair_id}", "answers identical")
            if bad["injected_span"] and bad["injected_span"] in good["answer"]:
                self.err(f"verifier.jsonl pair {pair_id}", "injected span also in the correct answer")
        return rows

    def check_multiturn(self) -> list[dict[str, Any]]:
        """Check multiturn.jsonl."""
        rows = read_jsonl("multiturn.jsonl", self.errors)
        for row in rows:
            where = f"multiturn.jsonl:{row.get('id')}"
            self.keys(where, row, {"id", "user_id", "trap", "turns"})
            self.user(where, row.get("user_id"), optional=False)
            turns = row.get("turns", [])
            if not 2 <= len(turns) <= 5:
                self.err(where, f"{len(turns)} turns (want 2-5)")
            if not row.get("trap"):
                self.err(where, "no trap")
            for n, turn in enumerate(turns, 1):
                tw = f"{where} turn {n}"
                if not {"user", "gold_facts", "forbidden", "expected_status"} <= set(turn):
                    self.err(tw, "missing turn keys")
                    continue
                if turn["expected_status"] not in STATUSES:
                    self.err(tw, f"bad expected_status {turn['expected_status']!r}")
                docs = turn.get("gold_doc_ids", [])
                self.docs(tw, docs)
                self.facts(tw, turn["gold_facts"], docs, row.get("user_id"), True)
                current = [d["body"] for d in self.kb.values() if d["status"] == "current"]
                for bad in turn["forbidden"]:
                    if not bad or bad in turn["gold_facts"]:
                        self.err(tw, f"forbidden {bad!r} empty or also gold")
                    elif any(bad in text for text in current):
                        self.err(tw, f"forbidden {bad!r} occurs in a current KB document")
                self.orders(tw, turn["user"], row.get("user_id"), allow_foreign=True)
        return rows


def main() -> int:
    """Run all checks; print counts and errors; return the exit status."""
    checker = Checker()
    counts = {
        "normal": checker.check_normal("normal.jsonl", set()),
        "boundary": checker.check_boundary(),
        "distractor": checker.check_normal("distractor.jsonl", {"distractor_doc_ids", "trap"}),
        "verifier": checker.check_verifier(),
        "multiturn": checker.check_multiturn(),
    }
    out = sys.stdout
    for name, rows in counts.items():
        out.write(f"{name}: {len(rows)} cases\n")
    for error in checker.errors:
        out.write(f"ERROR {error}\n")
    out.write(f"{len(checker.errors)} errors\n")
    return 1 if checker.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
