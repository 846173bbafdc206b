"""The wait before evaluation (``eval_settle``): quiet waits for the result files, a number waits that long."""

from __future__ import annotations

from typing import Any

import pytest

from tests.episode.runs import BUNDLED, run_tasks
from tests.support.bundled_runs import EVAL_SETTLE
from tests.support.shared_runs import SharedRun
from tests.support.taskfactory import task, write_jsonl

pytestmark = pytest.mark.docker


LATE = "/home/user/Desktop/late.txt"
WRITE_DELAY_S = 4


def late_file_task(task_id: str) -> dict[str, Any]:
    """The agent's last action starts a program that writes the result file a few seconds later."""
    writer = (
        "import subprocess; subprocess.Popen(['bash', '-c', "
        f"'sleep {WRITE_DELAY_S}; echo late > {LATE}'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"
    )
    return task(
        task_id,
        config=[
            {
                "type": "execute",
                "parameters": {"command": "mkdir -p ~/.expected && echo late > ~/.expected/late.txt", "shell": True},
            }
        ],
        solution=[writer, "DONE"],
        evaluator={
            "func": "compare_text_file",
            "result": {"type": "vm_file", "path": LATE, "dest": "late.txt"},
            "expected": {"type": "vm_file", "path": "/home/user/.expected/late.txt", "dest": "expected.txt"},
        },
    )


def test_quiet_waits_for_a_result_file_written_after_the_last_action(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester.path / "t.jsonl", [late_file_task("late-quiet"), late_file_task("late-fixed")])
    # The same task, once with the default (quiet) and once waiting a fixed second (per-task setting).
    (pytester.path / "profile.yaml").write_text("task_overrides:\n  late-fixed:\n    eval_settle: 1\n")
    run = run_tasks(
        pytester, pytester.path / "t.jsonl", "--osworld-agent", "oracle", "--osworld-profile", "profile.yaml"
    )
    run.result.assert_outcomes(passed=1, failed=1)

    quiet = run.record("os/late-quiet")
    assert quiet["score"] == 1.0, quiet["message"]
    settle = quiet["settle"]
    assert settle["mode"] == "quiet" and settle["quiet"] is True and settle["limit"] == 20.0
    assert settle["watched"] == [LATE]
    assert WRITE_DELAY_S - 1 <= settle["seconds"] < 20, settle  # waited for the file, not for the bound
    assert settle["polls"] >= 1

    fixed = run.record("os/late-fixed")
    assert fixed["score"] == 0.0  # evaluated before the file was written: a valid zero
    assert fixed["settle"]["mode"] == "fixed" and fixed["settle"]["limit"] == 1.0
    assert 1.0 <= fixed["settle"]["seconds"] < 2.0


def test_every_bundled_task_passes_with_osworlds_20_second_wait(bad_actions: SharedRun) -> None:
    # The shared run of every bundled task waits OSWorld's fixed 20 s before each evaluation.
    records = bad_actions.records()
    count = len(BUNDLED.read_text().splitlines())
    assert len(records) == count
    bad_actions.result.assert_outcomes(passed=count)
    for key, record in records.items():
        assert record["score"] == 1.0, key
        settle = record["settle"]
        assert settle["mode"] == "fixed" and settle["limit"] == EVAL_SETTLE and settle["seconds"] >= EVAL_SETTLE, key
