"""The bundled OSWorld-V2 tasks (``tasks/test_v2.json``) run end to end: the oracle scores 1 on each, the
null control 0 (the session's shared runs of every bundled task, whose judge is a local model server that
answers YES); a judge answering 500 masks every judge task."""

from __future__ import annotations

import json

import pytest

from tests.episode.runs import run_tasks
from tests.support.model_server import ModelServer, Status
from tests.support.paths import REPO
from tests.support.shared_runs import SharedRun

pytestmark = pytest.mark.docker


TASKS = REPO / "tasks"
SPLIT = TASKS / "test_v2.json"
IDS = json.loads(SPLIT.read_text())["tasks"]
JUDGE = "judge"


def judged(server: ModelServer) -> tuple[str, ...]:
    return ("--osworld-judge-url", server.openai_url, "--osworld-judge-model", JUDGE)


def test_oracle_scores_one_on_every_bundled_v2_task(bundled_oracle: SharedRun) -> None:
    # The README's command: the whole tasks folder (the shared run), the V2 tasks among it.
    records = {key: record for key, record in bundled_oracle.records().items() if key.startswith("v2/")}
    assert sorted(records) == [f"v2/{i}" for i in IDS], bundled_oracle.result.stdout.str()
    assert {key: r["score"] for key, r in records.items()} == {f"v2/{i}": 1.0 for i in IDS}
    outcomes = bundled_oracle.task_outcomes()
    assert {f"v2/{i}": outcomes.get(f"v2/{i}") for i in IDS} == {f"v2/{i}": "PASSED" for i in IDS}
    # p03: the judge was asked about the summary the solution wrote.
    asked = [t for t in bundled_oracle.notes["judge_texts"] if "Text to judge" in t]
    assert any("14 March" in t and "Harbor app launch" in t for t in asked), asked
    # p04: the answer came from the simulated user, asked once.
    traj = (bundled_oracle.run_dir / "v2" / "p04" / "traj.jsonl").read_text().splitlines()
    steps = [json.loads(line) for line in traj]
    asks = [
        s["action"] for s in steps if isinstance(s["action"], dict) and s["action"].get("action_type") == "ASK_USER"
    ]
    assert len(asks) == 1 and "heron-7214" in asks[0]["answer"]
    # p05: both phases ran, the first passing its gate.
    phases = records["v2/p05"]["phase_results"]
    assert [p["phase"] for p in phases] == [1, 2]
    assert phases[0]["gate"] == "passed" and phases[0]["score"] == 1.0


def test_null_control_scores_zero_on_every_bundled_v2_task(bundled_null: SharedRun) -> None:
    records = {key: record for key, record in bundled_null.records().items() if key.startswith("v2/")}
    assert sorted(records) == [f"v2/{i}" for i in IDS], bundled_null.result.stdout.str()
    for key, record in records.items():
        assert record["score"] == 0.0, key
        assert record["termination"] == "done", key
    outcomes = bundled_null.task_outcomes()
    assert {f"v2/{i}": outcomes.get(f"v2/{i}") for i in IDS} == {f"v2/{i}": "FAILED" for i in IDS}
    # Nothing to judge: the judge task scored 0 without asking about a summary.
    assert not [t for t in bundled_null.notes["judge_texts"] if "Text to judge" in t]


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
