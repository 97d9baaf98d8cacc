"""Run the evaluation suites through the real graph (via :class:`csagent.api.CSAgent`).

Each case gets its own thread; a multi-turn conversation runs in one thread. A confirmation
prompt is answered only where the case says so (``"confirm": "yes"|"no"`` on the case or the
turn); otherwise the turn is recorded as ``needs_confirmation``. The verifier suite calls
:func:`strategies.combined.check_answer` directly. Per-case judgments come from :mod:`eval.metrics`.

Eval never touches the user's shop data: it runs against a fresh demo shop database and writes
its traces under ``<report dir>/data`` (or a temporary folder without ``--report``).
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from csagent.errors import UsageError
from csagent.llm import llm_turn, summarize_turns
from eval import generated as gen
from eval import metrics as m

logger = logging.getLogger(__name__)

DATASETS_DIR = Path(__file__).resolve().parent / "datasets"
DEV_SUITES = ("normal", "boundary", "distractor", "verifier", "multiturn")
GENERATED_SUITES = ("leave-gold-out", "swap")  # generated from the dev sets (eval.generated)
FOREIGN_SUITE = "foreign"  # the second knowledge base; never part of "all" (kept out of tuning)
SUITES = (*DEV_SUITES, *GENERATED_SUITES, FOREIGN_SUITE)
REQUIRED: dict[str, tuple[str, ...]] = {
    "normal": ("id", "question"),
    "boundary": ("id", "question", "expected"),
    "distractor": ("id", "question"),
    "verifier": ("id", "question", "evidence", "answer", "label"),
    "multiturn": ("id", "turns"),
}
DEFAULT_USER = "u1001"


def parse_suites(spec: str | None) -> list[str]:
    """Return the suite names of a ``--suite`` value (comma list or ``all``), validated.

    ``all`` is the dev suites plus the suites generated from them; ``foreign`` runs only when
    named.
    """
    if not spec or spec.strip() == "all":
        return [*DEV_SUITES, *GENERATED_SUITES]
    names = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [n for n in names if n not in SUITES]
    if unknown or not names:
        raise UsageError(f"unknown suite(s) {unknown or spec!r}: choose from {', '.join(SUITES)} or all")
    return list(dict.fromkeys(names))


def load_suite(name: str, datasets_dir: Path = DATASETS_DIR) -> tuple[list[dict[str, Any]], list[str]]:
    """Read ``<datasets_dir>/<name>.jsonl``; bad lines are skipped and reported.

    Args:
        name: A suite name.
        datasets_dir: Folder of the suite files.

    Returns:
        ``(cases, errors)`` where each error names the file and line number.

    Raises:
        UsageError: The suite file does not exist.

    """
    path = datasets_dir / f"{name}.jsonl"
    if not path.is_file():
        raise UsageError(f"suite {name!r}: {path} does not exist")
    cases: list[dict[str, Any]] = []
    errors: list[str] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"{path.name}:{number}: invalid JSON ({exc.msg})")
            continue
        missing = [k for k in REQUIRED[name] if not isinstance(case, dict) or k not in case]
        if missing:
            errors.append(f"{path.name}:{number}: missing {', '.join(missing)}")
            continue
        if name == "multiturn" and (not isinstance(case["turns"], list) or not case["turns"]):
            errors.append(f"{path.name}:{number}: turns must be a non-empty list")
            continue
        if str(case["id"]) in seen:
            errors.append(f"{path.name}:{number}: duplicate id {case['id']}")
            continue
        seen.add(str(case["id"]))
        cases.append(case)
    for error in errors:
        logger.warning("skipped %s", error)
    return cases, errors


def case_passed(case: dict[str, Any]) -> bool:
    """Return whether one judged case meets its expectation (used for failing lists and --compare).

    normal/distractor: answered, every gold fact present, nothing hallucinated; boundary: the
    expected refusal/handoff; verifier: flagged exactly when an error was injected; multi-turn
    turn: expected status (if given), no hallucination, gold facts present (if any).
    """
    if case.get("error"):
        return False
    suite = case.get("suite")
    if suite == "leave-gold-out":
        return not case.get("answered") or (bool(case.get("facts_ok")) and not case.get("hallucinated"))
    if suite == "swap":
        return bool(case.get("swap_flagged")) and bool(case.get("control_passed"))
    if suite == "foreign":
        if not case.get("answerable"):
            return not case.get("answered")
        return bool(case.get("answered")) and bool(case.get("facts_ok")) and not case.get("hallucinated")
    if suite == "verifier":
        return bool(case.get("flagged")) == bool(case.get("injected"))
    if suite == "boundary":
        return bool(case.get("boundary_ok"))
    if case.get("hallucinated"):
        return False
    if suite in {"normal", "distractor"}:
        return bool(case.get("answered")) and case.get("facts_ok") is not False
    return case.get("status_ok") is not False and case.get("facts_ok") is not False


def expected_status(case: dict[str, Any]) -> str | None:
    """Return the status a case expects (for the confusion table), or None."""
    suite = case.get("suite")
    if suite in {"normal", "distractor"} or (suite == "foreign" and case.get("answerable")):
        return "answered"
    if suite in {"boundary", "multiturn"}:
        return case.get("expected")
    return None


def confusion(cases: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Return ``{expected: {actual status: count}}`` over graph turns that expect a status."""
    table: dict[str, dict[str, int]] = {}
    for case in cases:
        expected = expected_status(case)
        if expected is None or case.get("suite") == "verifier":
            continue
        actual = str(case.get("status") or "error")
        row = table.setdefault(str(expected), {})
        row[actual] = row.get(actual, 0) + 1
    return table


@dataclass
class EvalRun:
    """Runs cases against one agent and collects judged per-case rows."""

    agent: Any
    gold_texts: dict[str, str] = field(default_factory=dict)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    evidence_of: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    guards: bool = True  # [llm] False: naive RAG with the same model (csagent eval --guards off)
    naive_evidence: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def _naive_turn(self, message: str, thread_id: str) -> Any:
        """[llm] Retrieve + one plain prompt (strategies.llm.naive); no router/verifier/reflection."""
        from csagent.api import TurnResult
        from strategies.llm.naive import naive_answer, naive_evidence

        with llm_turn(None) as meter:
            evidence = naive_evidence(self.agent.deps.retriever, message, k=self.agent.settings.top_k)
            self.naive_evidence[thread_id] = [dict(e) for e in evidence]
            try:
                answer = naive_answer(self.agent.deps.llm, message, evidence)
            except Exception as exc:  # noqa: BLE001 - an endpoint failure is a failed turn
                return TurnResult(status="handoff", answer="", fail_reason="llm_error",
                                  thread_id=thread_id, llm={**meter.summary(), "error": str(exc)[:200]})
        return TurnResult(status="answered", answer=answer, thread_id=thread_id, llm=meter.summary())

    def _evidence(self, thread_id: str) -> list[dict[str, Any]]:
        if thread_id in self.naive_evidence:  # [llm] guards off
            return self.naive_evidence.pop(thread_id)
        try:
            values = self.agent.graph.get_state({"configurable": {"thread_id": thread_id}}).values
        except Exception as exc:  # a broken saver must not stop the evaluation
            logger.warning("no state for thread %s: %s", thread_id, exc)
            return []
        return [e for e in values.get("evidence") or [] if isinstance(e, dict)]

    def _turn(self, message: str, *, user_id: str, thread_id: str, confirm: Any) -> tuple[Any, float]:
        started = time.perf_counter()
        if not self.guards:  # [llm]
            return self._naive_turn(message, thread_id), (time.perf_counter() - started) * 1000
        result = self.agent.ask(message, user_id=user_id, thread_id=thread_id)
        if result.status == "needs_confirmation" and confirm is not None:
            result = self.agent.resume(confirm, user_id=user_id, thread_id=thread_id)
        return result, (time.perf_counter() - started) * 1000

    def _row(self, suite: str, case_id: str, question: str, user_id: str, thread_id: str,
             result: Any, ms: float) -> dict[str, Any]:
        evidence = self._evidence(thread_id)
        return {
            "suite": suite, "id": case_id, "question": question, "user_id": user_id,
            "thread_id": thread_id, "status": result.status, "answer": result.answer,
            "citations": [c.get("id") for c in result.citations if isinstance(c, dict)],
            "fail_reason": result.fail_reason,
            "verification": (result.verification or {}).get("overall"),
            "trace_id": result.trace_id, "latency_ms": round(ms, 3),
            "node_latency_ms": dict(result.node_latency_ms or {}),
            "llm": dict(getattr(result, "llm", None) or {}),  # [llm] calls/tokens/errors this turn
            "evidence_ids": [str(e.get("id")) for e in evidence],
            "_evidence": evidence,
        }

    def _error_row(self, suite: str, case_id: str, question: str, exc: Exception) -> dict[str, Any]:
        logger.warning("case %s/%s failed: %s", suite, case_id, exc)
        return {"suite": suite, "id": case_id, "question": question, "status": "error",
                "error": f"{type(exc).__name__}: {exc}", "answered": False, "hallucinated": False}

    def run_single(self, suite: str, case: dict[str, Any]) -> dict[str, Any]:
        """Run one single-turn case (normal, boundary, distractor) and judge it."""
        case_id, question = str(case["id"]), str(case["question"])
        user_id = str(case.get("user_id") or DEFAULT_USER)
        thread_id = f"eval-{self.run_id}-{suite}-{case_id}"
        try:
            result, ms = self._turn(question, user_id=user_id, thread_id=thread_id,
                                    confirm=case.get("confirm"))
        except Exception as exc:  # noqa: BLE001 - one broken case must not stop the run
            return self._error_row(suite, case_id, question, exc)
        row = self._row(suite, case_id, question, user_id, thread_id, result, ms)
        self.evidence_of[f"{suite}/{case_id}"] = row["_evidence"]
        gold_ids = [str(d) for d in case.get("gold_doc_ids") or []]
        row.update(category=case.get("category"), expected=case.get("expected"),
                   gold_facts=case.get("gold_facts") or [], gold_doc_ids=gold_ids,
                   forbidden=case.get("forbidden") or [])
        row.update(m.judge_turn(
            suite=suite, status=result.status, answer=result.answer, question=question,
            evidence=row.pop("_evidence"), gold_doc_texts=[self.gold_texts[d] for d in gold_ids
                                                           if d in self.gold_texts],
            gold_facts=row["gold_facts"], forbidden=row["forbidden"], expected=case.get("expected"),
            distractor_doc_ids=[str(d) for d in case.get("distractor_doc_ids") or []]))
        return row

    def run_conversation(self, case: dict[str, Any]) -> list[dict[str, Any]]:
        """Run a multi-turn conversation in one thread; return one judged row per user turn."""
        conv_id = str(case["id"])
        user_id = str(case.get("user_id") or DEFAULT_USER)
        thread_id = f"eval-{self.run_id}-multiturn-{conv_id}"
        rows: list[dict[str, Any]] = []
        said: list[str] = []
        for index, turn in enumerate(case["turns"], 1):
            turn_id = f"{conv_id}#{index}"
            message = str(turn.get("user") or "") if isinstance(turn, dict) else ""
            if not message:
                rows.append(self._error_row("multiturn", turn_id, "", UsageError("turn has no 'user'")))
                continue
            said.append(message)
            try:
                result, ms = self._turn(message, user_id=user_id, thread_id=thread_id,
                                        confirm=turn.get("confirm", case.get("confirm")))
            except Exception as exc:  # noqa: BLE001
                rows.append(self._error_row("multiturn", turn_id, message, exc))
                continue
            row = self._row("multiturn", turn_id, message, user_id, thread_id, result, ms)
            expected = turn.get("expected_status")
            gold_ids = [str(d) for d in turn.get("gold_doc_ids") or []]  # optional in multiturn
            row.update(conversation_id=conv_id, trap=case.get("trap"), expected=expected,
                       gold_facts=turn.get("gold_facts") or [], forbidden=turn.get("forbidden") or [],
                       gold_doc_ids=gold_ids)
            row.update(m.judge_turn(
                suite="multiturn", status=result.status, answer=result.answer,
                question="\n".join(said), evidence=row.pop("_evidence"),
                gold_doc_texts=[self.gold_texts[d] for d in gold_ids if d in self.gold_texts],
                gold_facts=row["gold_facts"], forbidden=row["forbidden"], expected=expected))
            rows.append(row)
        return rows

    def run_verifier(self, case: dict[str, Any], llm: Any = None) -> dict[str, Any]:
        """Run one verifier item through ``strategies.combined.check_answer`` and judge it."""
        from strategies.combined import check_answer

        started = time.perf_counter()
        try:
            with llm_turn(None) as meter:  # [llm] the verifier's LLM calls count like a turn's
                result = check_answer(str(case["question"]), str(case["answer"]),
                                      list(case["evidence"]), llm=llm)
        except Exception as exc:  # noqa: BLE001
            return self._error_row("verifier", str(case["id"]), str(case["question"]), exc)
        return {"suite": "verifier", "id": str(case["id"]), "pair_id": case.get("pair_id"),
                "question": case["question"], "answer": case["answer"], "label": case["label"],
                "error_type": case.get("error_type"), "injected_span": case.get("injected_span"),
                "status": result.get("overall"),
                "unsupported_claims": [c.get("claim") for c in result.get("claims", [])
                                       if c.get("status") != "supported"],
                "latency_ms": round((time.perf_counter() - started) * 1000, 3),
                "llm": meter.summary() if llm is not None else {},
                **m.judge_verifier_case(label=str(case["label"]), overall=str(result.get("overall")))}


def gold_texts_from(retriever: Any) -> dict[str, str]:
    """Return doc id → the concatenated text of its chunks (empty if the retriever lists none)."""
    chunks_fn: Callable[[], Any] | None = getattr(retriever, "chunks", None)
    if chunks_fn is None:
        return {}
    texts: dict[str, list[str]] = {}
    for chunk in chunks_fn():
        texts.setdefault(chunk.doc_id, []).append(chunk.text)
    return {doc: "\n".join(parts) for doc, parts in texts.items()}


def run_cases(
    run: EvalRun,
    suites: dict[str, list[dict[str, Any]]],
    *,
    progress: bool = True,
    verifier_llm: Any = None,
) -> list[dict[str, Any]]:
    """Run every loaded suite with a progress bar on stderr; return all judged rows."""
    from tqdm import tqdm

    total = sum(len(cases) for cases in suites.values())
    rows: list[dict[str, Any]] = []
    with tqdm(total=total, file=sys.stderr, disable=not progress, unit="case", desc="eval") as bar:
        for suite, cases in suites.items():
            bar.set_postfix_str(suite)
            for case in cases:
                if suite == "verifier":
                    rows.append(run.run_verifier(case, llm=verifier_llm))
                elif suite == "multiturn":
                    rows.extend(run.run_conversation(case))
                else:
                    rows.append(run.run_single(suite, case))
                bar.update(1)
    for row in rows:
        row["passed"] = case_passed(row)
    return rows


def _agent(settings: Any, deps: Any = None) -> Any:
    """Return a :class:`csagent.api.CSAgent` with an in-memory checkpointer."""
    from langgraph.checkpoint.memory import InMemorySaver

    from csagent.api import CSAgent

    return CSAgent(settings, deps=deps, checkpointer=InMemorySaver())


def _generated(run: EvalRun, suites: Sequence[str], loaded: dict[str, list[dict[str, Any]]],
               rows: list[dict[str, Any]], settings: Any, *, progress: bool,
               ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Run the generated suites the caller asked for; drop source rows it did not ask for."""
    counts: dict[str, int] = {}
    if "leave-gold-out" in suites:
        lgo = run_leave_gold_out(run, settings, gen.leave_gold_out_cases(loaded), progress=progress)
        counts["leave-gold-out"] = len(lgo)
    else:
        lgo = []
    swap_rows = run_swap(run, rows, loaded) if "swap" in suites else []
    if swap_rows:
        counts["swap"] = len(swap_rows)
    kept = [r for r in rows if r.get("suite") in suites]
    return kept + lgo + swap_rows, counts


def run_leave_gold_out(run: EvalRun, settings: Any, cases: list[dict[str, Any]], *,
                       progress: bool = True) -> list[dict[str, Any]]:
    """Ask every case again with its gold documents excluded from retrieval, and judge it.

    The agent is the same graph over the same index, behind :class:`eval.generated.ExcludingRetriever`.
    """
    from dataclasses import replace

    from tqdm import tqdm

    wrapper = gen.ExcludingRetriever(run.agent.deps.retriever)
    agent = _agent(settings, deps=replace(run.agent.deps, retriever=wrapper))
    sub = EvalRun(agent=agent, gold_texts=run.gold_texts, run_id=run.run_id)
    out: list[dict[str, Any]] = []
    for case in tqdm(cases, file=sys.stderr, disable=not progress, unit="case", desc="leave-gold-out"):
        with wrapper.excluding(case.get("gold_doc_ids") or []):
            row = sub.run_single("leave-gold-out", case)
        row["source_suite"] = case.get("source_suite")
        row["declined"] = not row.get("answered")
        row["passed"] = case_passed(row)
        out.append(row)
    return out


def run_swap(run: EvalRun, rows: list[dict[str, Any]],
             loaded: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Swap a value of each correct verifier answer and each answered normal case; check both.

    The swapped answer must be flagged (verdict not ``pass``); the unswapped control (the same
    answer with its values written canonically) must pass. Answers with no swappable value
    (no second value of the same kind in their evidence) are skipped.
    """
    from strategies.combined import check_answer

    sources: list[tuple[str, str, str, list[dict[str, Any]], bool]] = []
    for case in loaded.get("verifier", []):
        if case.get("label") == "correct":
            sources.append((f"verifier/{case['id']}", str(case["question"]), str(case["answer"]),
                            list(case["evidence"]), False))
    for row in rows:
        if row.get("suite") == "normal" and row.get("answered") and row.get("facts_ok"):
            evidence = run.evidence_of.get(f"normal/{row['id']}", [])
            if evidence:
                sources.append((f"normal/{row['id']}", str(row["question"]), str(row["answer"]),
                                evidence, True))
    out: list[dict[str, Any]] = []
    for source, question, answer, evidence, own in sources:
        texts = [str(e.get("text", "")) for e in evidence]
        swapped = next(gen.swaps(answer, texts), None)
        if swapped is None:
            continue
        try:
            items = cast("list[Any]", evidence)
            verdict = check_answer(question, swapped.answer, items, require_citations=own)
            control = check_answer(question, gen.control(answer), items, require_citations=own)
        except Exception as exc:  # noqa: BLE001 - one broken item must not stop the run
            out.append(run._error_row("swap", source, question, exc))
            continue
        row = {"suite": "swap", "id": source, "question": question, "answer": swapped.answer,
               "original_answer": answer, "kind": swapped.kind, "original": swapped.original,
               "replacement": swapped.replacement, "status": verdict.get("overall"),
               "swap_flagged": verdict.get("overall") != "pass",
               "control_passed": control.get("overall") == "pass",
               "unsupported_claims": [c.get("claim") for c in verdict.get("claims", [])
                                      if c.get("status") != "supported"]}
        row["passed"] = case_passed(row)
        out.append(row)
    return out


def run_foreign(settings: Any, data_dir: Path, *, limit: int | None = None, progress: bool = True,
                folder: Path = gen.FOREIGN_DIR) -> tuple[list[dict[str, Any]], list[str]]:
    """Index the foreign knowledge base and ask its questions with the kb-only profile.

    The index is built with ``csagent ingest`` (the public command) into ``<data dir>/foreign-index``.

    Returns:
        ``(rows, dataset_errors)``.

    """
    import subprocess

    from tqdm import tqdm

    cases, errors = gen.load_foreign(folder)
    if not cases:
        return [], errors or [f"{folder}: no questions"]
    cases = cases[:limit] if limit else cases
    index_dir = data_dir / "foreign-index"
    command = [sys.executable, "-m", "csagent.cli", "ingest", str(gen.foreign_kb_dir(folder)),
               "--index", str(index_dir), "--reset", "--no-progress"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        raise UsageError(f"foreign KB ingest failed: {done.stderr.strip()[-400:]}")
    foreign_settings = settings.with_overrides(index_dir=index_dir, domain_profile="kb-only")
    agent = _agent(foreign_settings)
    run = EvalRun(agent=agent, gold_texts=gold_texts_from(agent.deps.retriever))
    rows: list[dict[str, Any]] = []
    for case in tqdm(cases, file=sys.stderr, disable=not progress, unit="case", desc="foreign"):
        row = run.run_single("foreign", case)
        row["answerable"] = bool(case.get("answerable"))
        row["declined"] = not row.get("answered")
        row["passed"] = case_passed(row)
        rows.append(row)
    return rows, errors


def run_eval(
    *,
    suites: Sequence[str],
    report_dir: Path | None = None,
    index_dir: Path | None = None,
    limit: int | None = None,
    datasets_dir: Path = DATASETS_DIR,
    progress: bool = True,
    settings: Any = None,
    agent: Any = None,
    guards: bool = True,
    foreign_dir: Path | None = None,
) -> dict[str, Any]:
    """Run the named suites and return the results dict (what ``results.json`` holds).

    Args:
        suites: Suite names (see :data:`SUITES`).
        report_dir: Where traces and the eval's shop database go (``<dir>/data``); a temporary
            folder when None.
        index_dir: Knowledge index to use (default: the configured one).
        limit: Run at most this many cases per suite.
        datasets_dir: Folder of the suite files.
        progress: Show a progress bar on stderr.
        settings: Base :class:`csagent.config.Settings` (default: from the environment).
        agent: A ready :class:`csagent.api.CSAgent` (tests); built from ``settings`` otherwise.
        guards: False runs single turns as naive RAG with the same LLM (``--guards off``).
        foreign_dir: The foreign suite's folder (default :data:`eval.generated.FOREIGN_DIR`).

    Returns:
        ``{"run", "metrics", "counts", "targets", "fail_reason_mix", "latency", "confusion",
        "failing", "dataset_errors", "cases"}``.

    """
    from csagent.config import Settings

    if limit is not None and limit < 1:
        raise UsageError("--limit must be at least 1")
    loaded: dict[str, list[dict[str, Any]]] = {}
    dataset_errors: list[str] = []
    sources = [n for n in DEV_SUITES if (n in ("normal", "distractor") and "leave-gold-out" in suites)
               or (n in ("normal", "verifier") and "swap" in suites)]
    needed = list(dict.fromkeys([*(n for n in suites if n in DEV_SUITES), *sources]))  # asked order
    for name in needed:
        if len(needed) > 1 and not (datasets_dir / f"{name}.jsonl").is_file():
            dataset_errors.append(f"{name}.jsonl: not in {datasets_dir}, suite skipped")
            continue  # e.g. a held-out folder without verifier or multi-turn cases
        cases, errors = load_suite(name, datasets_dir)
        loaded[name] = cases[:limit] if limit else cases
        dataset_errors += errors
    base = settings or Settings.from_env()
    tmp: str | None = None
    if report_dir is not None:
        data_dir = Path(report_dir) / "data"
    else:
        tmp = tempfile.mkdtemp(prefix="csagent-eval-")
        data_dir = Path(tmp)
    started = time.perf_counter()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    counts: dict[str, int] = {}
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        (data_dir / "shop.sqlite").unlink(missing_ok=True)  # fresh demo shop every run
        eval_settings = base.with_overrides(
            data_dir=data_dir, index_dir=index_dir or base.resolved_index_dir,
            shop_db=data_dir / "shop.sqlite")
        rows: list[dict[str, Any]] = []
        if any(n in suites for n in (*DEV_SUITES, *GENERATED_SUITES)):
            if agent is None:
                agent = _agent(eval_settings)
            run = EvalRun(agent=agent, gold_texts=gold_texts_from(agent.deps.retriever),
                          guards=guards)  # [llm]
            if not guards and agent.deps.llm is None:
                raise UsageError("--guards off needs an LLM (CSAGENT_LLM_BASE_URL, CSAGENT_LLM_MODEL)")
            llm = agent.deps.llm if eval_settings.llm_configured else None
            rows = run_cases(run, loaded, progress=progress, verifier_llm=llm)
            counts = {name: len(cases) for name, cases in loaded.items() if name in suites}
            rows, extra = _generated(run, suites, loaded, rows, eval_settings, progress=progress)
            counts.update(extra)
        if FOREIGN_SUITE in suites:
            foreign_rows, errors = run_foreign(eval_settings, data_dir, limit=limit, progress=progress,
                                               folder=foreign_dir or gen.FOREIGN_DIR)
            dataset_errors += errors
            rows += foreign_rows
            counts[FOREIGN_SUITE] = len(foreign_rows)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    from csagent import tracing

    tracing.flush()
    aggregate = m.compute_metrics(rows)
    return {
        "run": {
            "started": started_at,
            "seconds": round(time.perf_counter() - started, 3),
            "suites": list(suites),
            "limit": limit,
            "cases": counts,
            "turns": len(rows),
            "mode": "llm" if eval_settings.llm_configured else "offline",
            "guards": "on" if guards else "off (naive RAG: retrieve + plain prompt)",  # [llm]
            "llm_usage": summarize_turns(rows) if eval_settings.llm_configured else None,
            "llm_model": eval_settings.llm_model if eval_settings.llm_configured else None,
            "index_dir": str(eval_settings.resolved_index_dir),
            "traces_dir": str(eval_settings.traces_dir) if report_dir is not None else None,
        },
        **aggregate,
        "confusion": confusion(rows),
        "failing": [f"{r['suite']}/{r['id']}" for r in rows if not r["passed"]],
        "dataset_errors": dataset_errors,
        "cases": rows,
    }


def compare_results(current: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """Compare two results dicts case by case and metric by metric.

    Args:
        current: This run's results.
        other: A previous ``results.json``.

    Returns:
        ``{"metric_deltas": {key: {"before", "after", "delta"}}, "regressions": [...],
        "improvements": [...], "status_changes": [...], "only_before", "only_after"}`` where a
        regression is a case that passed before and fails now (keyed ``suite/id``).

    """
    def index(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {f"{c.get('suite')}/{c.get('id')}": c for c in results.get("cases") or []}

    before, after = index(other), index(current)
    deltas: dict[str, dict[str, float | None]] = {}
    def measured(results: dict[str, Any], key: str) -> float | None:
        """Return the metric, or None when the run did not measure it (denominator 0)."""
        count = (results.get("counts") or {}).get(key) or {}
        if count.get("den") == 0:
            return None
        value = (results.get("metrics") or {}).get(key)
        return None if value is None else float(value)

    for key in m.METRIC_KEYS:
        value_before, value_after = measured(other, key), measured(current, key)
        delta = (None if value_before is None or value_after is None
                 else round(value_after - value_before, 6))
        deltas[key] = {"before": value_before, "after": value_after, "delta": delta}
    regressions, improvements, changes = [], [], []
    for key in sorted(set(before) & set(after)):
        old, new = before[key], after[key]
        entry = {"case": key, "before": old.get("status"), "after": new.get("status"),
                 "question": new.get("question")}
        was, now = bool(old.get("passed", case_passed(old))), bool(new.get("passed"))
        if was and not now:
            regressions.append(entry)
        elif now and not was:
            improvements.append(entry)
        elif old.get("status") != new.get("status"):
            changes.append(entry)
    return {"metric_deltas": deltas, "regressions": regressions, "improvements": improvements,
            "status_changes": changes, "only_before": sorted(set(before) - set(after)),
            "only_after": sorted(set(after) - set(before))}
