"""One real run per native runner: every bundled v1 task and the failure cases, against the runner's protocol.

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

    options = ("-c", str(REPO / "pyproject.toml"), str(case_file), *RUN_ARGS, *args)
    spec = RunSpec(agent, REPO / "tasks", options, env={KEY_ENV: KEY})
    return NativeRun(shared_run(root, spec, server))


def bundled_keys() -> dict[str, dict[str, Any]]:
    """Every bundled v1 task by its record key (domain/id)."""
    return {f"{t['domain']}/{t['id']}": t for t in bundled_v1_tasks()}


def files_holding(folder: Path, secret: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def assert_bundled_tasks_score_as_with_the_oracle(native: NativeRun) -> None:
    """The oracle scores 1 on every bundled v1 task (the shared oracle run): so must the runner."""
    records = native.records()
    expected = bundled_keys()
    missing = sorted(set(expected) - set(records))
    assert not missing, f"no record for {missing}\n{native.output()[-4000:]}"
    scores = {key: (records[key]["score"], records[key]["termination"], records[key]["message"]) for key in expected}
    assert all(score == 1.0 for score, _, _ in scores.values()), json.dumps(scores, indent=1)
    for key, task in expected.items():
        infeasible = (task.get("evaluator") or {}).get("func") == "infeasible"
        assert records[key]["termination"] == ("fail" if infeasible else "done"), key
    assert native.problems == []  # no request broke the protocol


def assert_no_key_anywhere(native: NativeRun) -> None:
    """The key reached the server on every request (it refuses others) and nothing the run wrote or printed."""
    assert files_holding(native.folder, KEY) == []
    assert KEY not in native.output()
    assert native.shared.notes["conversations"]  # the server was talked to at all
