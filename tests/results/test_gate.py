"""The fixed gate and ``report compare --gate fixed``: exit 1 for any drop beyond the allowance or an
infrastructure problem (the paired gate, the default, is in test_paired_gate.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.cli import main
from pytest_osworld.record import Termination
from pytest_osworld.results.gate import GateRules, compare, evaluate
from pytest_osworld.results.summary import build_summary, write_summary
from tests.results.helpers import manifest, record

T = Termination
KEYS = [f"os/t{i}" for i in range(10)]


def summary_of(scores: Mapping[str, float | None], masked: tuple[str, ...] = ()) -> dict[str, Any]:
    recs = {}
    for key in KEYS:
        if key in masked:
            recs[key] = record(key, None, T.SANDBOX_LOST)
        else:
            recs[key] = record(key, scores.get(key, 0.0), T.DONE)
    return build_summary(recs, manifest("r", KEYS), run_id="r")


# Baseline: t0..t5 pass (60%). New: t0..t4 pass (50%) -> a drop of 10 points, t5 flipped.
BASE = summary_of(dict.fromkeys(KEYS[:6], 1.0))
NEW = summary_of(dict.fromkeys(KEYS[:5], 1.0) | {"os/t9": 0.0})


def test_a_drop_beyond_the_allowance_fails_naming_the_flipped_tasks() -> None:
    result = evaluate(NEW, GateRules(baseline=BASE, max_drop=2, gate="fixed"))
    assert not result.held and result.exit_status == 1 and not result.infrastructure
    assert len(result.failures) == 1
    assert "dropped 10.0 points, from 60.0% to 50.0%" in result.failures[0]
    assert "os/t5 (score 1 -> score 0)" in result.failures[0]
    assert result.comparison is not None
    assert [f.key for f in result.comparison.pass_to_fail] == ["os/t5"]


def test_within_the_allowance_holds_although_tasks_failed() -> None:
    result = evaluate(NEW, GateRules(baseline=BASE, max_drop=10, gate="fixed"))
    assert result.held and result.exit_status == 0 and result.failures == []


def test_a_baseline_without_max_drop_allows_no_drop() -> None:
    assert not evaluate(NEW, GateRules(baseline=BASE, gate="fixed")).held
    assert evaluate(BASE, GateRules(baseline=BASE, gate="fixed")).held


def test_fail_to_pass_is_listed() -> None:
    better = summary_of(dict.fromkeys(KEYS[:6], 1.0) | {"os/t8": 1.0})
    c = compare(BASE, better)
    assert [f.key for f in c.fail_to_pass] == ["os/t8"] and c.pass_to_fail == []
    assert c.drop_points == pytest.approx(-10.0)


def test_masks_above_the_maximum_are_an_infrastructure_failure() -> None:
    masked = summary_of(dict.fromkeys(KEYS, 1.0), masked=("os/t1", "os/t2", "os/t3"))
    result = evaluate(masked, GateRules(max_masked=2))
    assert not result.held and result.infrastructure
    assert result.failures[0].startswith("infrastructure problem: 3 masked tasks exceed --osworld-max-masked 2")
    assert "sandbox_lost 3" in result.failures[0]
    assert evaluate(masked, GateRules(max_masked=3)).held


def test_a_mask_turns_a_pass_into_a_flip_in_the_all_view_only() -> None:
    masked = summary_of(dict.fromkeys(KEYS[:6], 1.0), masked=("os/t0",))
    assert [str(f) for f in compare(BASE, masked).pass_to_fail] == ["os/t0 (score 1 -> masked: sandbox_lost)"]
    # The valid view pairs the 9 episodes valid in both: t1..t5 pass on both sides, no drop.
    valid = compare(BASE, masked, "valid")
    assert valid.compared == 9 and valid.only_base == ["os/t0"] and valid.pass_to_fail == []
    assert valid.drop_points == pytest.approx(0.0)


def test_min_success() -> None:
    assert evaluate(NEW, GateRules(min_success=0.5)).held
    result = evaluate(NEW, GateRules(min_success=0.6))
    assert not result.held and "below --osworld-min-success 60.0%" in result.failures[0]


def test_missing_records_fail_the_gate_as_incomplete() -> None:
    recs = {k: record(k, 1.0) for k in KEYS[:9]}
    incomplete = build_summary(recs, manifest("r", KEYS))
    result = evaluate(incomplete, GateRules(min_success=0.1))
    assert not result.held and result.infrastructure and "incomplete run: 1 selected tasks" in result.failures[0]


def test_different_task_sets_are_compared_on_common_episodes() -> None:
    other = dict(NEW, identity=dict(NEW["identity"], input_sha256="b" * 64))
    other["tasks"] = {k: v for k, v in NEW["tasks"].items() if k != "os/t9"}
    result = evaluate(other, GateRules(baseline=BASE, max_drop=50, gate="fixed"))
    assert result.comparison is not None
    assert result.comparison.compared == 9 and result.comparison.only_base == ["os/t9"]
    assert any("different task input" in n for n in result.notes)


def test_inactive_without_rules() -> None:
    assert not GateRules().active and GateRules(max_masked=0).active


# --- report compare: the same rule offline --------------------------------------------------------------


def _write(tmp_path: Path, name: str, summary: dict[str, Any]) -> Path:
    (tmp_path / name).mkdir()
    return write_summary(tmp_path / name, summary)


def test_report_compare_exit_status_follows_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, new = _write(tmp_path, "base", BASE), _write(tmp_path, "new", NEW)
    assert main(["report", "compare", str(base), str(new), "--max-drop", "2", "--gate", "fixed"]) == 1
    out = capsys.readouterr().out
    assert "gate: FAILED, exit status 1" in out and "pass -> fail (1): os/t5" in out
    assert main(["report", "compare", str(base), str(new), "--max-drop", "10", "--gate", "fixed"]) == 0
    assert "gate: HELD" in capsys.readouterr().out
    folders = [str(tmp_path / "base"), str(tmp_path / "new")]
    assert main(["report", "compare", *folders, "--max-drop", "10", "--gate", "fixed", "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["held"] and verdict["comparison"]["pass_to_fail"][0]["key"] == "os/t5"


def test_report_compare_names_a_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "compare", str(tmp_path / "nope.json"), str(tmp_path / "nope.json")]) == 2
    assert "nope.json: no such file" in capsys.readouterr().err
