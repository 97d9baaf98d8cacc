"""Router calibration (eval/router_calibration.py): gold routes, proposals, per-route thresholds."""

from __future__ import annotations

from typing import Any

from eval.llm_compare import table
from eval.router_calibration import NEVER, gold_routes, proposed_route, summarize, threshold_for


def rows(*pairs: tuple[float | None, bool], route: str = "refuse") -> list[dict[str, Any]]:
    return [{"route": route, "p": p, "correct": ok, "how": "taken"} for p, ok in pairs]


def test_gold_routes_follow_the_case() -> None:
    assert gold_routes("boundary", {"expected": "refused"}) == {"refuse"}
    assert gold_routes("boundary", {"expected": "refused_or_handoff"}) == {"refuse", "handoff"}
    assert gold_routes("normal", {"needs_tool": True}) == {"answer", "tool", "confirm"}
    assert gold_routes("distractor", {}) == {"answer"}


def test_overruled_proposals_are_read_from_the_reason() -> None:
    assert proposed_route(None, ["LLM refusal of a whitelisted domain"])[:2] == ("refuse", None)
    assert proposed_route(None, ["LLM route tool but the question names no profile action"])[0] == "tool"
    assert proposed_route({"route": "answer", "confidence": 0.7}, [])[:2] == ("answer", 0.7)


def test_threshold_is_the_lowest_reliable_probability() -> None:
    data = rows((0.3, False), (0.55, False), (0.6, True), (0.8, True), (0.9, True), (0.99, True))
    assert threshold_for(data) == 0.6
    assert threshold_for(rows((0.9, False), (0.95, True), (0.99, False))) == NEVER
    assert threshold_for(rows((0.99, True), (0.98, True))) == NEVER  # fewer than MIN_N above


def test_summary_has_bins_and_counts_profile_overrules() -> None:
    data = [*rows((0.4, False), (0.97, True), (0.99, True), (0.98, True)),
            {"route": "refuse", "p": None, "correct": False, "how": "LLM refusal of a whitelisted domain"}]
    summary = summarize(data)["refuse"]
    assert summary["n"] == 5 and summary["correct"] == 3 and summary["overruled_by_profile"] == 1
    assert sum(b["n"] for b in summary["bins"]) == 4
    assert summary["threshold"] == 0.97


def test_compare_table_uses_only_shared_cases() -> None:
    def case(cid: str, status: str, **extra: Any) -> dict[str, Any]:
        return {"suite": "boundary", "id": cid, "status": status, "latency_ms": 1000.0,
                "expected": "refused", "boundary_ok": status == "refused", **extra}
    out = table({"a": [case("b1", "refused"), case("b2", "refused")], "b": [case("b1", "answered")]})
    assert "| a | 1 |" in out and "| b | 1 |" in out


def test_compare_joins_the_parts_of_a_run(tmp_path: Any) -> None:
    from eval.llm_compare import load_run

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text('{"cases": [{"suite": "normal", "id": "n1", "status": "handoff"},'
                     ' {"suite": "normal", "id": "n2", "status": "answered"}]}', encoding="utf-8")
    second.write_text('{"cases": [{"suite": "normal", "id": "n1", "status": "answered"}]}', encoding="utf-8")
    cases = {c["id"]: c["status"] for c in load_run(f"{first}+{second}")}
    assert cases == {"n1": "answered", "n2": "answered"}


def test_proposals_are_read_from_a_traced_route_decision() -> None:
    from eval.router_calibration import proposal_from_trace

    taken = {"route": "answer", "confidence": 0.64, "boundary_reason": "r [confidence: logprobs]"}
    assert proposal_from_trace(taken) == ("answer", 0.64, "taken")
    low = {"route": "answer", "confidence": 0.5, "boundary_reason": "nearest intent example "
                                                                   "[LLM route answer at p=0.36 < 0.6]"}
    assert proposal_from_trace(low) == ("answer", 0.36, "below threshold")
    wrong = {"route": "answer", "boundary_reason": "whitelist keyword [LLM route confirm but the "
                                                   "question names no profile action]"}
    assert proposal_from_trace(wrong)[:2] == ("confirm", None)  # type: ignore[index]
    refused = {"route": "answer", "boundary_reason": "x [LLM refusal of a whitelisted domain]"}
    assert proposal_from_trace(refused)[:2] == ("refuse", None)  # type: ignore[index]
    assert proposal_from_trace({"route": "refuse", "boundary_reason": "blacklist keyword"}) is None


def test_a_threshold_counts_every_proposal_at_its_probability() -> None:
    data = rows((0.58, False), (0.58, True), (0.6, True), (0.64, True), (0.66, True))
    assert threshold_for(data) == 0.6  # 0.58 would take the wrong one at 0.58 too (4/5 < 90 %)
