"""A bad action is the agent's problem: it is recorded in its step and the episode goes on.

A scripted model first answers an action that raises (or hangs), then the task's reference solution;
the bundled tasks still pass, and the first step's record says what went wrong and how long it took.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from typing import Any

import pytest

from tests.episode.runs import BUNDLED, bundled_task, run_tasks, scripted_pyautogui
from tests.support.model_server import ModelServer, RecordedRequest, Reply, Status, solution_answers

pytestmark = pytest.mark.docker


# Every bundled task (id -> domain); the model answers each by the task's own instruction.
TASKS = {task["id"]: task["domain"] for task in map(json.loads, BUNDLED.read_text().splitlines())}


def script_each_task(server: ModelServer, first_action: str) -> None:
    """Per task (told apart by its instruction): the bad action, then the task's reference solution."""
    queues: dict[str, deque[Reply]] = {}
    for task_id in TASKS:
        task = bundled_task(task_id)
        queues[task["instruction"]] = deque(
            [Reply(f"```python\n{first_action}\n```"), *solution_answers(task["solution"])]
        )
    lock = threading.Lock()

    def respond(request: RecordedRequest) -> Reply | Status:
        text = request.text()
        with lock:
            for instruction, queue in queues.items():
                if instruction in text:
                    return queue.popleft() if queue else Reply("DONE")
        return Status(400, {"error": {"message": "no task's instruction in the prompt"}})

    server.respond_with("scripted", respond)


def run_with_model(pytester: pytest.Pytester, server: ModelServer, *extra: str, workers: int = 2) -> Any:
    return run_tasks(pytester, BUNDLED, "-n", str(workers), *scripted_pyautogui(server), *extra)


def first_step(run: Any, key: str) -> dict[str, Any]:
    line: dict[str, Any] = json.loads((run.run_dir / key / "traj.jsonl").read_text().splitlines()[0])
    return line


def test_an_action_that_raises_is_recorded_and_the_tasks_still_pass(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    script_each_task(server, "raise RuntimeError('bad')")
    run = run_with_model(pytester, server)
    run.result.assert_outcomes(passed=len(TASKS))
    for task_id, domain in TASKS.items():
        key = f"{domain}/{task_id}"
        record = run.record(key)
        # An infeasible task's solution ends with FAIL: the agent's own verdict, not a stop by the loop.
        ending = "fail" if bundled_task(task_id)["solution"][-1] == "FAIL" else "done"
        assert record["score"] == 1.0 and record["termination"] == ending, key
        assert record["steps"] == 1 + len(bundled_task(task_id)["solution"]), key
        step = first_step(run, key)
        assert step["step_num"] == 1 and step["action"] == "raise RuntimeError('bad')"
        assert step["execute_status"] == "error" and step["returncode"] == 1, step
        assert "RuntimeError: bad" in step["execute_error"]
        assert 0 < step["execute_seconds"] < 30


def test_an_action_that_hangs_is_killed_at_the_action_timeout_and_the_tasks_still_pass(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    script_each_task(server, "time.sleep(600)")
    # Four workers: most of each episode is the 10 s hang, which costs no CPU.
    run = run_with_model(pytester, server, "--osworld-action-timeout", "10", workers=4)
    run.result.assert_outcomes(passed=len(TASKS))
    for task_id, domain in TASKS.items():
        key = f"{domain}/{task_id}"
        assert run.record(key)["score"] == 1.0, key
        step = first_step(run, key)
        assert step["execute_status"] == "timeout" and step["returncode"] is None, step
        assert "did not finish within 10 s" in step["execute_error"]
        assert 10 <= step["execute_seconds"] < 10 + 15, step
