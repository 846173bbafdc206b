"""Repeats in summary.json: per-task and overall mean, spread, pass@k, pass^k and flaky tasks, by hand."""

from __future__ import annotations

import math
from typing import Any

import pytest

from pytest_osworld.record import Termination
from pytest_osworld.results.render import summary_lines
from pytest_osworld.results.summary import build_summary
from tests.results.helpers import manifest, record

T = Termination


def summary_of(scores: dict[str, float | None], repeat: int) -> dict[str, Any]:
    """A run from run keys to scores (None: masked)."""
    recs = {
        key: record(key, score, T.DONE) if score is not None else record(key, None, T.SANDBOX_LOST)
        for key, score in scores.items()
    }
    return build_summary(recs, manifest("r", list(scores), repeat=repeat), run_id="r")


MIXED = summary_of(
    {
        "os/a": 1.0,
        "os/a#r2": 1.0,  # 2/2
        "os/b": 1.0,
        "os/b#r2": 0.0,  # 1/2: flaky
        "os/c": 0.5,
        "os/c#r2": 0.0,  # 0/2, partial credit once
        "os/d": None,
        "os/d#r2": 1.0,  # masked once: judged on 1/1
        "os/e": None,
        "os/e#r2": None,  # never judged
    },
    repeat=2,
)


def test_per_task_figures() -> None:
    by_task = MIXED["repeats"]["by_task"]
    assert by_task["os/a"] == {
        "runs": 2,
        "successes": 2,
        "success_rate": 1.0,
        "mean_score": 1.0,
        "std_score": 0.0,
        "pass_at_k": True,
        "pass_hat_k": True,
        "flaky": False,
        "masked": 0,
        "skipped": 0,
    }
    b = by_task["os/b"]
    assert (b["successes"], b["runs"], b["pass_at_k"], b["pass_hat_k"], b["flaky"]) == (1, 2, True, False, True)
    assert b["mean_score"] == 0.5 and b["std_score"] == pytest.approx(math.sqrt(0.5), abs=1e-6)
    c = by_task["os/c"]
    assert (c["successes"], c["pass_at_k"], c["flaky"], c["mean_score"]) == (0, False, False, 0.25)
    assert c["std_score"] == pytest.approx(math.sqrt(0.125), abs=1e-6)
    d = by_task["os/d"]
    assert (d["runs"], d["successes"], d["masked"], d["pass_hat_k"], d["std_score"]) == (1, 1, 1, True, None)
    assert by_task["os/e"]["runs"] == 0 and by_task["os/e"]["masked"] == 2


def test_overall_figures() -> None:
    r = MIXED["repeats"]
    assert r["k"] == 2 and r["tasks"] == 4  # e has no valid episode: left out, listed
    assert r["unjudged_tasks"] == ["os/e"]
    assert (r["pass_at_k"], r["pass_at_k_tasks"]) == (0.75, 3)  # a, b, d
    assert (r["pass_hat_k"], r["pass_hat_k_tasks"]) == (0.5, 2)  # a, d
    assert r["flaky_tasks"] == ["os/b"]
    assert r["success_rate"] == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    assert r["mean_score"] == pytest.approx((1 + 0.5 + 0.25 + 1) / 4)
    # repeat 1: a, b, c (d masked) -> 2/3; repeat 2: a, b, c, d -> 2/4
    assert [(p["repeat"], p["episodes"]) for p in r["per_repeat"]] == [(1, 3), (2, 4)]
    assert [p["success_rate"] for p in r["per_repeat"]] == pytest.approx([2 / 3, 0.5], abs=1e-6)
    assert r["std_success_rate"] == pytest.approx(abs(2 / 3 - 0.5) / math.sqrt(2), abs=1e-6)


def test_all_equal_runs_have_no_spread_and_no_flaky_task() -> None:
    r = summary_of({f"os/t{i}{suffix}": 1.0 for i in range(3) for suffix in ("", "#r2", "#r3")}, repeat=3)["repeats"]
    assert (r["k"], r["tasks"], r["pass_at_k"], r["pass_hat_k"], r["flaky_tasks"]) == (3, 3, 1.0, 1.0, [])
    assert r["std_success_rate"] == 0.0 and r["std_mean_score"] == 0.0
    assert all(t["std_score"] == 0.0 for t in r["by_task"].values())


def test_a_single_task_without_repeats() -> None:
    r = summary_of({"os/only": 0.0}, repeat=1)["repeats"]
    assert (r["k"], r["tasks"], r["pass_at_k"], r["pass_hat_k"], r["flaky_tasks"]) == (1, 1, 0.0, 0.0, [])
    assert r["std_success_rate"] is None and r["by_task"]["os/only"]["std_score"] is None


def test_the_terminal_summary_shows_repeats_only_when_there_are_some() -> None:
    lines = "\n".join(summary_lines(MIXED))
    assert "repeats    k=2 over 4 tasks: pass@2 3/4 75.0%, pass^2 2/4 50.0%" in lines
    assert "flaky      1: os/b 1/2" in lines
    assert "repeats" not in "\n".join(summary_lines(summary_of({"os/only": 1.0}, repeat=1)))
