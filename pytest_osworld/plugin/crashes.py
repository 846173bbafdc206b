"""An xdist worker that died under a task (killed, out of memory): the task's record, on the controller.

A worker killed hard runs no teardown and sends no report; xdist reports the item it was running
through ``pytest_handlecrashitem`` (a failure saying the worker crashed) and starts another worker.
Here that item becomes:

- masked ``worker_lost`` when its episode had not written its record: the controller writes the
  record (never a missing record, never a pass), after clearing what an earlier attempt or the dead
  worker's unfinished writes left in the task's folder;
- an error at teardown when the record was written before the worker died: the record stands (the
  episode ended, and was scored or masked), and the crash is still an error of the run.

A session runs each task once, so a record finished after this session began is this attempt's, and
one finished before it an earlier session's (a resume). The item's start as the controller hears of it
cannot tell them apart: a quick episode may be recorded before its start reaches the controller. The worker's sandbox is removed by the controller's
sweep at the end of the session (plugin/sandbox.py).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.errors import OsworldError
from pytest_osworld.plugin.outcomes import record_info, report_info, set_report_info
from pytest_osworld.plugin.run import get_run
from pytest_osworld.record import TaskResult, Termination
from pytest_osworld.results.manifest import read_manifest
from pytest_osworld.results.store import RESULT_JSON, RunStore, StoreError, TaskKey


def run_key(nodeid: str) -> str | None:
    """The run key of a task item's node id (``file::os/id`` or ``file::os/id[r2]``), or None."""
    name = nodeid.rpartition("::")[2]
    base, bracket, rest = name.partition("[r")
    repeat = int(rest[:-1]) if bracket and rest.endswith("]") and rest[:-1].isdigit() else 1
    try:
        key = TaskKey.parse(base)
    except StoreError:
        return None
    return str(TaskKey(key.domain, key.task_id, repeat))


def _iso(instant: float) -> str:
    return datetime.fromtimestamp(instant, UTC).isoformat(timespec="milliseconds")


class WorkerCrashes:
    """Controller-side hooks (registered only under xdist)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._session_began = time.time()  # before any worker starts
        self._started: dict[str, float] = {}  # node id -> when the controller heard it began (time.time())
        self._reported: set[str] = set()  # node ids whose outcome a worker sent

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self._started[nodeid] = time.time()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report_info(report) is not None:
            self._reported.add(report.nodeid)

    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        run = get_run(self.config)
        key = run_key(crashitem)
        try:
            manifest = read_manifest(run.run_dir)
        except OsworldError:
            manifest = None
        if key is None or manifest is None or key not in manifest.selected.ids:
            return  # not a task of this run (a user's own test): xdist's report as it is
        worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", None)
        started = self._started.get(crashitem, time.time())
        store = RunStore(run.run_dir)
        record = _record(store, key)
        if record is not None and _finished(record) >= self._session_began:  # this attempt's: it had ended
            report.when = "teardown"  # shown as an error after the task's outcome
            report.longrepr = (
                f"worker {worker} died after {key} was recorded ({record.termination.value}); the record stands"
            )
            if crashitem not in self._reported:
                set_report_info(report, record_info(key, record))
            return
        message = (
            f"the xdist worker {worker} running it died (killed, or out of memory) before the episode ended; "
            "its sandbox is removed at the end of the run"
        )
        result = TaskResult(
            run_id=run.run_id,
            task_id=TaskKey.parse(key).task_id,
            domain=TaskKey.parse(key).domain,
            repeat=TaskKey.parse(key).repeat,
            termination=Termination.WORKER_LOST,
            message=message,
            runner=run.settings.runner_name,
            worker=worker,
            started_at=_iso(started),
            finished_at=_iso(time.time()),
        )
        try:
            if record is not None:
                store.begin(key)  # an earlier session's attempt, which the dead worker had not set aside yet
            store.discard_unfinished(key)  # what the dead worker was writing; its steps so far stay
            store.write_result(result)
        except (OSError, OsworldError) as exc:
            message += f" (its record could not be written: {exc})"
        report.when = "setup"  # a mask is an error (JUnit <error>), as the worker's are
        report.longrepr = f"masked (worker_lost): {message}"
        set_report_info(report, record_info(key, result))


def _record(store: RunStore, key: str) -> TaskResult | None:
    path: Path = store.path_of(key) / RESULT_JSON
    try:
        return TaskResult.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _finished(record: TaskResult) -> float:
    return datetime.fromisoformat(record.finished_at).timestamp() if record.finished_at else 0.0


def configure(config: pytest.Config) -> None:
    """Register the hooks on an xdist controller (a worker has no crashes to report)."""
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(WorkerCrashes(config), "osworld-worker-crashes")
