"""A bad action is the agent's problem: it is recorded in its step and the episode goes on.

One real run of every bundled task (shared with test_eval_settle.py): a scripted model first answers an
action that raises, then one that hangs past the action time limit, then the task's reference solution;
every task still passes, and the first two steps' records say what went wrong and how long it took.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_osworld.guest.client import ACTION_ANSWER_GRACE_S
from tests.episode.runs import BUNDLED, Run, bundled_task
from tests.support.bundled_runs import BAD_ACTION_TIMEOUT
from tests.support.shared_runs import SharedRun

pytestmark = pytest.mark.docker

# Every bundled task (id -> domain); the model answers each by the task's own instruction.
TASKS = {task["id"]: task["domain"] for task in map(json.loads, BUNDLED.read_text().splitlines())}


def step(run: Run, key: str, number: int) -> dict[str, Any]:
    line: dict[str, Any] = json.loads((run.run_dir / key / "traj.jsonl").read_text().splitlines()[number - 1])
    return line


def test_every_task_still_passes_after_its_bad_actions(bad_actions: SharedRun) -> None:
    bad_actions.result.assert_outcomes(passed=len(TASKS))
    for task_id, domain in TASKS.items():
        key = f"{domain}/{task_id}"
        record = bad_actions.record(key)
        # An infeasible task's solution ends with FAIL: the agent's own verdict, not a stop by the loop.
        ending = "fail" if bundled_task(task_id)["solution"][-1] == "FAIL" else "done"
        assert record["score"] == 1.0 and record["termination"] == ending, key
        assert record["steps"] == 2 + len(bundled_task(task_id)["solution"]), key


def test_an_action_that_raises_is_recorded_and_the_episode_goes_on(bad_actions: SharedRun) -> None:
    for task_id, domain in TASKS.items():
        first = step(bad_actions, f"{domain}/{task_id}", 1)
        assert first["step_num"] == 1 and first["action"] == "raise RuntimeError('bad')"
        assert first["execute_status"] == "error" and first["returncode"] == 1, first
        assert "RuntimeError: bad" in first["execute_error"]
        assert 0 < first["execute_seconds"] < 30


def test_an_action_that_hangs_is_killed_at_the_action_timeout_and_the_episode_goes_on(
    bad_actions: SharedRun,
) -> None:
    limit = BAD_ACTION_TIMEOUT
    for task_id, domain in TASKS.items():
        second = step(bad_actions, f"{domain}/{task_id}", 2)
        assert second["step_num"] == 2 and second["action"] == "time.sleep(600)"
        assert second["execute_status"] == "timeout" and second["returncode"] is None, second
        assert f"did not finish within {limit:g} s" in second["execute_error"]
        # Killed by the guest at the limit (its own message above), not run for its 600 s: the answer came
        # within the client's wait for it, however long a loaded guest took to kill and answer.
        assert limit <= second["execute_seconds"] < limit + ACTION_ANSWER_GRACE_S, second
