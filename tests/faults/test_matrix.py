"""The fault matrix: every fault a long run meets, injected into real runs of the quick bundled tasks at
-n 2, each at a moment drawn from a seed the output prints, with everything checked after it
(tests/support/faults/check.py: one record per task or a resume that runs it, the right mask reasons, no
score from a half-evaluated task, every JSON file whole, the summary's counts, nothing left behind, the
exit code). ``benchmarks/faults.py`` runs the same scenarios N times and prints the figures.

The faults that hit one task each share a run (each its own task); the run-wide ones have a run each.
Several seeds here are the ones that found bugs, kept as regressions:

- worker_killed 3 (a worker killed during setup): the task had no record at all; now ``worker_lost``;
- engine_restarted 1 (tasks starting while the engine was down): ``harness_error`` with a raw
  ConnectionError; now ``sandbox_error``;
- disk_full 1 (the report folder full to the end): the manifest's last write crashed pytest (a traceback,
  the sweeps after it skipped) and the tasks were masked with a bare OSError; now each mask names the
  folder and the fix, and the problems are listed.

A failing scenario replays alone: ``python benchmarks/faults.py --faults NAME --seed SEED --runs 1``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.faults.engine import OwnEngine
from tests.support.faults.kinds import FAULTS
from tests.support.faults.scenario import run_plan

pytestmark = pytest.mark.docker

# Five faults, five tasks: while a sandbox starts, during setup (twice), while the agent acts.
PER_TASK = [
    ("worker_killed", 3),
    ("container_killed", 3),
    ("guest_server_killed", 11),
    ("model_drops", 21),
    ("service_killed", 1),
]
RUN_WIDE = [("engine_restarted", 1), ("disk_full", 1), ("sigint", 2), ("sigterm", 3), ("sigkill", 2)]


def test_every_fault_is_in_the_matrix() -> None:
    assert {name for name, _ in PER_TASK + RUN_WIDE} == set(FAULTS)


def test_faults_that_hit_one_task_each_in_one_run(tmp_path: Path) -> None:
    outcome = run_plan(PER_TASK, tmp_path)
    assert outcome.landed and not outcome.problems, outcome.report()
    assert set(outcome.masks) == {"worker_lost", "sandbox_error", "model_error", "service_error"}, outcome.report()


def test_faults_that_hit_one_task_each_on_another_seed(tmp_path: Path) -> None:
    """The same five faults, each on a task dealt from another seed (as benchmarks/faults.py runs them)."""
    outcome = run_plan([(name, 7) for name, _ in PER_TASK], tmp_path, spread=True)
    assert outcome.landed and not outcome.problems, outcome.report()
    assert outcome.accounted == outcome.tasks and not outcome.leftovers and not outcome.corrupt, outcome.report()


@pytest.mark.parametrize(("fault", "seed"), RUN_WIDE, ids=[f"{f}-{s}" for f, s in RUN_WIDE])
def test_a_fault_that_hits_the_whole_run(fault: str, seed: int, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    engine: OwnEngine | None = request.getfixturevalue("fault_engine") if FAULTS[fault].own_engine else None
    outcome = run_plan([(fault, seed)], tmp_path, own_engine=engine)
    assert outcome.landed and not outcome.problems, outcome.report()
    assert outcome.accounted == outcome.tasks and not outcome.leftovers and not outcome.corrupt, outcome.report()
    if FAULTS[fault].always_resume:
        assert outcome.resumed, outcome.report()
