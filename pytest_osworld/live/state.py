"""The run as its live page shows it, owned by the process that serves the page.

Events come from the channel (each process's progress, and a failed task's sandbox kept for a look by
``--osworld-keep-failed``) and from the serving process's own hooks (each task's outcome, the bridges'
input counts); every change bumps a version, and a page's stream sends the
tasks changed since the version it last saw. The rates are the summary's own (``results/views.py``) over
the tasks finished so far.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pytest_osworld.record import TaskResult, Usage
from pytest_osworld.results.summary import usage_totals
from pytest_osworld.results.views import (
    ANSWER_CHARS,
    GDRIVE_MARKER,
    VIEWS,
    Entry,
    Status,
    figures,
    skip_kind,
    status_of,
)

MESSAGE_CHARS = 400
RUNNING = frozenset({"starting", "setup", "step", "evaluating"})
FINISHED = frozenset({"passed", "failed", "masked", "skipped"})


def _cut(text: str | None, limit: int) -> str | None:
    if not text:
        return None
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class LiveTask:
    key: str
    name: str
    order: int
    state: str = "queued"
    step: int = 0
    max_steps: int | None = None
    worker: str | None = None
    sandbox: str | None = None
    vnc: str | None = None  # HOST:PORT of the sandbox's VNC server on this machine (never sent to a page)
    started: float | None = None  # epoch seconds
    ended: float | None = None
    score: float | None = None
    termination: str | None = None
    message: str | None = None
    response: str | None = None
    shot: int = 0  # how many screenshots came (0: none yet); the page asks for the last
    usage: Usage = field(default_factory=Usage)
    input_dropped: int = 0  # input messages the view-only bridge kept from the desktop
    input_sent: int = 0  # input messages a person sent to the desktop (live_input)
    touched_at: str | None = None
    kept: str | None = None  # why its sandbox was kept for a look after it ended (--osworld-keep-failed)
    entry: Entry | None = None  # once finished: what the rates count
    version: int = 0

    @property
    def running(self) -> bool:
        return self.state in RUNNING

    @property
    def watchable(self) -> bool:
        """Its desktop can be bridged: it runs, or its sandbox was kept after it ended (until the run's end)."""
        return self.vnc is not None and (self.running or self.kept is not None)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            "order": self.order,
            "state": self.state,
            "step": self.step,
            "max_steps": self.max_steps,
            "worker": self.worker,
            "sandbox": self.sandbox,
            "watchable": self.watchable,
            "started": self.started,
            "ended": self.ended,
            "score": self.score,
            "termination": self.termination,
            "message": self.message,
            "response": self.response,
            "shot": self.shot,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "cost": self.usage.cost,
            "input_dropped": self.input_dropped,
            "input_sent": self.input_sent,
            "touched_at": self.touched_at,
            "kept": self.kept,
        }


class LiveState:
    def __init__(self, *, run_id: str, input_allowed: bool = False) -> None:
        self.run_id = run_id
        self.input_allowed = input_allowed
        self.started = time.time()
        self.ended: float | None = None
        self.final_page: str | None = None  # where the run's final state was saved, once it ended
        self.version = 0
        self._tasks: dict[str, LiveTask] = {}
        self._changed = threading.Condition()

    # --- changes ------------------------------------------------------------------------------

    def _task(self, key: str, name: str | None = None) -> LiveTask:
        task = self._tasks.get(key)
        if task is None:
            task = self._tasks[key] = LiveTask(key=key, name=name or key, order=len(self._tasks))
        return task

    def _touch(self, task: LiveTask) -> None:
        self.version += 1
        task.version = self.version

    def _done(self) -> None:
        self._changed.notify_all()

    def apply(self, event: dict[str, Any]) -> None:
        """One event a process published (``plugin/live.py`` says which); unknown kinds are ignored."""
        kind, key = event.get("kind"), event.get("key")
        with self._changed:
            if kind == "selected":
                for each in event.get("tasks", []):
                    if each["key"] not in self._tasks:
                        task = self._task(each["key"], each.get("name"))
                        task.max_steps = each.get("max_steps")
                        self._touch(task)
            elif isinstance(key, str):
                task = self._task(key, event.get("name"))
                self._apply_task(task, kind, event)
                self._touch(task)
            self._done()

    def _apply_task(self, task: LiveTask, kind: Any, event: dict[str, Any]) -> None:
        final = task.state in FINISHED  # a late event never takes a finished task back
        if kind == "begin":
            task.worker = event.get("worker")
            task.started = task.started or event.get("at")
            if not final:
                task.state = "starting"
        elif kind == "sandbox":
            task.sandbox, task.vnc = event.get("sandbox"), event.get("vnc")
        elif kind == "phase" and not final:
            task.state = "evaluating" if event.get("phase") == "evaluation" else "setup"
        elif kind == "step" and not final:
            task.state, task.step, task.max_steps = "step", int(event["number"]), event.get("of")
        elif kind == "stepped":
            task.response = _cut(event.get("response"), ANSWER_CHARS) or task.response
            if event.get("shot"):
                task.shot += 1
            if task.entry is None:  # once finished, the record's usage stands
                task.usage = task.usage.add(Usage.model_validate(event.get("usage") or {}))
        elif kind == "kept":  # after the task ended: its sandbox stays, renamed to say why
            task.kept = str(event.get("why") or "kept")
            task.sandbox = event.get("sandbox") or task.sandbox

    def finish(self, key: str, info: dict[str, Any], record: TaskResult | None) -> None:
        """A task's outcome, as its report carries it (``info``) and its record says."""
        with self._changed:
            task = self._task(key)
            task.state = str(info.get("status") or "masked")
            task.ended = time.time()
            task.termination = info.get("termination")
            task.score = info.get("score")
            task.message = _cut(info.get("message"), MESSAGE_CHARS)
            if record is not None:
                task.state = status_of(record)
                task.usage = record.usage
                task.entry = Entry(
                    key=key,
                    status=status_of(record),
                    score=record.score if record.valid else None,
                    needs_gdrive=GDRIVE_MARKER in record.markers,
                    skip_kind=skip_kind(record),
                )
            else:
                status: Status = "masked"
                for known in ("passed", "failed", "skipped"):
                    if task.state == known:
                        status = known
                task.state = status
                task.entry = Entry(key=key, status=status, score=task.score)
            self._touch(task)
            self._done()

    def count_input(self, key: str, *, dropped: int = 0, sent: int = 0, at: str | None = None) -> None:
        with self._changed:
            task = self._task(key)
            task.input_dropped += dropped
            task.input_sent += sent
            if sent and task.touched_at is None:
                task.touched_at = at
            self._touch(task)
            self._done()

    def end(self, final_page: str | None = None) -> None:
        """The run ended; ``final_page``: where its final state was saved as a static page."""
        with self._changed:
            self.ended = time.time()
            self.final_page = final_page
            self.version += 1
            self._done()

    # --- reading ------------------------------------------------------------------------------

    def vnc_of(self, key: str) -> str | None:
        """The VNC address of a running task's sandbox or of a kept one, or None."""
        with self._changed:
            task = self._tasks.get(key)
            return task.vnc if task is not None and task.watchable else None

    def wait(self, version: int, timeout: float) -> int:
        """Until the state is newer than ``version`` (or the timeout); returns the current version."""
        with self._changed:
            self._changed.wait_for(lambda: self.version > version, timeout)
            return self.version

    def snapshot(self, since: int = 0) -> dict[str, Any]:
        """The tasks changed after version ``since`` (all with 0) and the run's figures."""
        with self._changed:
            tasks = [t.to_json() for t in self._tasks.values() if t.version > since]
            return {"version": self.version, "now": time.time(), "tasks": tasks, "run": self._run_json()}

    def _run_json(self) -> dict[str, Any]:
        tasks = list(self._tasks.values())
        counts = {"total": len(tasks), "queued": 0, "running": 0, "passed": 0, "failed": 0, "masked": 0, "skipped": 0}
        for task in tasks:
            counts["running" if task.running else task.state if task.state in counts else "queued"] += 1
        counts["kept"] = sum(1 for task in tasks if task.kept is not None)
        entries = [t.entry for t in tasks if t.entry is not None]
        return {
            "run_id": self.run_id,
            "started": self.started,
            "ended": self.ended,
            "final_page": self.final_page,
            "input_allowed": self.input_allowed,
            "counts": counts,
            "views": {view: figures(entries, view).to_json() for view in VIEWS},
            "usage": usage_totals(t.usage for t in tasks),
        }
