"""One real run per native runner: bundled v1 tasks and the failure cases, against the runner's protocol.

Which bundled tasks: every runner plays :data:`CORE` (key presses, a click, an infeasible task), and each
plays its own share of the others, so that the four runs together play every bundled v1 task
(:func:`runner_tasks`). With ``PYTEST_OSWORLD_NATIVE_MATRIX=all`` every runner plays every bundled v1 task
(the full matrix, four times the episodes of the suite's share: docs/agents.md says when to run it).

Each run is a shared run (tests/support/shared_runs.py): started once per test session by whichever
process asks first, under a lock, while the model server of the runner's protocol answers it; the
server's notes (what it saw of each conversation, the requests it refused) are kept beside the run for
every reader. The key the server requires is given by its variable's name only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.model_server import Api, ModelServer
from tests.support.native_model import ScriptedModel
from tests.support.native_script import bundled_v1_tasks, case_tasks, write_jsonl
from tests.support.paths import REPO
from tests.support.shared_runs import RunSpec, SharedRun, shared_run

KEY = "sk-native-5e0c3b9d1a-do-not-leak"
KEY_ENV = "PYTEST_OSWORLD_NATIVE_KEY"
CASE_BASE = "os-refresh-rate"  # the quick task the failure cases play on (infeasible: FAIL scores 1)
GROUP = "native-runs"  # the xdist group of their readers: one lane, the runs one after the other
MATRIX_ENV = "PYTEST_OSWORLD_NATIVE_MATRIX"
RUNNERS = ("anthropic-computer", "openai-computer", "tool-calling", "uitars")
# Every runner plays these: a solution of key presses, one with a click (the coordinate frames), and an
# infeasible task (the runner's way to say FAIL).
CORE = ("calc-sum-units", "multi-poem-to-writer", "os-refresh-rate")
# The episode's knobs for a scripted model: small waits and retries, room for the terminal's steps.
RUN_ARGS = (
    "-m",
    "not v2",
    "-n",
    "2",
    "-v",
    "--osworld-max-steps",
    "60",
    "--osworld-wait-seconds",
    "1",
    "--osworld-model-retries",
    "2",
    "--osworld-model-backoff",
    "0.1",
    "--osworld-prompt-price",
    "3",
    "--osworld-completion-price",
    "15",
    "--osworld-keep-model-io",
)


@dataclass
class NativeRun:
    """A native runner's shared run and what its model server noted."""

    shared: SharedRun
    tasks: list[dict[str, Any]]  # the bundled tasks the run played (the cases aside)

    @property
    def keys(self) -> dict[str, dict[str, Any]]:
        """The bundled tasks the run played, by record key (domain/id)."""
        return {f"{t['domain']}/{t['id']}": t for t in self.tasks}

    @property
    def run_dir(self) -> Path:
        return self.shared.run_dir

    @property
    def folder(self) -> Path:
        return self.shared.folder

    @property
    def problems(self) -> list[str]:
        """Requests the server answered 400: each broke the protocol (a test asserts there are none)."""
        found: list[str] = self.shared.notes["problems"]
        return found

    def records(self) -> dict[str, dict[str, Any]]:
        return self.shared.records()

    def record(self, key: str) -> dict[str, Any]:
        return self.shared.record(key)

    def traj(self, key: str) -> list[dict[str, Any]]:
        path = self.run_dir / key / "traj.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]

    def first_step_of_several_actions(self, key: str) -> list[dict[str, Any]]:
        """The action lines of the first step that ran more than one action (one answer of several calls).
        Found by content, not number: a scripted model may first wait for the application to be up."""
        steps: dict[int, list[dict[str, Any]]] = {}
        for line in self.traj(key):
            steps.setdefault(line["step_num"], []).append(line)
        return next(lines for _, lines in sorted(steps.items()) if len(lines) > 1)

    def notes(self, task_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.shared.notes["conversations"][task_id]
        return found

    def output(self) -> str:
        return "\n".join(self.shared.result.outlines + self.shared.result.errlines)


@dataclass
class _Beside:
    """The model server beside the run: the options that reach it, and after the run what it saw."""

    args: tuple[str, ...]
    script: ScriptedModel

    def notes(self) -> dict[str, Any]:
        conversations = self.script.conversations
        return {
            "problems": conversations.problems,
            "conversations": {
                task: {k: v for k, v in c.notes.items() if k not in ("sent", "items")}
                for task, c in conversations.started.items()
            },
        }


def runner_tasks(agent: str, matrix: str | None = None) -> list[dict[str, Any]]:
    """The bundled v1 tasks ``agent``'s run plays: :data:`CORE` and its share of the rest (each task of the
    rest goes to one runner, in turn), or every one when ``matrix`` (default: the environment's) is "all"."""
    tasks = bundled_v1_tasks()
    if (os.environ.get(MATRIX_ENV) if matrix is None else matrix) == "all":
        return tasks
    rest = sorted(t["id"] for t in tasks if t["id"] not in CORE)
    mine = {task_id for n, task_id in enumerate(rest) if RUNNERS[n % len(RUNNERS)] == agent}
    return [t for t in tasks if t["id"] in CORE or t["id"] in mine]


def native_run(
    root: Path,
    agent: str,
    model: str,
    script: Callable[[list[dict[str, Any]]], ScriptedModel],
    cases: tuple[str, ...],
    *args: str,
) -> NativeRun:
    """The session's run of ``agent`` over tasks/ and the ``cases`` against a server made by ``script``."""
    case_tasks_json = case_tasks(CASE_BASE, cases)
    root.mkdir(parents=True, exist_ok=True)
    # Each process writes its own: only the one that starts the run passes its file on.
    case_file = write_jsonl(root / f"{agent}-cases-{os.getpid()}.jsonl", case_tasks_json)
    api: Api = "anthropic" if agent == "anthropic-computer" else "openai"

    @contextmanager
    def server() -> Iterator[_Beside]:
        with ModelServer(models=[model], api_key=KEY) as running:
            scripted = script(bundled_v1_tasks() + case_tasks_json)
            running.respond_with(model, scripted)
            endpoint = ("--osworld-model-url", running.url(api), "--osworld-model", model)
            yield _Beside(("--osworld-agent", agent, *endpoint, "--osworld-model-key-env", KEY_ENV), scripted)

    tasks = runner_tasks(agent)
    chosen = " or ".join([*(t["id"] for t in tasks), *(t["id"] for t in case_tasks_json)])
    options = ("-c", str(REPO / "pyproject.toml"), str(case_file), *RUN_ARGS, "-k", chosen, *args)
    spec = RunSpec(agent, REPO / "tasks", options, env={KEY_ENV: KEY})
    return NativeRun(shared_run(root, spec, server), tasks)


def files_holding(folder: Path, secret: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def assert_bundled_tasks_score_as_with_the_oracle(native: NativeRun) -> None:
    """The oracle scores 1 on every bundled v1 task (the shared oracle run): so must the runner, on each it played."""
    records = native.records()
    expected = native.keys
    missing = sorted(set(expected) - set(records))
    assert not missing, f"no record for {missing}\n{native.output()[-4000:]}"
    played = {key for key in records if not key.startswith("os/case-")}
    assert played == set(expected), sorted(played ^ set(expected))  # the run played its share, no more
    scores = {key: (records[key]["score"], records[key]["termination"], records[key]["message"]) for key in expected}
    assert all(score == 1.0 for score, _, _ in scores.values()), json.dumps(scores, indent=1)
    for key, task in expected.items():
        infeasible = (task.get("evaluator") or {}).get("func") == "infeasible"
        assert records[key]["termination"] == ("fail" if infeasible else "done"), key
    assert native.problems == []  # no request broke the protocol


def assert_cases_go_on(native: NativeRun, why: dict[str, str]) -> None:
    """Each case of ``why`` (case -> the words its step's parse error holds) spent its first step on the
    fault, recorded, and the episode went on to the task's FAIL (scoring 1)."""
    for case, words in why.items():
        record = native.record(f"os/case-{case}")
        assert (record["score"], record["termination"], record["steps"]) == (1.0, "fail", 2), case
        first, second = native.traj(f"os/case-{case}")
        assert words in first["parse_error"] and first["action"] is None and second["action"] == "FAIL", case


def assert_overloaded_retried_then_masked(native: NativeRun, status: int) -> None:
    """An overloaded answer (``status``) was retried after its Retry-After and the episode passed; one
    overloaded every time was masked as the endpoint's failure after the retries."""
    assert native.record("os/case-overloaded")["score"] == 1.0
    assert native.notes("case-overloaded")["retried_after"] >= 1.0
    masked = native.record("os/case-overloaded-forever")
    assert (masked["termination"], masked["masked"], masked["score"]) == ("model_error", True, None)
    assert str(status) in masked["message"] and "3 attempt(s)" in masked["message"], masked["message"]
    assert native.notes("case-overloaded-forever")["overloaded"] == 3


def assert_no_key_anywhere(native: NativeRun) -> None:
    """The key reached the server on every request (it refuses others) and nothing the run wrote or printed."""
    assert files_holding(native.folder, KEY) == []
    assert KEY not in native.output()
    assert native.shared.notes["conversations"]  # the server was talked to at all
