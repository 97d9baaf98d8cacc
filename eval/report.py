"""Write evaluation results: ``results.json``, ``summary.md`` and a self-contained ``report.html``.

The HTML has no external references: plots are matplotlib PNGs inlined as base64 ``data:``
URIs, styles are inline. Plots: metric bars against their targets, latency per node (p50/p95),
the fail-reason mix; tables: targets with pass/fail, the expected-vs-actual status confusion
table, failing cases, and (with ``--compare``) metric deltas and per-case regressions.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from eval.metrics import METRIC_KEYS, TARGETS

MAX_LISTED = 200


def _pct(value: Any) -> str:
    return "-" if value is None else f"{100 * float(value):.1f}%"


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; reports are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def target_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Return one row per metric: value, num/den, target text and pass/fail/not measured."""
    rows = []
    counts = results.get("counts") or {}
    for key in METRIC_KEYS:
        value = (results.get("metrics") or {}).get(key)
        count = counts.get(key) or {}
        target = (results.get("targets") or {}).get(key)
        if key in TARGETS:
            op, goal = TARGETS[key]
            target_text = f"{'≤' if op == 'max' else '≥'} {_pct(goal)}"
            met = target.get("met") if target else None
            verdict = "not measured" if met is None else "PASS" if met else "FAIL"
        else:
            target_text, verdict = "-", "-"
        rows.append({"metric": key, "value": value, "num": count.get("num"), "den": count.get("den"),
                     "target": target_text, "verdict": verdict})
    return rows


def render_summary(results: dict[str, Any], comparison: dict[str, Any] | None = None, *,
                   max_failing: int = MAX_LISTED) -> str:
    """Render the Markdown summary (targets, fail reasons, latency, confusion, failing cases).

    Args:
        results: The results dict.
        comparison: Output of ``compare_results`` (adds deltas, regressions, improvements).
        max_failing: List at most this many failing cases (0: only their number).

    """
    run = results.get("run") or {}
    out = ["# csagent evaluation", "",
           f"Mode: {run.get('mode', '?')}; guards: {run.get('guards', 'on')}; suites: {', '.join(run.get('suites') or [])}; "
           f"turns: {run.get('turns', '?')}; {run.get('seconds', '?')} s; started {run.get('started', '?')}.",
           "", "| metric | value | n | target | result |", "|---|---|---|---|---|"]
    for row in target_rows(results):
        out.append(f"| {row['metric']} | {_pct(row['value'])} | {row['num']}/{row['den']} | "
                   f"{row['target']} | {row['verdict']} |")
    usage = run.get("llm_usage")
    if usage:  # [llm] how much of this "llm" run really used the LLM
        steps = ", ".join(f"{node} {v['turns_ok']}" for node, v in sorted(usage["per_node"].items()))
        out += ["", f"LLM use: {usage['turns_with_ok']}/{usage['turns']} turns got at least one LLM "
                f"reply; calls {usage['calls']} (ok {usage['ok']}, failed {usage['failed']}); "
                f"tokens {usage['prompt_tokens']} prompt / {usage['completion_tokens']} completion; "
                f"p50 calls per answered turn {usage['calls_per_answered_turn_p50']}; "
                f"turns with an LLM reply per step: {steps or 'none'}."]
    if run.get("traces_dir"):
        out += ["", f"Open any case's trace with `csagent trace TRACE_ID --traces-dir {run['traces_dir']}`."]
    missed = [r["metric"] for r in target_rows(results) if r["verdict"] == "FAIL"]
    strict = (results.get("extra_metrics") or {}).get("hallucination_rate_gold_only")
    if strict is not None:
        c = (results.get("counts") or {}).get("hallucination_rate_gold_only") or {}
        out += ["", f"Strict hallucination rate (facts outside the gold docs, tool data and question, "
                f"even when a current KB chunk is cited): {_pct(strict)} ({c.get('num')}/{c.get('den')})."]
    out += ["", "Targets not met: " + (", ".join(missed) if missed else "none") + "."]
    mix = results.get("fail_reason_mix") or {}
    out += ["", "## Fail reasons", "", "| reason | turns |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in sorted(mix.items(), key=lambda kv: -kv[1])]
    latency = results.get("latency") or {}
    out += ["", "## Latency per node (ms)", "", "| node | p50 | p95 | n |", "|---|---|---|---|"]
    out += [f"| {k} | {v['p50']:.1f} | {v['p95']:.1f} | {v['n']} |" for k, v in latency.items()]
    table = results.get("confusion") or {}
    statuses = sorted({s for row in table.values() for s in row})
    out += ["", "## Expected vs actual status", "", "| expected \\ actual | " + " | ".join(statuses) + " |",
            "|---" * (len(statuses) + 1) + "|"]
    for expected, row in sorted(table.items()):
        out.append(f"| {expected} | " + " | ".join(str(row.get(s, 0)) for s in statuses) + " |")
    failing = [c for c in results.get("cases") or [] if not c.get("passed")]
    out += ["", f"## Failing cases ({len(failing)})", ""]
    for case in failing[:max_failing]:
        out.append(f"- `{case.get('suite')}/{case.get('id')}` {_why(case)}")
    if len(failing) > max_failing:
        out.append(f"- … {len(failing) - max_failing} more in summary.md / results.json")
    if results.get("dataset_errors"):
        out += ["", "## Skipped dataset lines", ""] + [f"- {e}" for e in results["dataset_errors"]]
    if comparison:
        out += ["", "## Compared with the previous results", "", "| metric | before | after | delta |",
                "|---|---|---|---|"]
        for key, d in comparison["metric_deltas"].items():
            delta = "-" if d["delta"] is None else f"{100 * d['delta']:+.1f} pt"
            out.append(f"| {key} | {_pct(d['before'])} | {_pct(d['after'])} | {delta} |")
        for title, key in (("Regressions", "regressions"), ("Improvements", "improvements")):
            out += ["", f"### {title} ({len(comparison[key])})", ""]
            out += [f"- `{e['case']}`: {e['before']} → {e['after']}" for e in comparison[key][:MAX_LISTED]]
    return "\n".join(out) + "\n"


def _why(case: dict[str, Any]) -> str:
    """Return a short reason a case failed."""
    if case.get("error"):
        return f"error: {case['error']}"
    if case.get("suite") == "verifier":
        return ("missed injected error" if case.get("injected") else "false alarm") + \
            f" ({case.get('error_type') or 'correct'}, verdict {case.get('status')})"
    parts = [f"status {case.get('status')}"]
    if case.get("expected"):
        parts.append(f"expected {case['expected']}")
    if case.get("unsupported_facts"):
        parts.append("unsupported " + "、".join(case["unsupported_facts"]))
    if case.get("forbidden_found"):
        parts.append("forbidden " + "、".join(case["forbidden_found"]))
    if case.get("answered") and case.get("missing_facts"):
        parts.append("missing " + "、".join(map(str, case["missing_facts"])))
    if case.get("fail_reason"):
        parts.append(f"fail_reason {case['fail_reason']}")
    return "; ".join(parts)


# --------------------------------------------------------------------------- plots


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def plot_metrics(results: dict[str, Any]) -> str:
    """Return a data URI of a bar chart of every metric with its target marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = results.get("metrics") or {}
    keys = list(METRIC_KEYS)
    values = [100 * float(metrics.get(k) or 0.0) for k in keys]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    colors = []
    for key in keys:
        met = ((results.get("targets") or {}).get(key) or {}).get("met")
        colors.append("#999999" if met is None else "#2e7d32" if met else "#c62828")
    ax.barh(keys, values, color=colors)
    for i, key in enumerate(keys):
        if key in TARGETS:
            ax.plot([100 * TARGETS[key][1]] * 2, [i - 0.4, i + 0.4], color="black", linewidth=2)
        ax.text(min(values[i] + 1, 92), i, f"{values[i]:.1f}%", va="center", fontsize=8)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% (black tick = target; green met, red missed, grey no target)")
    ax.invert_yaxis()
    return _png(fig)


def plot_latency(results: dict[str, Any]) -> str | None:
    """Return a data URI of p50/p95 latency per node, or None without latency data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    latency = {k: v for k, v in (results.get("latency") or {}).items() if k != "total"}
    if not latency:
        return None
    names = list(latency)
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(names) + 1.2))
    y = range(len(names))
    ax.barh([i + 0.2 for i in y], [latency[n]["p95"] for n in names], height=0.4, label="p95",
            color="#90caf9")
    ax.barh([i - 0.2 for i in y], [latency[n]["p50"] for n in names], height=0.4, label="p50",
            color="#1565c0")
    ax.set_yticks(list(y), names)
    ax.invert_yaxis()
    ax.set_xlabel("ms")
    ax.legend(loc="lower right")
    return _png(fig)


def plot_fail_reasons(results: dict[str, Any]) -> str | None:
    """Return a data URI of the fail-reason counts, or None when there are none."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mix = results.get("fail_reason_mix") or {}
    if not any(mix.values()):
        return None
    names = sorted(mix, key=lambda k: -mix[k])
    fig, ax = plt.subplots(figsize=(7, 0.4 * len(names) + 1.2))
    ax.barh(names, [mix[n] for n in names], color="#ef6c00")
    ax.invert_yaxis()
    ax.set_xlabel("turns")
    return _png(fig)


# --------------------------------------------------------------------------- HTML

_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:4px 8px;
text-align:left;vertical-align:top;font-size:14px}th{background:#f3f3f3}.PASS{color:#2e7d32;
font-weight:bold}.FAIL{color:#c62828;font-weight:bold}code{background:#f6f6f6;padding:0 3px}
img{max-width:100%}"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def render_html(results: dict[str, Any], comparison: dict[str, Any] | None = None) -> str:
    """Render the self-contained HTML report (no external URLs; images inlined)."""
    run = results.get("run") or {}
    parts = ["<!DOCTYPE html><html lang='zh'><head><meta charset='utf-8'>",
             "<title>csagent evaluation</title>", f"<style>{_CSS}</style></head><body>",
             "<h1>csagent evaluation</h1>",
             f"<p>Mode <b>{_e(run.get('mode'))}</b>; suites {_e(', '.join(run.get('suites') or []))}; "
             f"{_e(run.get('turns'))} turns in {_e(run.get('seconds'))} s; started {_e(run.get('started'))}.</p>",
             "<h2>Metrics and targets</h2><table><tr><th>metric</th><th>value</th><th>n</th>"
             "<th>target</th><th>result</th></tr>"]
    for row in target_rows(results):
        parts.append(f"<tr><td>{_e(row['metric'])}</td><td>{_pct(row['value'])}</td>"
                     f"<td>{_e(row['num'])}/{_e(row['den'])}</td><td>{_e(row['target'])}</td>"
                     f"<td class='{_e(row['verdict'])}'>{_e(row['verdict'])}</td></tr>")
    parts.append("</table>")
    strict = (results.get("extra_metrics") or {}).get("hallucination_rate_gold_only")
    if strict is not None:
        parts.append(f"<p>Strict hallucination rate (gold docs, tool data and question only): "
                     f"{_pct(strict)}.</p>")
    parts.append(f"<img alt='metrics vs targets' src='{plot_metrics(results)}'>")
    latency_png = plot_latency(results)
    parts.append("<h2>Latency per node</h2>")
    if latency_png:
        parts.append(f"<img alt='latency per node' src='{latency_png}'>")
    parts.append("<table><tr><th>node</th><th>p50 ms</th><th>p95 ms</th><th>n</th></tr>")
    for node, v in (results.get("latency") or {}).items():
        parts.append(f"<tr><td>{_e(node)}</td><td>{v['p50']:.1f}</td><td>{v['p95']:.1f}</td>"
                     f"<td>{v['n']}</td></tr>")
    parts.append("</table><h2>Fail-reason mix</h2>")
    fail_png = plot_fail_reasons(results)
    if fail_png:
        parts.append(f"<img alt='fail reasons' src='{fail_png}'>")
    parts.append("<table><tr><th>reason</th><th>turns</th></tr>")
    for reason, count in sorted((results.get("fail_reason_mix") or {}).items(), key=lambda kv: -kv[1]):
        parts.append(f"<tr><td>{_e(reason)}</td><td>{count}</td></tr>")
    parts.append("</table>")
    table = results.get("confusion") or {}
    statuses = sorted({s for row in table.values() for s in row})
    parts.append("<h2>Expected vs actual status</h2><table><tr><th>expected \\ actual</th>"
                 + "".join(f"<th>{_e(s)}</th>" for s in statuses) + "</tr>")
    for expected, row in sorted(table.items()):
        parts.append(f"<tr><th>{_e(expected)}</th>"
                     + "".join(f"<td>{row.get(s, 0)}</td>" for s in statuses) + "</tr>")
    parts.append("</table>")
    if comparison:
        parts.append("<h2>Compared with previous results</h2><table><tr><th>metric</th>"
                     "<th>before</th><th>after</th><th>delta</th></tr>")
        for key, d in comparison["metric_deltas"].items():
            delta = "-" if d["delta"] is None else f"{100 * d['delta']:+.1f} pt"
            parts.append(f"<tr><td>{_e(key)}</td><td>{_pct(d['before'])}</td>"
                         f"<td>{_pct(d['after'])}</td><td>{delta}</td></tr>")
        parts.append("</table>")
        for title, key in (("Regressions", "regressions"), ("Improvements", "improvements")):
            items = comparison[key]
            parts.append(f"<h3>{title} ({len(items)})</h3><table><tr><th>case</th><th>before</th>"
                         "<th>after</th><th>question</th></tr>")
            for e in items[:MAX_LISTED]:
                parts.append(f"<tr><td><code>{_e(e['case'])}</code></td><td>{_e(e['before'])}</td>"
                             f"<td>{_e(e['after'])}</td><td>{_e(e['question'])}</td></tr>")
            parts.append("</table>")
    failing = [c for c in results.get("cases") or [] if not c.get("passed")]
    parts.append(f"<h2>Failing cases ({len(failing)})</h2><table><tr><th>case</th><th>question</th>"
                 "<th>answer</th><th>why</th><th>trace</th></tr>")
    for case in failing[:MAX_LISTED]:
        parts.append(f"<tr><td><code>{_e(case.get('suite'))}/{_e(case.get('id'))}</code></td>"
                     f"<td>{_e(case.get('question'))}</td><td>{_e(case.get('answer'))}</td>"
                     f"<td>{_e(_why(case))}</td><td><code>{_e(case.get('trace_id'))}</code></td></tr>")
    parts.append("</table>")
    if len(failing) > MAX_LISTED:
        parts.append(f"<p>… {len(failing) - MAX_LISTED} more in results.json</p>")
    if results.get("dataset_errors"):
        parts.append("<h2>Skipped dataset lines</h2><ul>"
                     + "".join(f"<li>{_e(e)}</li>" for e in results["dataset_errors"]) + "</ul>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_report(results: dict[str, Any], report_dir: Path,
                 comparison: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write ``results.json``, ``summary.md`` and ``report.html`` into ``report_dir``.

    Args:
        results: From :func:`eval.runner.run_eval`.
        report_dir: Output folder (created).
        comparison: From :func:`eval.runner.compare_results` (also stored in results.json).

    Returns:
        ``{"results": path, "summary": path, "html": path}``.

    """
    report_dir = Path(report_dir)
    data = dict(results)
    if comparison is not None:
        data["comparison"] = comparison
    paths = {"results": report_dir / "results.json", "summary": report_dir / "summary.md",
             "html": report_dir / "report.html"}
    _atomic_write(paths["results"], json.dumps(data, ensure_ascii=False, indent=1) + "\n")
    _atomic_write(paths["summary"], render_summary(results, comparison))
    _atomic_write(paths["html"], render_html(results, comparison))
    return paths
