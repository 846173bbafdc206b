"""The bundled OSWorld-V2 tasks (``tasks/test_v2.json``) run end to end: the oracle scores 1 on each, the
null control 0. The judge task's judge is a local model server that answers YES."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.episode.runs import run_tasks
from tests.support.model_server import ModelServer, RecordedRequest, Reply, Status
from tests.support.paths import REPO

pytestmark = pytest.mark.docker


TASKS = REPO / "tasks"
SPLIT = TASKS / "test_v2.json"
IDS = json.loads(SPLIT.read_text())["tasks"]
JUDGE = "judge"


@pytest.fixture
def judge() -> Iterator[ModelServer]:
    """A judge that says YES to every question (the preflight's and the task's)."""
    with ModelServer(models=[JUDGE]) as running:

        def yes(_request: RecordedRequest) -> Reply:
            return Reply("YES")

        running.respond_with(JUDGE, yes)
        yield running


def judged(server: ModelServer) -> tuple[str, ...]:
    return ("--osworld-judge-url", server.openai_url, "--osworld-judge-model", JUDGE)


def test_oracle_scores_one_on_every_bundled_v2_task(pytester: pytest.Pytester, judge: ModelServer) -> None:
    # The README's command: the whole tasks folder, the V2 tasks picked by their marker.
    run = run_tasks(pytester, TASKS, "-m", "v2", "-n", "2", "--osworld-agent", "oracle", *judged(judge))
    records = run.records()
    assert sorted(records) == [f"v2/{i}" for i in IDS], run.result.stdout.str()
    assert {key: r["score"] for key, r in records.items()} == {f"v2/{i}": 1.0 for i in IDS}
    run.result.assert_outcomes(passed=len(IDS))
    # p03: the judge was asked about the summary the solution wrote.
    asked = [t for r in judge.completions(JUDGE) for t in r.texts() if "Text to judge" in t]
    assert any("14 March" in t and "Harbor app launch" in t for t in asked), asked
    # p04: the answer came from the simulated user, asked once.
    steps = [json.loads(line) for line in (run.run_dir / "v2" / "p04" / "traj.jsonl").read_text().splitlines()]
    asks = [
        s["action"] for s in steps if isinstance(s["action"], dict) and s["action"].get("action_type") == "ASK_USER"
    ]
    assert len(asks) == 1 and "heron-7214" in asks[0]["answer"]
    # p05: both phases ran, the first passing its gate.
    phases = records["v2/p05"]["phase_results"]
    assert [p["phase"] for p in phases] == [1, 2]
    assert phases[0]["gate"] == "passed" and phases[0]["score"] == 1.0


def test_null_control_scores_zero_on_every_bundled_v2_task(pytester: pytest.Pytester, judge: ModelServer) -> None:
    run = run_tasks(pytester, SPLIT, "-n", "2", "--osworld-agent", "null", *judged(judge))
    records = run.records()
    assert sorted(records) == [f"v2/{i}" for i in IDS], run.result.stdout.str()
    for key, record in records.items():
        assert record["score"] == 0.0, key
        assert record["termination"] == "done", key
    run.result.assert_outcomes(failed=len(IDS))
    # Nothing to judge: the judge task scored 0 without asking about a summary.
    assert not [t for r in judge.completions(JUDGE) for t in r.texts() if "Text to judge" in t]


def test_a_judge_answering_500_masks_every_bundled_judge_task_and_scores_none(pytester: pytest.Pytester) -> None:
    with ModelServer(models=[JUDGE]) as failing:
        failing.respond_with(JUDGE, lambda _request: Status(500))
        run = run_tasks(pytester, TASKS, "-m", "llm_judge", "-n", "2", "--osworld-agent", "oracle", *judged(failing))
    records = run.records()
    judge_tasks = [key for key, record in records.items() if "llm_judge" in record["markers"]]
    assert judge_tasks and sorted(judge_tasks) == sorted(records), run.result.stdout.str()
    for key, record in records.items():
        assert (record["termination"], record["score"]) == ("judge_error", None), key
        assert "HTTP 500" in record["message"], key
    assert run.result.parseoutcomes().get("masked") == len(records), run.result.stdout.str()
