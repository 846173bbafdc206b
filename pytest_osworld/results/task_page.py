"""What a report page of one task item says, whatever renders it (Allure, pytest-html).

One :class:`TaskPage` per task item and repeat: the task's instruction and where it is defined, the
facts of its episode as text (score, termination, steps, runner, model, repeat), the status with its
message, the task's own setup steps with their timing, and links to the run's files. Every text here
is sanitized: a page is written where anyone with the report can read it.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pytest_osworld.record import TaskResult
from pytest_osworld.results.store import FINAL_PNG
from pytest_osworld.sanitize import sanitize
from pytest_osworld.tasks.readers import TaskEntry

ABSENT = "-"  # a fact the episode never got to (no valid score, no model): shown, never omitted
PARAMETER_NAMES = ("score", "termination", "steps", "runner", "model", "repeat")
_TITLE_CHARS = 100

PageStatus = Literal["passed", "failed", "masked", "skipped"]
StepStatus = Literal["passed", "broken"]


@dataclass(frozen=True)
class TimedStep:
    """One setup step of the task as it ran; ``start``/``stop`` in epoch milliseconds (None: unknown).

    ``message`` is what the step reported (its note): the error of a failed step.
    """

    title: str
    status: StepStatus
    message: str | None
    start: int | None
    stop: int | None


@dataclass(frozen=True)
class TaskPage:
    name: str  # the test item's name, as report plugins name its result
    history_key: str  # the same for every repeat of the task, and from run to run
    key: str  # the run key: domain/task_id or domain/task_id#r2
    instruction: str
    source: str | None  # where the task is defined
    status: PageStatus
    message: str | None
    parameters: list[tuple[str, str]]
    setup: list[TimedStep] = field(default_factory=list)  # the task's config steps
    postconfig: list[TimedStep] = field(default_factory=list)  # evaluator.postconfig, before the metrics
    links: list[tuple[str, str]] = field(default_factory=list)  # (name, URL)

    @property
    def description(self) -> str:
        """The instruction, then the task's key and source (plain text; Markdown renders it as it reads)."""
        where = f"Task `{self.key}`" + (f", from `{self.source}`" if self.source else "")
        return f"{self.instruction}\n\n{where}."

    @property
    def description_html(self) -> str:
        """The same as HTML: the instruction kept verbatim (an ``_`` or ``*`` in it is not Markdown)."""
        text = html.escape(self.instruction).replace("\n", "<br>")
        where = f"Task <code>{html.escape(self.key)}</code>"
        if self.source:
            where += f", from <code>{html.escape(self.source)}</code>"
        return f"<p>{text}</p><p>{where}.</p>"


def task_source(entry: TaskEntry) -> str:
    """Where a task is defined, for a reader to open it.

    An OSWorld JSON task: its file and line (``entry.origin``, as the input was given). A task defined
    as a Python class would name its module, class and file here instead; this is the one place to do it.
    """
    return entry.origin


def history_key(file_nodeid: str, entry: TaskEntry) -> str:
    """The task's identity across repeats and runs: its input file and its key, never the repeat."""
    return f"{file_nodeid}::{entry.key}"


def parameters(
    result: TaskResult | None, info: dict[str, Any], *, repeat: int, runner: str | None, model: str | None
) -> list[tuple[str, str]]:
    """The facts of an episode as text, in :data:`PARAMETER_NAMES`'s order; an absent one is ``-``.

    ``info`` is the outcome a report carries (``score``, ``termination``); the record, when there is
    one, names the runner and the model the episode really used.
    """
    score = info.get("score")
    termination = info.get("termination")
    steps = result.steps if result is not None else None
    if result is not None:
        runner = result.runner or runner
        model = result.model.get("name") or model
    values = {
        "score": None if score is None else f"{score:g}",
        "termination": termination,
        "steps": None if steps is None else str(steps),
        "runner": runner,
        "model": model,
        "repeat": str(repeat),
    }
    return [(name, sanitize(str(values[name])) if values[name] else ABSENT) for name in PARAMETER_NAMES]


def _joined(head: str, message: str) -> str:
    return f"{head}: {message}" if message else head


def status_message(status: PageStatus, info: dict[str, Any]) -> str | None:
    """The one line that says why: a mask's reason first, a failure's score first, a skip's reason."""
    message = sanitize(str(info.get("message") or "")).strip()
    if status == "masked":
        reason = info.get("termination") or "harness_error"
        return message if message.startswith("masked (") else _joined(f"masked ({reason})", message)
    if status == "failed":
        score = info.get("score")
        if score is None or message.startswith("score "):
            return message or None
        return _joined(f"score {score:g}", message)
    if status == "skipped":
        return message or "skipped"
    return None


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _epoch_ms(iso: str | None) -> int | None:
    if not iso:
        return None
    try:
        return _ms(datetime.fromisoformat(iso).timestamp())
    except ValueError:
        return None


def describe_step(step: dict[str, Any]) -> str:
    """What a task's setup step does, in a few words: its command, path, files or URLs as the task wrote them."""
    params = step.get("parameters") or {}
    if not isinstance(params, dict):
        return ""
    command = params.get("command")
    if command:
        return " ".join(str(c) for c in command) if isinstance(command, list) else str(command)
    files = params.get("files")
    if isinstance(files, list):
        return ", ".join(str(f.get("path") or f.get("url") or "") for f in files if isinstance(f, dict))
    for name in ("path", "url", "urls_to_open", "window_name", "seconds"):
        value = params.get(name)
        if value not in (None, "", []):
            return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)
    return json.dumps(params, ensure_ascii=False, separators=(",", ":")) if params else ""


def _step(raw: dict[str, Any], task_step: dict[str, Any] | None, start: int | None) -> TimedStep:
    seconds = float(raw.get("seconds") or 0.0)
    ok = bool(raw.get("ok", True))
    note = " ".join(sanitize(str(raw.get("note") or "")).split())
    kind = str(raw.get("type") or "step")
    what = " ".join(sanitize(describe_step(task_step or {})).split())
    title = f"{kind}: {what}" if what else kind
    if len(title) > _TITLE_CHARS:
        title = title[: _TITLE_CHARS - 1] + "…"
    return TimedStep(
        title=title,
        status="passed" if ok else "broken",
        message=note or None,
        start=start,
        stop=None if start is None else start + _ms(seconds),
    )


def _timeline(
    raws: list[dict[str, Any]], task_steps: list[dict[str, Any]], *, start: int | None = None, end: int | None = None
) -> list[TimedStep]:
    """Steps that ran back to back, placed from a known start, or backwards from a known end."""
    if start is None and end is not None:
        start = end - sum(_ms(float(r.get("seconds") or 0.0)) for r in raws)
    steps = []
    for raw in raws:
        index = raw.get("index")
        task_step = task_steps[index] if isinstance(index, int) and 0 <= index < len(task_steps) else None
        step = _step(raw, task_step, start)
        steps.append(step)
        start = step.stop
    return steps


def setup_timeline(result: TaskResult, entry: TaskEntry) -> tuple[list[TimedStep], list[TimedStep]]:
    """The config and the postconfig steps of a record, each with what it did, its start and its stop.

    A record keeps each step's seconds; the phases place them. Config steps end the setup phase (it
    first waits for the guest), so they are placed backwards from its end; postconfig steps open the
    evaluation, the last phase, so they are placed forwards from its start.
    """
    config = [s for s in result.setup_steps if s.get("phase", "config") == "config"]
    postconfig = [s for s in result.setup_steps if s.get("phase") == "postconfig"]
    started = _epoch_ms(result.started_at)
    finished = _epoch_ms(result.finished_at)
    setup_seconds = result.durations.setup
    setup_end = None if started is None or setup_seconds is None else started + _ms(setup_seconds)
    evaluation = result.durations.evaluation
    evaluation_start = None if finished is None or evaluation is None else finished - _ms(evaluation)
    task = entry.task
    config_steps = [s.model_dump(mode="json", exclude_none=True) for s in task.config]
    postconfig_steps = [s.model_dump(mode="json", exclude_none=True) for s in task.evaluator.postconfig]
    return (
        _timeline(config, config_steps, start=None if setup_end is not None else started, end=setup_end),
        _timeline(postconfig, postconfig_steps, start=evaluation_start),
    )


def links(run_dir: Path, task_dir: Path, result: TaskResult | None) -> list[tuple[str, str]]:
    """File URLs of the run's summary, the episode's video when one was recorded, and its last screenshot.

    Absolute ``file://`` URLs: a report is usually opened on the machine that holds the run folder,
    wherever the report itself was generated.
    """
    found = [("summary.json", (run_dir / "summary.json").resolve().as_uri())]
    video = result.artifacts.get("recording") if result is not None else None
    if isinstance(video, str) and video:
        found.append(("video", (task_dir / video).resolve().as_uri()))
    screenshot = last_screenshot(task_dir, result)
    if screenshot is not None:
        found.append(("last screenshot", screenshot.resolve().as_uri()))
    return found


def last_screenshot(task_dir: Path, result: TaskResult | None) -> Path | None:
    """The episode's last screen: its final screenshot, else the screenshot of its last step that kept
    one (a masked episode may end before its final one); None when there is none on disk."""
    names: list[str] = []
    if result is not None:
        final = result.artifacts.get("final_screenshot")
        steps = result.artifacts.get("step_screenshots")
        names += [final] if isinstance(final, str) else []
        names += reversed(steps) if isinstance(steps, list) else []
    names.append(FINAL_PNG)
    for name in names:
        if isinstance(name, str) and name and (task_dir / name).is_file():
            return task_dir / name
    steps_on_disk = sorted(task_dir.glob("step_*.png"), key=_step_number)
    return steps_on_disk[-1] if steps_on_disk else None


def _step_number(path: Path) -> int:
    digits = path.stem.removeprefix("step_")
    return int(digits) if digits.isdigit() else -1


def build(
    *,
    name: str,
    file_nodeid: str,
    entry: TaskEntry,
    key: str,
    repeat: int,
    result: TaskResult | None,
    info: dict[str, Any],
    runner: str | None,
    model: str | None,
    run_dir: Path,
    task_dir: Path,
) -> TaskPage:
    """The page of one task item from its record (None when the episode never wrote one) and its outcome."""
    status: PageStatus = info.get("status") or "masked"
    setup, postconfig = setup_timeline(result, entry) if result is not None else ([], [])
    return TaskPage(
        name=name,
        history_key=history_key(file_nodeid, entry),
        key=key,
        instruction=sanitize(entry.task.instruction),
        source=task_source(entry),
        status=status,
        message=status_message(status, info),
        parameters=parameters(result, info, repeat=repeat, runner=runner, model=model),
        setup=setup,
        postconfig=postconfig,
        links=links(run_dir, task_dir, result),
    )
