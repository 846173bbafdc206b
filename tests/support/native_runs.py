"""One real run per native runner: pytest over every bundled v1 task and the failure cases, in a subprocess.

A module-scoped fixture starts the run once (pytester is per test) and every test of the module reads
it: the records, the trajectories, the test server's notes. The model endpoint is a test server of
the runner's protocol with a key it requires; the key is given by its variable's name only.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.model_server import Api, ModelServer
from tests.support.native_model import ScriptedModel
from tests.support.native_script import bundled_v1_tasks, case_tasks, write_jsonl
from tests.support.paths import REPO

KEY = "sk-native-5e0c3b9d1a-do-not-leak"
KEY_ENV = "PYTEST_OSWORLD_NATIVE_KEY"
CASE_BASE = "os-refresh-rate"  # the quick task the failure cases play on (infeasible: FAIL scores 1)
RUN_TIMEOUT_S = 1800
# The episode's knobs for a scripted model: small waits and retries, room for the terminal's steps.
RUN_ARGS = (
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
    result: pytest.RunResult
    run_dir: Path
    script: ScriptedModel
    folder: Path
    seconds: float

    def records(self) -> dict[str, dict[str, Any]]:
        found = {}
        for path in sorted(self.run_dir.glob("*/*/result.json")):
            if not path.parts[-3].startswith("_"):
                data = json.loads(path.read_text())
                found[f"{data['domain']}/{data['task_id']}"] = data
        return found

    def record(self, key: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.run_dir / key / "result.json").read_text())
        return data

    def traj(self, key: str) -> list[dict[str, Any]]:
        path = self.run_dir / key / "traj.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]

    def output(self) -> str:
        return "\n".join(self.result.outlines + self.result.errlines)

    def notes(self, task_id: str) -> dict[str, Any]:
        return self.script.conversations.started[task_id].notes


def run_native(
    folder: Path, server: ModelServer, script: ScriptedModel, agent: str, cases: tuple[str, ...], *args: str
) -> NativeRun:
    """Run ``agent`` over tasks/ (``-m "not v2"``) and the case tasks at ``-n 2`` against ``server``."""
    server.respond_with(server.models[0], script)
    case_file = write_jsonl(folder / "cases.jsonl", case_tasks(CASE_BASE, cases))
    run_id = f"native-{secrets.token_hex(4)}"
    reports = folder / "reports"
    api: Api = "anthropic" if agent == "anthropic-computer" else "openai"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-c",
        str(REPO / "pyproject.toml"),
        f"--basetemp={folder / 'basetemp'}",
        "-p",
        "no:cacheprovider",
        str(REPO / "tasks"),
        str(case_file),
        "-m",
        "not v2",
        "-n",
        "2",
        "--osworld-report-dir",
        str(reports),
        "--osworld-run-id",
        run_id,
        "--osworld-agent",
        agent,
        "--osworld-model-url",
        server.url(api),
        "--osworld-model",
        server.models[0],
        "--osworld-model-key-env",
        KEY_ENV,
        *RUN_ARGS,
        *args,
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env.update({KEY_ENV: KEY, "HOME": str(folder), "PY_COLORS": "0"})
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )
    seconds = time.monotonic() - started
    result = pytest.RunResult(done.returncode, done.stdout.splitlines(), done.stderr.splitlines(), seconds)
    return NativeRun(result, reports / run_id, script, folder, seconds)


def bundled_keys() -> dict[str, dict[str, Any]]:
    """Every bundled v1 task by its record key (domain/id)."""
    return {f"{t['domain']}/{t['id']}": t for t in bundled_v1_tasks()}


def files_holding(folder: Path, secret: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def assert_bundled_tasks_score_as_with_the_oracle(native: NativeRun) -> None:
    """The oracle scores 1 on every bundled v1 task (tests/episode/test_bundled*.py): so must the runner."""
    records = native.records()
    expected = bundled_keys()
    missing = sorted(set(expected) - set(records))
    assert not missing, f"no record for {missing}\n{native.output()[-4000:]}"
    scores = {key: (records[key]["score"], records[key]["termination"], records[key]["message"]) for key in expected}
    assert all(score == 1.0 for score, _, _ in scores.values()), json.dumps(scores, indent=1)
    for key, task in expected.items():
        infeasible = (task.get("evaluator") or {}).get("func") == "infeasible"
        assert records[key]["termination"] == ("fail" if infeasible else "done"), key


def assert_no_key_anywhere(native: NativeRun) -> None:
    """The key reached the server on every request and nothing the run wrote or printed."""
    assert files_holding(native.folder, KEY) == []
    assert KEY not in native.output()
    assert native.script.conversations.started  # the server was talked to at all
