"""The live state: events move each task through its states, a finished task stays finished, and the
run's figures are the summary's own definitions over the tasks finished so far."""

from __future__ import annotations

from typing import Any

from pytest_osworld.live.state import LiveState
from pytest_osworld.record import TaskResult, Termination, Usage
from pytest_osworld.results.views import ANSWER_CHARS, Entry, figures, status_of


def record(key: str, termination: Termination, score: float | None, **extra: Any) -> TaskResult:
    domain, task_id = key.split("/")
    return TaskResult(run_id="r", task_id=task_id, domain=domain, termination=termination, score=score, **extra)


def tasks_of(state: LiveState) -> dict[str, dict[str, Any]]:
    return {t["key"]: t for t in state.snapshot()["tasks"]}


def test_a_task_goes_from_queued_through_its_steps_to_its_outcome() -> None:
    state = LiveState(run_id="r")
    state.apply({"kind": "selected", "tasks": [{"key": "os/a", "name": "os/a", "max_steps": 15}, {"key": "os/b"}]})
    assert [t["state"] for t in state.snapshot()["tasks"]] == ["queued", "queued"]
    state.apply({"kind": "begin", "key": "os/a", "worker": "gw1", "at": 100.0})
    state.apply({"kind": "sandbox", "key": "os/a", "sandbox": "osworld-1", "vnc": "127.0.0.1:5901"})
    task = tasks_of(state)["os/a"]
    assert (task["state"], task["worker"], task["sandbox"], task["started"]) == ("starting", "gw1", "osworld-1", 100.0)
    assert state.vnc_of("os/a") == "127.0.0.1:5901" and state.vnc_of("os/b") is None
    state.apply({"kind": "phase", "key": "os/a", "phase": "setup"})
    assert tasks_of(state)["os/a"]["state"] == "setup"
    state.apply({"kind": "step", "key": "os/a", "number": 1, "of": 15})
    usage = Usage(prompt_tokens=10, completion_tokens=5, cost=0.5).model_dump()
    state.apply({"kind": "stepped", "key": "os/a", "number": 1, "response": "x" * 5000, "shot": True, "usage": usage})
    state.apply({"kind": "step", "key": "os/a", "number": 2, "of": 15})
    task = tasks_of(state)["os/a"]
    assert (task["state"], task["step"], task["max_steps"], task["shot"]) == ("step", 2, 15, 1)
    assert len(task["response"]) == ANSWER_CHARS and task["watchable"] is True
    assert state.snapshot()["run"]["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "cost": 0.5}
    state.apply({"kind": "phase", "key": "os/a", "phase": "evaluation"})
    assert tasks_of(state)["os/a"]["state"] == "evaluating"
    done = record("os/a", Termination.DONE, 0.0, usage=Usage(prompt_tokens=12, completion_tokens=6, cost=0.75))
    state.finish("os/a", {"status": "failed", "termination": "done", "score": 0.0, "message": "score 0"}, done)
    task = tasks_of(state)["os/a"]
    assert (task["state"], task["score"], task["watchable"]) == ("failed", 0.0, False)
    assert state.vnc_of("os/a") is None  # a finished task's desktop is not bridged any more
    assert state.snapshot()["run"]["usage"]["cost"] == 0.75  # the record's usage stands once it ends


def test_an_event_that_comes_after_the_outcome_never_takes_the_task_back() -> None:
    state = LiveState(run_id="r")
    state.finish("os/a", {"status": "passed", "termination": "done", "score": 1.0}, None)
    state.apply({"kind": "begin", "key": "os/a", "worker": "gw0", "at": 1.0})
    state.apply({"kind": "step", "key": "os/a", "number": 3, "of": 15})
    state.apply({"kind": "phase", "key": "os/a", "phase": "evaluation"})
    assert tasks_of(state)["os/a"]["state"] == "passed"


def test_only_the_tasks_changed_since_a_version_are_sent() -> None:
    state = LiveState(run_id="r")
    state.apply({"kind": "selected", "tasks": [{"key": "os/a"}, {"key": "os/b"}]})
    seen = state.snapshot()["version"]
    state.apply({"kind": "begin", "key": "os/b", "worker": "gw0", "at": 1.0})
    assert [t["key"] for t in state.snapshot(since=seen)["tasks"]] == ["os/b"]
    assert state.wait(seen, timeout=0) > seen


def test_the_rates_are_the_summarys_views_over_the_finished_tasks() -> None:
    records = {
        "os/p": record("os/p", Termination.DONE, 1.0),
        "os/f": record("os/f", Termination.MAX_STEPS, 0.5),
        "os/m": record("os/m", Termination.SANDBOX_LOST, None),
        "os/h": record("os/h", Termination.HUMAN_INTERFERENCE, None),
        "os/s": record("os/s", Termination.UNSUPPORTED, None),
        "os/u": record("os/u", Termination.UNSUPPORTED, None, markers=["unrunnable"]),
    }
    state = LiveState(run_id="r")
    state.apply({"kind": "selected", "tasks": [{"key": k} for k in [*records, "os/q"]]})
    for key, each in records.items():
        state.finish(key, {"status": status_of(each)}, each)
    run = state.snapshot()["run"]
    entries = [
        Entry(
            key=k,
            status=status_of(r),
            score=r.score if r.valid else None,
            skip_kind="unrunnable" if k == "os/u" else None,
        )
        for k, r in records.items()
    ]
    for view in ("all", "valid", "no_gdrive"):
        assert run["views"][view] == figures(entries, view).to_json()
    assert run["views"]["all"]["success_rate"] == 1 / 5 and run["views"]["all"]["raw_rate"] == 1.5 / 5
    assert run["counts"] == {
        "total": 7,
        "queued": 1,
        "running": 0,
        "passed": 1,
        "failed": 1,
        "masked": 2,
        "skipped": 2,
        "kept": 0,
    }


def test_input_through_the_watch_view_is_counted_on_the_task() -> None:
    state = LiveState(run_id="r", input_allowed=True)
    state.count_input("os/a", dropped=2)
    state.count_input("os/a", sent=1, at="2026-01-01T00:00:00.000+00:00")
    state.count_input("os/a", sent=1, at="2026-01-01T00:00:01.000+00:00")
    task = tasks_of(state)["os/a"]
    assert (task["input_dropped"], task["input_sent"], task["touched_at"]) == (2, 2, "2026-01-01T00:00:00.000+00:00")
    assert state.snapshot()["run"]["input_allowed"] is True


def test_a_kept_sandbox_stays_watchable_with_why_after_its_task_ended() -> None:
    state = LiveState(run_id="r")
    state.apply({"kind": "selected", "tasks": [{"key": "os/a"}, {"key": "os/b"}]})
    for key, port in (("os/a", 5901), ("os/b", 5902)):
        state.apply({"kind": "sandbox", "key": key, "sandbox": f"osworld-{key[-1]}", "vnc": f"127.0.0.1:{port}"})
        state.finish(key, {"status": "failed", "termination": "done", "score": 0.0}, record(key, Termination.DONE, 0.0))
    kept = "osworld-a--kept-failed-score-0--os.a"
    state.apply({"kind": "kept", "key": "os/a", "sandbox": kept, "why": "failed with score 0"})
    tasks = tasks_of(state)
    assert (tasks["os/a"]["kept"], tasks["os/a"]["sandbox"], tasks["os/a"]["watchable"]) == (
        "failed with score 0",
        kept,
        True,
    )
    assert tasks["os/a"]["state"] == "failed"  # kept is a note: the outcome stands
    assert (tasks["os/b"]["kept"], tasks["os/b"]["watchable"]) == (None, False)
    assert state.vnc_of("os/a") == "127.0.0.1:5901" and state.vnc_of("os/b") is None
    assert state.snapshot()["run"]["counts"]["kept"] == 1
    state.end(final_page="/runs/r/live.html")
    assert state.vnc_of("os/a") == "127.0.0.1:5901"  # until the run removes it (the server stops after that)
    assert state.snapshot()["run"]["final_page"] == "/runs/r/live.html"
