"""OSWorld-V2's LLM judge and simulated user in a run's summary: their calls, tokens and cost, apart
from the agent's usage, computed from records written by the run store."""

from __future__ import annotations

from pathlib import Path

from pytest_osworld.record import ModelCalls, TaskResult, Termination, Usage
from pytest_osworld.results.render import summary_lines
from pytest_osworld.results.summary import summarize_run
from tests.results.helpers import record, write_run


def judged(result: TaskResult, calls: int, failed: int, prompt: int, completion: int) -> TaskResult:
    result.usage = Usage(prompt_tokens=1000, completion_tokens=100)  # the agent's own
    result.judge = ModelCalls(
        calls=calls, failed=failed, seconds=0.5 * calls, usage=Usage(prompt_tokens=prompt, completion_tokens=completion)
    )
    return result


def test_judge_usage_is_summed_apart_from_the_agents(tmp_path: Path) -> None:
    run = write_run(
        tmp_path,
        [
            judged(record("v2/p03", 1.0), 2, 0, 300, 4),
            judged(record("v2/p06", None, Termination.JUDGE_ERROR, message="judge: HTTP 500"), 1, 1, 0, 0),
            record("v2/p01", 1.0),
        ],
    )
    summary = summarize_run(run)
    assert summary["judge"] == {
        "tasks": 2,
        "calls": 3,
        "failed": 1,
        "seconds": 1.5,
        "prompt_tokens": 300,
        "completion_tokens": 4,
        "cost": None,
    }
    assert summary["user_sim"] is None
    # The agent's usage does not take in the judge's tokens.
    assert summary["usage"]["prompt_tokens"] == 2000
    lines = "\n".join(summary_lines(summary))
    assert (
        "judge      3 calls in 2 tasks, 1 failed, 300 prompt + 4 completion tokens (not in the agent's usage)" in lines
    )
    assert not any(line.lstrip().startswith("user sim") for line in summary_lines(summary))


def test_no_judge_line_without_judge_calls(tmp_path: Path) -> None:
    summary = summarize_run(write_run(tmp_path, [record("os/a", 1.0)]))
    assert summary["judge"] is None
    assert not any(line.lstrip().startswith("judge") for line in summary_lines(summary))
