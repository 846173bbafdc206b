"""The paired gate (the default): a drop fails only when it is above the allowance AND significant."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.cli import main
from pytest_osworld.record import Termination
from pytest_osworld.results.gate import GateRules, evaluate
from pytest_osworld.results.paired import paired_compare
from pytest_osworld.results.summary import build_summary, write_summary
from tests.results.helpers import manifest, record

T = Termination
TASKS = [f"os/t{i:02d}" for i in range(13)]


def run_of(scores: Mapping[str, float | None], repeat: int = 2, gdrive: tuple[str, ...] = ()) -> dict[str, Any]:
    """A summary from task -> score of every repeat (None: masked)."""
    recs = {}
    for task, score in scores.items():
        for r in range(1, repeat + 1):
            key = task if r == 1 else f"{task}#r{r}"
            recs[key] = (
                record(key, score, T.DONE, gdrive=task in gdrive)
                if score is not None
                else record(key, None, T.SANDBOX_LOST, gdrive=task in gdrive)
            )
    return build_summary(recs, manifest("r", sorted(recs), repeat=repeat), run_id="r")


ORACLE = run_of(dict.fromkeys(TASKS, 1.0))
NULL = run_of(dict.fromkeys(TASKS, 0.0))
ONE_LOST = run_of(dict.fromkeys(TASKS, 1.0) | {"os/t03": 0.0})


def test_oracle_against_null_is_a_significant_drop() -> None:
    result = evaluate(NULL, GateRules(baseline=ORACLE, max_drop=2))
    assert not result.held and result.exit_status == 1 and not result.infrastructure
    paired = result.paired
    assert paired is not None and len(paired.pairs) == 13 and len(paired.worse) == 13
    assert paired.p_value == pytest.approx(2 / 2**13)
    assert paired.drop_points == pytest.approx(100.0)
    assert result.verdict == (
        "drop 100.0 points, p = 0.00024: significant (p < alpha 0.05) and above the allowed 2 points"
    )
    assert "from 100.0% to 0.0% over 13 tasks" in result.failures[0]


def test_one_task_lost_is_within_noise_though_above_max_drop() -> None:
    result = evaluate(ONE_LOST, GateRules(baseline=ORACLE, max_drop=2))
    assert result.held and result.exit_status == 0
    assert result.verdict is not None
    assert result.verdict.startswith("drop 7.7 points, p = 1.00: not significant (within noise)")
    assert result.paired is not None and [p.task for p in result.paired.worse] == ["os/t03"]
    # The fixed rule, on the same runs, fails.
    assert not evaluate(ONE_LOST, GateRules(baseline=ORACLE, max_drop=2, gate="fixed")).held


def test_a_drop_within_the_allowance_holds_whatever_p() -> None:
    result = evaluate(NULL, GateRules(baseline=ORACLE, max_drop=100))
    assert result.held and result.verdict is not None and "within the allowed drop of 100 points" in result.verdict


def test_alpha_decides_significance() -> None:
    six_lost = run_of(dict.fromkeys(TASKS, 1.0) | dict.fromkeys(TASKS[:6], 0.0))  # p = 2/64 = 0.03125
    assert not evaluate(six_lost, GateRules(baseline=ORACLE, max_drop=2)).held
    assert evaluate(six_lost, GateRules(baseline=ORACLE, max_drop=2, alpha=0.01)).held


def test_repeats_are_averaged_per_task_and_flaky_tasks_marked() -> None:
    base = build_summary(
        {k: record(k, s) for k, s in {"os/a": 1.0, "os/a#r2": 1.0, "os/b": 1.0, "os/b#r2": 0.0}.items()},
        manifest("b", ["os/a", "os/a#r2", "os/b", "os/b#r2"], repeat=2),
    )
    new = build_summary(
        {k: record(k, s) for k, s in {"os/a": 1.0, "os/a#r2": 0.0, "os/b": 1.0, "os/b#r2": 0.0}.items()},
        manifest("n", ["os/a", "os/a#r2", "os/b", "os/b#r2"], repeat=2),
    )
    paired = paired_compare(base, new)
    assert paired.base_rate == pytest.approx(0.75) and paired.new_rate == pytest.approx(0.5)
    assert paired.change_points == pytest.approx(-25.0)
    assert [p.describe() for p in paired.worse] == ["os/a (2/2 -> 1/2, flaky)"]
    assert paired.better == [] and paired.to_json()["flaky"] == ["os/a", "os/b"]


def test_one_sided_masked_and_skipped_tasks_are_left_out_and_counted() -> None:
    base = run_of({"os/a": 1.0, "os/b": 1.0, "os/c": 1.0, "os/old": 1.0})
    new = run_of({"os/a": 1.0, "os/b": None, "os/c": 0.0, "os/new": 0.0})
    paired = paired_compare(base, new)
    assert [p.task for p in paired.pairs] == ["os/a", "os/c"]
    assert paired.masked == ["os/b"] and paired.only_base == ["os/old"] and paired.only_new == ["os/new"]
    assert paired.drop_points == pytest.approx(50.0)


def test_the_no_gdrive_view_leaves_drive_tasks_out() -> None:
    base = run_of({"os/a": 1.0, "os/drive": 1.0}, gdrive=("os/drive",))
    new = run_of({"os/a": 1.0, "os/drive": 0.0}, gdrive=("os/drive",))
    assert paired_compare(base, new, "no_gdrive").drop_points == pytest.approx(0.0)
    assert paired_compare(base, new, "all").drop_points == pytest.approx(50.0)


def test_nothing_paired_fails_the_gate() -> None:
    result = evaluate(run_of({"os/x": 1.0}), GateRules(baseline=run_of({"os/y": 1.0})))
    assert not result.held and "nothing to compare" in result.failures[0]


# --- report compare ------------------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, summary: dict[str, Any]) -> Path:
    (tmp_path / name).mkdir()
    return write_summary(tmp_path / name, summary)


def test_report_compare_prints_the_interval_the_test_and_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oracle, null, lost = (_write(tmp_path, n, s) for n, s in (("o", ORACLE), ("n", NULL), ("l", ONE_LOST)))
    assert main(["report", "compare", str(oracle), str(null), "--max-drop", "2"]) == 1
    out = capsys.readouterr().out
    assert "gate: FAILED, exit status 1" in out
    assert "success    100.0% -> 0.0%: -100.0 points, 95% CI [-100.0, -100.0]" in out
    assert "test       exact McNemar (sign test over tasks): 13 worse, 0 better, p = 0.00024" in out

    assert main(["report", "compare", str(oracle), str(lost), "--max-drop", "2"]) == 0
    out = capsys.readouterr().out
    assert "gate: HELD, exit status 0" in out and "drop 7.7 points, p = 1.00: not significant (within noise)" in out
    assert "worse (1): os/t03 (2/2 -> 0/2)" in out

    assert main(["report", "compare", str(oracle), str(lost), "--max-drop", "2", "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["paired"]["p_value"] == 1.0 and verdict["paired"]["paired_tasks"] == 13
    assert verdict["paired"]["change_interval_points"]["level"] == 0.95


def test_report_compare_refuses_a_bad_alpha(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    oracle = _write(tmp_path, "o", ORACLE)
    with pytest.raises(SystemExit) as exited:
        main(["report", "compare", str(oracle), str(oracle), "--alpha", "5"])
    assert exited.value.code == 2
    assert "--alpha: expected a number between 0 and 1" in capsys.readouterr().err
