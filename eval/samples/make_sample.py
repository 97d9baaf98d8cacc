"""Write a fixed systematic sample of the dev suites (the LLM benchmark's cases, issue 10).

``python eval/samples/make_sample.py OUT normal=30 boundary=15 distractor=15`` keeps, of each
suite file in id order, the cases at positions ``floor(i * N / n)`` for ``i < n`` (N: the suite's
size): an even spread over the file, whose cases are grouped by category, so every category is
represented in proportion. Deterministic: every run (guards on/off, each model) gets the same ids.
"""

from __future__ import annotations

import sys
from pathlib import Path

DATASETS = Path(__file__).resolve().parents[1] / "datasets"


def main(argv: list[str]) -> int:
    """Write the sample suites into ``argv[0]``."""
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for spec in argv[1:]:
        name, n = spec.split("=")
        lines = [ln for ln in (DATASETS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
                 if ln.strip()]
        picked = [lines[i * len(lines) // int(n)] for i in range(int(n))]
        (out / f"{name}.jsonl").write_text("\n".join(picked) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
