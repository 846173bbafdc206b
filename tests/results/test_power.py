"""``report power``: how many tasks x repeats the paired gate needs, from a run's flakiness."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_osworld.cli import main
from pytest_osworld.record import Termination
from pytest_osworld.results.power import power_table, simulate_power
from pytest_osworld.results.summary import build_summary, write_summary
from tests.results.helpers import manifest, record


def test_no_drop_is_never_detected_and_a_total_drop_always_is() -> None:
    rates = [1.0] * 10
    assert simulate_power(rates, tasks=13, repeats=1, drop=0, alpha=0.05) == 0.0
    assert simulate_power(rates, tasks=13, repeats=1, drop=100, alpha=0.05) == 1.0
    # 5 tasks can never reach p < 0.05 (the smallest two-sided p is 2/32).
    assert simulate_power(rates, tasks=5, repeats=3, drop=100, alpha=0.05) == 0.0


def test_more_tasks_and_fewer_flaky_ones_give_more_power() -> None:
    steady, flaky = [1.0] * 5 + [0.0] * 5, [0.5] * 10
    small = simulate_power(steady, tasks=25, repeats=1, drop=10, alpha=0.05)
    large = simulate_power(steady, tasks=400, repeats=1, drop=10, alpha=0.05)
    assert small < 0.5 < large
    assert simulate_power(flaky, tasks=100, repeats=1, drop=10, alpha=0.05) < simulate_power(
        steady, tasks=100, repeats=1, drop=10, alpha=0.05
    )


def test_the_simulation_is_reproducible() -> None:
    def once() -> float:
        return simulate_power([0.2, 0.9, 0.5], tasks=50, repeats=2, drop=10.0, alpha=0.05)

    assert once() == once()


def test_the_table_covers_the_grid_and_names_the_fewest_tasks() -> None:
    tasks = {f"os/t{i}": {"status": "passed" if i % 2 else "failed", "score": float(i % 2)} for i in range(20)}
    table = power_table(tasks, drop=30, task_counts=(25, 100), repeats=(1, 3), simulations=100)
    assert {(c.tasks, c.repeats) for c in table.cells} == {(n, r) for n in (20, 25, 100) for r in (1, 3)}
    assert table.observed_tasks == 20 and table.observed_k == 1 and table.success_rate == 0.5
    best = table.smallest(1)
    assert best is not None and best.power >= 0.8 and best.tasks in (20, 25, 100)


def test_a_run_without_scores_has_nothing_to_estimate() -> None:
    with pytest.raises(ValueError, match="no task with a valid score"):
        power_table({"os/a": {"status": "masked", "score": None}}, drop=10)


def test_report_power_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys = [f"os/t{i}{r}" for i in range(12) for r in ("", "#r2")]
    recs = {k: record(k, 1.0 if (k.endswith("#r2") or int(k[4:].split("#")[0]) % 3) else 0.0) for k in keys}
    (tmp_path / "run").mkdir()
    write_summary(tmp_path / "run", build_summary(recs, manifest("r", keys, repeat=2)))
    assert main(["report", "power", str(tmp_path / "run"), "--drop", "20"]) == 0
    out = capsys.readouterr().out
    assert "power to detect a 20-point drop (alpha 0.05, allowed drop 0)" in out
    assert "4 of 12 tasks flaky over k=2" in out
    assert "  tasks    x1 repeats  x2 repeats  x3 repeats  x5 repeats" in out
    assert "80% power with 3 repeats: 25 tasks x 3 (75 episodes per run)" in out
    masked = {"os/a": record("os/a", None, Termination.SANDBOX_LOST)}
    (tmp_path / "masked").mkdir()
    write_summary(tmp_path / "masked", build_summary(masked, manifest("m", ["os/a"])))
    assert main(["report", "power", str(tmp_path / "masked")]) == 2
    assert "nothing to estimate flakiness from" in capsys.readouterr().err
