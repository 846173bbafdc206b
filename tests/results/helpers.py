"""Hand-made records and run folders, and a pytester project whose episodes produce each outcome."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.fsutil import write_json
from pytest_osworld.record import Durations, TaskResult, Termination, Usage
from pytest_osworld.results.store import RunStore, TaskKey
from pytest_osworld.tasks.digest import ids_sha256

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
    b"\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82"
)
INPUT_SHA = "a" * 64


def record(
    key: str,
    score: float | None = None,
    termination: Termination | str = Termination.DONE,
    *,
    run_id: str = "run-1",
    message: str | None = None,
    gdrive: bool = False,
    usage: tuple[int, int, float | None] = (0, 0, None),
    total: float | None = None,
    started_at: str | None = None,
    finished_at: str | None = None,
) -> TaskResult:
    k = TaskKey.parse(key)
    return TaskResult(
        run_id=run_id,
        task_id=k.task_id,
        domain=k.domain,
        repeat=k.repeat,
        score=score,
        termination=Termination(termination),
        message=message,
        markers=["osworld", k.domain] + (["needs_gdrive"] if gdrive else []),
        usage=Usage(prompt_tokens=usage[0], completion_tokens=usage[1], cost=usage[2]),
        durations=Durations(total=total),
        started_at=started_at,
        finished_at=finished_at,
    )


def manifest(
    run_id: str,
    keys: list[str],
    *,
    shard: str | None = None,
    input_sha: str = INPUT_SHA,
    gdrive: list[str] | None = None,
    repeat: int = 1,
) -> dict[str, Any]:
    return {
        "kind": "pytest-osworld/run",
        "run_id": run_id,
        "created": "2026-01-01T00:00:00+00:00",
        "shard": shard,
        "repeat": repeat,
        "input": {
            "input_sha256": input_sha,
            "count": len(keys),
            "domains": {},
            "ids_sha256": "x",
            "sources": ["t.jsonl"],
        },
        "selected": {
            "count": len(keys),
            "ids_sha256": ids_sha256(keys),
            "ids": sorted(keys),
            "needs_gdrive": sorted(gdrive or []),
        },
        "versions": {"pytest_osworld": "0.1.0"},
    }


def write_run(run_dir: Path, records: list[TaskResult], selected: list[str] | None = None, **manifest_kw: Any) -> Path:
    """A run folder as the plugin leaves it: a manifest and one record per task."""
    store = RunStore(run_dir)
    for r in records:
        store.write_result(r)
    keys = selected if selected is not None else [r.key for r in records]
    write_json(run_dir / "manifest.json", manifest(run_dir.name, keys, **manifest_kw))
    return run_dir


# --- a pytester project ---------------------------------------------------------------------------


def task_line(task_id: str, domain: str, outcome: str, score: float | None = None, **extra: Any) -> str:
    task = {
        "id": task_id,
        "domain": domain,
        "instruction": f"do {task_id}",
        "evaluator": {"func": "exact_match"},
        "x_outcome": outcome,
        **extra,
    }
    if score is not None:
        task["x_score"] = score
    return json.dumps(task)


TASKS = (
    "\n".join(
        [
            task_line("pass-1", "os", "score", 1.0, related_apps=["terminal"]),
            task_line("fail-1", "os", "score", 0.5),
            task_line("mask-1", "chrome", "mask"),
            task_line("sbx-1", "chrome", "sandbox_error"),
            task_line("skip-1", "chrome", "skip", fixed_ip=True),
        ]
    )
    + "\n"
)

# The documented extension point: a conftest that overrides ``osworld_episode`` (and here the sandbox
# fixture) to play each outcome through the real store, recorder and hooks.
EPISODE_CONFTEST = rf"""
import os

import pytest

from pytest_osworld.plugin.outcomes import TaskFailed, TaskMasked
from pytest_osworld.record import Durations, StepRecord, TaskResult, Termination, Usage
from pytest_osworld.errors import SandboxError

PNG = {PNG!r}
SECRET = os.environ.get("OSWORLD_TEST_SECRET", "")


@pytest.fixture
def osworld_sandbox(osworld_entry):
    outcome = osworld_entry.raw.get("x_outcome")
    if outcome == "sandbox_error":
        raise SandboxError(f"could not start the desktop: docker said no (key {{SECRET}}); start dockerd")
    if outcome == "skip":
        pytest.skip("needs Google Drive credentials")
    return object()


class Episode:
    def __init__(self, recorder, entry, run):
        self.recorder, self.entry, self.run = recorder, entry, run
        self.result = None

    def run_and_judge(self):
        entry = self.entry
        outcome = entry.raw.get("x_outcome")
        if outcome == "crash":
            raise RuntimeError("a bug in an episode extension")
        for n in (1, 2):
            step = StepRecord(step_num=n, action_timestamp=f"2026010{{n}}@000000", action=f"pyautogui.click({{n}}, {{n}})",
                              response=f"I click at {{n}} (Authorization: Bearer {{SECRET}})")
            self.recorder.step(step, PNG)
        self.recorder.final_screenshot(PNG)
        flipped = entry.id in os.environ.get("OSWORLD_TEST_FLIP", "").split(",")
        score = entry.raw.get("x_score")
        if flipped and score is not None:
            score = 0.0 if score >= 1.0 else 1.0
        masked = outcome == "mask"
        self.result = TaskResult(
            run_id=self.run.run_id, task_id=entry.id, domain=entry.domain, repeat=getattr(self, "repeat", 1),
            termination=Termination.MODEL_ERROR if masked else Termination.DONE,
            score=None if masked else score, steps=2,
            message=f"endpoint down (api_key={{SECRET}})" if masked else "the agent said DONE",
            usage=Usage(prompt_tokens=100, completion_tokens=10), durations=Durations(total=1.5),
        )
        self.recorder.finish(self.result)
        if masked:
            raise TaskMasked("model_error", self.result.message)
        if score < 1.0:
            raise TaskFailed(f"score {{score:g}}: the agent said DONE", score)
        return self.result


@pytest.fixture
def osworld_episode(request, osworld_sandbox, osworld_recorder, osworld_entry, osworld_run):
    episode = Episode(osworld_recorder, osworld_entry, osworld_run)
    episode.repeat = request.node.repeat
    return episode
"""


# The episode is the conftest's, so the runner never acts; the plugin still wants one named.
BASE_ARGS = ("-p", "no:cacheprovider", "--osworld-agent", "null")


def make_project(pytester: pytest.Pytester, tasks: str = TASKS) -> Path:
    pytester.makeconftest(EPISODE_CONFTEST)
    path = pytester.path / "tasks.jsonl"
    path.write_text(tasks, encoding="utf-8")
    return path
