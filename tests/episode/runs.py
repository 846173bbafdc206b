"""Running pytest over task files inside a test, and reading what the run wrote."""

from __future__ import annotations

import io
import json
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.support.model_server import ModelServer
from tests.support.paths import REPO

BUNDLED = REPO / "tasks" / "examples.jsonl"
_OUTCOME = re.compile(r"\b(PASSED|FAILED|MASKED|SKIPPED|ERROR)\b")
_NODE = re.compile(r"::(\S+?)(?:\s|$)")


@dataclass
class Run:
    result: pytest.RunResult
    run_dir: Path

    @property
    def run_id(self) -> str:
        return self.run_dir.name

    def record(self, key: str) -> dict[str, Any]:
        record: dict[str, Any] = json.loads((self.run_dir / key / "result.json").read_text())
        return record

    def records(self) -> dict[str, dict[str, Any]]:
        found = {}
        for path in sorted(self.run_dir.glob("*/*/result.json")):
            if path.parts[-3].startswith("_"):
                continue
            data = json.loads(path.read_text())
            found[f"{data['domain']}/{data['task_id']}"] = data
        return found

    def task_outcomes(self) -> dict[str, str]:
        """``<domain>/<id>`` -> the word ``pytest -v`` printed for it (PASSED, FAILED, MASKED, SKIPPED, ERROR),
        with or without xdist; the run must have been verbose."""
        found: dict[str, str] = {}
        for line in self.result.outlines:
            word = _OUTCOME.search(line)
            node = _NODE.search(line)
            if word and node:
                found.setdefault(node.group(1), word.group(1))
        return found

    def summary(self) -> dict[str, Any]:
        summary: dict[str, Any] = json.loads((self.run_dir / "summary.json").read_text())
        return summary


# The default run id: made unique per call, because a run's end sweeps its run id's containers, and two
# sessions (a CI run and a developer's, or two workers) must never remove each other's sandboxes.
FRESH = "run"


def run_tasks(pytester: pytest.Pytester, source: Path | str, *args: str, run_id: str | None = FRESH) -> Run:
    """Run pytest over ``source``; ``run_id=None`` leaves the run id to the run (e.g. to a resume), the
    default gives a fresh one (``run-<hex>``, in ``Run.run_dir``'s name), any other is used as given."""
    if run_id == FRESH:
        run_id = f"{FRESH}-{secrets.token_hex(4)}"
    reports = pytester.path / "reports"
    named = ["--osworld-run-id", run_id] if run_id else []
    # A subprocess: an episode run is heavy, and a fresh process keeps each run's state its own.
    result = pytester.runpytest_subprocess(
        str(source), "-p", "no:cacheprovider", "--osworld-report-dir", str(reports), *named, *args
    )
    return Run(result=result, run_dir=reports / (run_id or ""))


def bundled_task(task_id: str) -> dict[str, Any]:
    for line in BUNDLED.read_text().splitlines():
        task: dict[str, Any] = json.loads(line)
        if task["id"] == task_id:
            return task
    raise KeyError(task_id)


def scripted_pyautogui(server: ModelServer) -> tuple[str, ...]:
    """The options that drive the pyautogui runner with the server's scripted model."""
    return ("--osworld-agent", "pyautogui", "--osworld-model-url", server.openai_url, "--osworld-model", "scripted")


RED = (255, 0, 0)
PAINT_ROOT_RED = "import subprocess; subprocess.run(['xsetroot', '-solid', '#ff0000'], check=True)"


def corner(png: bytes) -> tuple[int, ...]:
    """A pixel of the root window, which no window of the empty desktop covers."""
    with Image.open(io.BytesIO(png)) as image:
        pixel: tuple[int, ...] = image.convert("RGB").getpixel((10, 10))  # type: ignore[assignment]
        return pixel
