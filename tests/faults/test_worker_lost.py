"""An xdist worker that dies under a task: the controller writes the task's record, masked worker_lost.

The episodes here are a conftest's own (``osworld_episode`` overridden, as a conftest may): no sandbox
starts, so the run takes seconds; the Docker engine is still asked once, by the check before the session.
"""

from __future__ import annotations

import json

import pytest

from pytest_osworld.plugin.crashes import run_key
from tests.episode.runs import run_tasks
from tests.support.taskfactory import task, write_jsonl

EPISODES = """
import os, signal
import pytest
from pytest_osworld.record import TaskResult, Termination


@pytest.fixture
def osworld_episode(request, osworld_recorder, osworld_run):
    item = request.node

    class Episode:
        def run_and_judge(self):
            record = TaskResult(run_id=osworld_run.run_id, task_id=item.entry.id, domain=item.entry.domain,
                                termination=Termination.DONE, score=1.0, steps=1)
            if item.entry.id != "dies":  # the episode ends and is recorded first
                osworld_recorder.finish(record)
            if item.entry.id.startswith("dies"):
                os.kill(os.getpid(), signal.SIGKILL)  # no teardown, no report: the worker is gone

    return Episode()
"""


@pytest.mark.docker
def test_a_worker_that_dies_under_a_task_masks_it_worker_lost(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(EPISODES)
    tasks = [task("dies"), task("dies-recorded"), task("fine")]
    run = run_tasks(
        pytester, write_jsonl(pytester.path / "t.jsonl", tasks), "-n", "2", "-v", "--osworld-agent", "oracle"
    )
    output = run.result.stdout.str()
    assert run.result.ret == 1, output  # a worker died: an error of the run, whatever the records say

    lost = run.record("os/dies")
    assert lost["termination"] == "worker_lost" and lost["masked"] is True and lost["score"] is None, lost
    assert "died" in lost["message"] and lost["worker"] in ("gw0", "gw1"), lost
    run.result.stdout.fnmatch_lines(["*MASKED*::os/dies *", "*MASKED os/dies: masked (worker_lost): the xdist worker*"])

    # Recorded before its worker died: the record stands, and the crash is an error at its teardown.
    kept = run.record("os/dies-recorded")
    assert kept["termination"] == "done" and kept["score"] == 1.0, kept
    assert "died after os/dies-recorded was recorded (done); the record stands" in output

    assert run.record("os/fine")["score"] == 1.0
    summary = run.summary()
    assert summary["masks"] == {"worker_lost": 1}, summary["masks"]
    assert (summary["integrity"]["recorded"], summary["integrity"]["missing"]) == (3, [])
    for path in run.run_dir.rglob("*"):  # nothing half-written is left where the workers died
        assert not (path.name.startswith(".") and path.name.endswith(".tmp")), path
        if path.suffix == ".json":
            json.loads(path.read_text())


def test_run_keys_of_task_node_ids() -> None:
    assert run_key("tasks/examples.jsonl::os/os-notes-folder") == "os/os-notes-folder"
    assert run_key("t.jsonl::chrome/abc[r2]") == "chrome/abc#r2"
    assert run_key("t.jsonl::chrome/abc[r1]") == "chrome/abc"
    assert run_key("evaluation_examples/test_v2.json::v2/003") == "v2/003"
    assert run_key("tests/test_mine.py::test_something") is None  # a user's own test: no task
