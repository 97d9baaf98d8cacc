"""Validate the held-out evaluation set against the demo KB and the demo shop seed.

Standard library only. The seed is read by importing ``shop.seed`` with the repository root put
on ``sys.path`` (it is plain Python literals); the KB is read as Markdown with a front-matter
block. Nothing here touches the agent.

Run from anywhere::

    python eval/datasets/holdout/check_holdout.py

Exit status 0 when there are no errors, 1 otherwise; every error is logged with file and id.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
KB_DIR = ROOT / "data" / "kb"
SEED_PATH = ROOT / "shop" / "seed.py"

EXPECTED = {"refused", "handoff", "refused_or_handoff"}
NORMAL_FIELDS: dict[str, type] = {
    "id": str,
    "question": str,
    "user_id": str,
    "category": str,
    "gold_facts": list,
    "gold_doc_ids": list,
    "needs_tool": bool,
}
BOUNDARY_FIELDS: dict[str, type] = {"id": str, "question": str, "user_id": str, "category": str, "expected": str}
DISTRACTOR_FIELDS: dict[str, type] = {**NORMAL_FIELDS, "distractor_doc_ids": list, "trap": str}
ID_PATTERNS = {"normal.jsonl": r"hn\d{3}", "boundary.jsonl": r"hb\d{3}", "distractor.jsonl": r"hd\d{3}"}

log = logging.getLogger("check_holdout")


class Checker:
    """Collects errors while validating the three held-out files."""

    def __init__(self) -> None:
        """Load the KB documents and the seed records."""
        self.errors: list[str] = []
        self.docs: dict[str, str] = {}
        self.status: dict[str, str] = {}
        for path in sorted(KB_DIR.glob("*.md")):
            text = path.read_text(encoding="utf-8")
            front = re.match(r"^---\n(.*?)\n---\n", text, re.S)
            if front is None:
                self.errors.append(f"{path.name}: no front matter")
                continue
            meta = dict(
                line.split(":", 1) for line in front.group(1).splitlines() if ":" in line
            )
            doc_id = meta.get("id", "").strip()
            self.docs[doc_id] = text[front.end():]
            self.status[doc_id] = meta.get("status", "").strip()
        self.seed_text = SEED_PATH.read_text(encoding="utf-8")
        sys.path.insert(0, str(ROOT))
        seed: Any = importlib.import_module("shop.seed")
        self.users = {u["id"]: u for u in seed.USERS}
        self.user_records: dict[str, str] = {}
        for uid in self.users:
            orders = [o for o in seed.ORDERS if o["user_id"] == uid]
            ids = {o["id"] for o in orders}
            ships = [s for s in seed.SHIPMENTS if s["order_id"] in ids]
            tickets = [t for t in seed.TICKETS if t["user_id"] == uid]
            self.user_records[uid] = json.dumps([orders, ships, tickets], ensure_ascii=False)
        self.seen_ids: set[str] = set()

    def err(self, where: str, msg: str) -> None:
        """Record one error."""
        self.errors.append(f"{where}: {msg}")

    def load(self, name: str) -> list[dict[str, Any]]:
        """Read one JSONL file; bad lines are errors."""
        rows: list[dict[str, Any]] = []
        path = HERE / name
        if not path.exists():
            self.err(name, "missing file")
            return rows
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                self.err(f"{name}:{n}", f"bad JSON ({exc})")
                continue
            if not isinstance(obj, dict):
                self.err(f"{name}:{n}", "not an object")
                continue
            rows.append(obj)
        return rows

    def fields(self, name: str, row: dict[str, Any], spec: dict[str, type]) -> bool:
        """Check exact field set, types, id pattern and id uniqueness."""
        where = f"{name}:{row.get('id', '?')}"
        ok = True
        if set(row) != set(spec):
            self.err(where, f"fields {sorted(row)} != {sorted(spec)}")
            ok = False
        for key, typ in spec.items():
            if key in row and not isinstance(row[key], typ):
                self.err(where, f"{key} is not {typ.__name__}")
                ok = False
        rid = row.get("id")
        if isinstance(rid, str):
            if not re.fullmatch(ID_PATTERNS[name], rid):
                self.err(where, "id does not match " + ID_PATTERNS[name])
            if rid in self.seen_ids:
                self.err(where, "duplicate id")
            self.seen_ids.add(rid)
        for key in ("question", "category"):
            if isinstance(row.get(key), str) and not row[key].strip():
                self.err(where, f"empty {key}")
        if isinstance(row.get("user_id"), str) and row["user_id"] not in self.users:
            self.err(where, f"unknown user {row['user_id']}")
            ok = False
        return ok

    def doc_ids(self, where: str, ids: list[Any], *, current: bool) -> None:
        """Every doc id exists (and is current when ``current``)."""
        for doc in ids:
            if doc not in self.docs:
                self.err(where, f"unknown doc id {doc!r}")
            elif current and self.status[doc] != "current":
                self.err(where, f"gold doc {doc} is {self.status[doc]}, not current")

    def answerable(self, name: str, row: dict[str, Any]) -> None:
        """Gold facts and gold docs of a normal/distractor case."""
        where = f"{name}:{row['id']}"
        facts = row["gold_facts"]
        if not 1 <= len(facts) <= 3 or not all(isinstance(f, str) and f for f in facts):
            self.err(where, "gold_facts must be 1-3 non-empty strings")
            return
        self.doc_ids(where, row["gold_doc_ids"], current=True)
        if row["needs_tool"]:
            if row["gold_doc_ids"]:
                self.err(where, "tool case with gold_doc_ids")
            records = self.user_records[row["user_id"]]
            for fact in facts:
                if fact not in self.seed_text or fact not in records:
                    self.err(where, f"fact {fact!r} not in {row['user_id']}'s seed records")
            return
        if not row["gold_doc_ids"]:
            self.err(where, "KB case without gold_doc_ids")
        texts = [self.docs[d] for d in row["gold_doc_ids"] if d in self.docs]
        for fact in facts:
            if not any(fact in t for t in texts):
                self.err(where, f"fact {fact!r} not literally in {row['gold_doc_ids']}")

    def run(self) -> dict[str, int]:
        """Validate all three files; return the case counts."""
        counts: dict[str, int] = {}
        normal = self.load("normal.jsonl")
        for row in normal:
            if self.fields("normal.jsonl", row, NORMAL_FIELDS):
                self.answerable("normal.jsonl", row)
        counts["normal"] = len(normal)
        counts["normal_tool"] = sum(1 for r in normal if r.get("needs_tool") is True)
        boundary = self.load("boundary.jsonl")
        for row in boundary:
            if self.fields("boundary.jsonl", row, BOUNDARY_FIELDS) and row["expected"] not in EXPECTED:
                self.err(f"boundary.jsonl:{row['id']}", f"bad expected {row['expected']!r}")
        counts["boundary"] = len(boundary)
        distractor = self.load("distractor.jsonl")
        for row in distractor:
            if not self.fields("distractor.jsonl", row, DISTRACTOR_FIELDS):
                continue
            where = f"distractor.jsonl:{row['id']}"
            self.answerable("distractor.jsonl", row)
            if not row["distractor_doc_ids"]:
                self.err(where, "no distractor_doc_ids")
            self.doc_ids(where, row["distractor_doc_ids"], current=False)
            if set(row["distractor_doc_ids"]) & set(row["gold_doc_ids"]):
                self.err(where, "a distractor doc is also a gold doc")
            if not row["trap"].strip():
                self.err(where, "empty trap")
        counts["distractor"] = len(distractor)
        return counts


def main() -> int:
    """Run the checks, log the result and return the exit status."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    checker = Checker()
    counts = checker.run()
    for error in checker.errors:
        log.error("ERROR %s", error)
    log.info("counts: %s", counts)
    log.info("%d error(s)", len(checker.errors))
    return 1 if checker.errors else 0


if __name__ == "__main__":
    sys.exit(main())
