"""The fault matrix's own parts, without a run: the checker catches each kind of wrong outcome, and a
seed draws the same moment again (so a failing seed replays)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.record import TaskResult, Termination
from pytest_osworld.results.manifest import RunManifest, Selection
from pytest_osworld.results.summary import build_summary
from tests.support.faults import check, verdict
from tests.support.faults.kinds import ANCHORS, FAULTS, Injection, Moment
from tests.support.faults.scenario import scenario_tasks

KEYS = ["os/a", "os/b"]


def record(task: str, termination: str = "done", score: float | None = 1.0, **extra: Any) -> dict[str, Any]:
    made = TaskResult(run_id="r", task_id=task, domain="os", termination=Termination(termination), score=score)
    return {**json.loads(made.model_dump_json()), **extra}


def write(run_dir: Path, key: str, data: dict[str, Any], traj: list[int] | None = None) -> None:
    folder = run_dir / key
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "result.json").write_text(json.dumps(data))
    if traj is not None:
        (folder / "traj.jsonl").write_text("".join(json.dumps({"step_num": n}) + "\n" for n in traj))


def injection(task: str = "os/a", **extra: Any) -> Injection:
    return Injection(Moment(task, "setup", 0.0, extra), "r", Path("."), "unix:///x", 0, None, landed=True)  # type: ignore[arg-type]


def test_the_snapshot_finds_corrupt_files_and_leftover_temporary_files(tmp_path: Path) -> None:
    write(tmp_path, "os/a", record("a"), traj=[1, 2])
    (tmp_path / "os" / "a" / ".result.json.x1.tmp").write_text("{")
    (tmp_path / "os" / "b").mkdir()
    (tmp_path / "os" / "b" / "result.json").write_text('{"run_id": "r", "task_id": "b"')  # half a record
    (tmp_path / "os" / "a" / "model_io.jsonl").write_text('{"step": 1}\n{"ste\n')
    found = check.snapshot(tmp_path)
    assert list(found.records) == ["os/a"]
    assert [c.split(":")[0] for c in found.corrupt] == [
        "os/a/.result.json.x1.tmp",
        "os/a/model_io.jsonl",
        "os/b/result.json",
    ]


def test_the_summary_must_count_what_the_records_say() -> None:
    records = {
        "os/a": TaskResult.model_validate(record("a")),
        "os/b": TaskResult.model_validate(record("b", "worker_lost", None)),
    }
    manifest = RunManifest(run_id="r", selected=Selection.of({*KEYS, "os/c"}, set()))
    summary = build_summary(records, manifest)
    as_json = {k: json.loads(r.model_dump_json()) for k, r in records.items()}
    assert check.summary_problems(summary, as_json, {*KEYS, "os/c"}) == []
    assert summary["masks"] == {"worker_lost": 1} and summary["integrity"]["missing"] == ["os/c"]
    del as_json["os/b"]  # the summary counted a record that is not there
    problems = check.summary_problems(summary, as_json, {*KEYS, "os/c"})
    assert len(problems) == 2 and "summary integrity" in problems[0] and "summary masks" in problems[1]
    assert check.summary_problems(None, as_json, set(KEYS)) == ["no summary.json"]


def test_a_valid_record_must_agree_with_its_trajectory(tmp_path: Path) -> None:
    write(tmp_path, "os/a", record("a", steps=2), traj=[1, 2])
    write(tmp_path, "os/b", record("b", steps=2), traj=[1, 2, 1, 2])  # two episodes wrote it
    assert check.trajectory_problems(tmp_path, "os/a", record("a", steps=2)) == []
    assert "do not agree" in check.trajectory_problems(tmp_path, "os/b", record("b", steps=2))[0]


@pytest.mark.parametrize(
    ("fault", "given", "wrong"),
    [
        ("worker_killed", None, True),  # a missing record
        ("worker_killed", record("a", "worker_lost", None), False),
        ("worker_killed", record("a", finished_at="2099-01-01T00:00:00+00:00"), True),  # a pass after the kill
        ("container_killed", record("a", "sandbox_lost", None), False),
        ("container_killed", record("a", score=0.0), True),  # a score from a half-evaluated task
        ("container_killed", record("a", "evaluator_error", None), True),  # the wrong reason
        ("guest_server_killed", record("a", "sandbox_lost", None, restarts=[{"process": "guest-server"}]), True),
        ("guest_server_killed", record("a", restarts=[]), True),  # the restart not named
        ("guest_server_killed", record("a", restarts=[{"process": "guest-server"}]), False),
        ("sigint", None, False),
        ("sigint", record("a", "interrupted", None), False),
        ("sigint", record("a", "sandbox_lost", None), True),
        ("engine_restarted", record("a", "harness_error", None), True),
    ],
)
def test_each_fault_judges_its_victim(fault: str, given: dict[str, Any] | None, wrong: bool) -> None:
    hit = injection()
    hit.at = 1e9  # 2001: before every record's end here
    assert (FAULTS[fault].judge("os/a", given, hit) is not None) is wrong


def test_tasks_no_fault_hit_must_be_scored_and_the_exit_code_must_say_so() -> None:
    strikes = [verdict.Strike(FAULTS["model_drops"], 1, injection("os/a", drops=3, from_request=0))]
    assert verdict.rule_for("os/b", strikes)[0].name == "none"
    assert verdict.rule_for("os/a", strikes)[0].name == "model_drops"
    assert verdict.expected_exit(strikes, {"os/a": record("a", "model_error", None), "os/b": record("b")}) == {1}
    assert verdict.expected_exit(strikes, {"os/a": record("a"), "os/b": record("b")}) == {0}
    killed = [verdict.Strike(FAULTS["sigkill"], 1, injection(to="group"))]
    assert verdict.expected_exit(killed, {"os/a": None}) == {-9}


def test_a_crash_of_pytest_itself_and_the_tasks_a_session_ran_are_read_from_its_output() -> None:
    session = verdict.Session(
        "resume", 0, "[gw0] [ 50%] PASSED t.jsonl::os/a \n[gw1] [100%] MASKED t.jsonl::os/b[r2] \n"
    )
    assert session.ran() == {"os/a", "os/b"}
    assert verdict._crashes(session) == []
    session.output += "Traceback (most recent call last):\n  File ...\nOSError: [Errno 28]\n"
    assert len(verdict._crashes(session)) == 1


def test_a_seed_draws_the_same_moment_again_and_the_seeds_reach_every_awkward_moment() -> None:
    tasks = sorted(scenario_tasks(service=True))
    for name, fault in FAULTS.items():
        once = fault.draw(random.Random(f"{name}/7"), tasks)
        assert fault.draw(random.Random(f"{name}/7"), tasks) == once
        reached = {fault.draw(random.Random(f"{name}/{seed}"), tasks).anchor for seed in range(1, 41)}
        assert reached == set(fault.anchors), name
    assert set(FAULTS["container_killed"].anchors) == set(ANCHORS)  # starting, setup, acting, evaluating, recording
