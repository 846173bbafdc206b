"""Real runs that several tests read, each started once per test session.

A real run of the bundled tasks takes minutes; many tests only read what one wrote (records, the summary,
reports). A shared run is started by the first test process of the session that asks for it, under a
lock in the session's own temporary folder, and every other process (an xdist worker of the same session)
waits on that lock and reads the same run. What the run printed and its exit status are kept beside it,
so each reader gets the whole :class:`~tests.episode.runs.Run`, as if it had started the run itself.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest

from tests.episode.runs import Run

# What a test process of this session may set that the run must not inherit (pytester clears these for
# its own runs, and an xdist worker's variables belong to the outer session).
_DROPPED_ENV = ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@dataclass(frozen=True)
class RunSpec:
    """A run: the task input and the options; ``name`` is its folder and its run id's stem."""

    name: str
    source: Path
    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)


class RunHelper(Protocol):
    """What runs beside a shared run (a judge server, say): the options the run needs to reach it, and
    after the run what it saw, for the readers."""

    args: tuple[str, ...]

    def notes(self) -> dict[str, Any]: ...


@dataclass
class SharedRun(Run):
    """A shared run: the :class:`Run`, the folder it ran in (its reports), and what its helpers noted."""

    folder: Path = Path()
    notes: dict[str, Any] = field(default_factory=dict)


def session_folder(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The folder every process of this test session shares (one per session, never another's)."""
    basetemp = tmp_path_factory.getbasetemp()
    return (basetemp.parent if worker_id != "master" else basetemp) / "shared-runs"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes, also when the process dies
        yield


Helper = Callable[[], AbstractContextManager[RunHelper | None]]


def shared_run(root: Path, spec: RunSpec, helper: Helper = nullcontext) -> SharedRun:
    """The run of ``spec`` in ``root``: started here when no process of the session has, read otherwise.
    ``helper`` is entered around the run only by the process that starts it."""
    folder = root / spec.name
    kept = folder / "run.json"
    with _locked(root / f"{spec.name}.lock"):
        if not kept.is_file():
            folder.mkdir(parents=True, exist_ok=True)
            with helper() as beside:
                _start(folder, spec, beside)
        data = json.loads(kept.read_text())
    result = pytest.RunResult(data["ret"], data["stdout"], data["stderr"], data["duration"])
    return SharedRun(result=result, run_dir=Path(data["run_dir"]), folder=folder, notes=data["notes"])


def _start(folder: Path, spec: RunSpec, beside: RunHelper | None) -> None:
    run_id = f"{spec.name}-{os.getpid()}-{time.time_ns() % 10**8}"  # unique: a run's end sweeps its run id
    reports = folder / "reports"
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.update({"PY_COLORS": "0", "HOME": str(folder), **spec.env})
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(spec.source),
            "-p",
            "no:cacheprovider",
            f"--basetemp={folder / 'basetemp'}",
            "--osworld-report-dir",
            str(reports),
            "--osworld-run-id",
            run_id,
            *spec.args,
            *(beside.args if beside else ()),
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    kept = {
        "ret": done.returncode,
        "stdout": done.stdout.splitlines(),
        "stderr": done.stderr.splitlines(),
        "duration": time.monotonic() - started,
        "run_dir": str(reports / run_id),
        "notes": beside.notes() if beside else {},
    }
    (folder / "run.json").write_text(json.dumps(kept))
