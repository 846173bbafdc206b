"""Allure pages of task episodes: attachments, labels, and what a task's page says.

Every function does nothing unless ``--alluredir`` is on. allure-pytest writes one result file per
test from the process that ran it, so this is safe under xdist: each worker writes its own tests'
files into the shared results folder, and :class:`TaskPages` (registered in each worker) shapes them
before they are written.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TypeVar

from pytest_osworld.record import ServiceRecord, StepRecord, TaskResult
from pytest_osworld.results.summary import failed_service
from pytest_osworld.results.task_page import TaskPage, TimedStep
from pytest_osworld.sanitize import sanitize, scrub

try:  # allure-pytest is a dependency, but a broken or removed install must not break a run
    import allure
    import allure_commons
    from allure_commons.model2 import (
        Link,
        Parameter,
        StatusDetails,
        TestBeforeResult,
        TestResultContainer,
        TestStepResult,
    )
    from allure_commons.types import AttachmentType
except ImportError:  # pragma: no cover
    allure = None  # type: ignore[assignment]

_TITLE_CHARS = 100


def active() -> bool:
    """Whether an Allure listener records this process's tests (``--alluredir`` given)."""
    if allure is None:
        return False
    return any(type(p).__name__ == "AllureListener" for p in allure_commons.plugin_manager.get_plugins())


def _action_text(action: Any) -> str:
    if action is None:
        return "no action"
    if isinstance(action, str):
        return action
    return json.dumps(action, ensure_ascii=False)


def step(record: StepRecord, screenshot_png: bytes | None = None) -> None:
    """One Allure step per agent action: the action as title, the screenshot and the model's answer attached."""
    if not active():
        return
    action = sanitize(_action_text(record.action))
    title = " ".join(action.split())
    if len(title) > _TITLE_CHARS:
        title = title[: _TITLE_CHARS - 1] + "…"
    with allure.step(f"step {record.step_num}: {title}"):
        if screenshot_png:
            allure.attach(screenshot_png, name=f"screenshot step {record.step_num}", attachment_type=AttachmentType.PNG)
        if record.response:
            allure.attach(sanitize(record.response), name="model response", attachment_type=AttachmentType.TEXT)
        if len(action) > _TITLE_CHARS or "\n" in action:
            allure.attach(action, name="action", attachment_type=AttachmentType.TEXT)
        if record.parse_error:
            allure.attach(sanitize(record.parse_error), name="parse error", attachment_type=AttachmentType.TEXT)


def attach_episode(result: TaskResult | None, traj: list[dict[str, Any]], final_png: bytes | None) -> None:
    """The episode's end: the trajectory as JSON, the final screenshot and the record."""
    if not active():
        return
    if traj:
        text = json.dumps(scrub(traj), indent=2, ensure_ascii=False)
        allure.attach(text, name="trajectory", attachment_type=AttachmentType.JSON)
    if final_png:
        allure.attach(final_png, name="final screenshot", attachment_type=AttachmentType.PNG)
    if result is not None:
        text = json.dumps(scrub(result.model_dump(mode="json")), indent=2, ensure_ascii=False)
        allure.attach(text, name="result", attachment_type=AttachmentType.JSON)


def label_marks(run_id: str, task_id: str, domain: str, related_apps: Iterable[str]) -> list[Any]:
    """Markers allure-pytest turns into labels: domain as feature, apps as stories, the run as parent suite."""
    import pytest

    def label(label_type: str, *values: str) -> Any:
        return pytest.mark.allure_label(*values, label_type=label_type)

    marks = [
        label("feature", domain),
        label("parentSuite", f"osworld run {run_id}"),
        label("tag", f"run:{run_id}"),
        label("task_id", task_id),
    ]
    apps = [a for a in related_apps if a]
    if apps:
        marks.append(label("story", *apps))
    return marks


# --- a task's page ------------------------------------------------------------------------------------

# The plugin's own fixtures (a conftest's override of one keeps its name) and the pytest ones they use:
# the machinery of every task item, not facts of the task. Their allure-pytest entries are folded.
_INTERNAL_PREFIX = "osworld_"
_INTERNAL_NAMES = frozenset({"pytestconfig"})
FIXTURES_ENTRY = "episode fixtures (pytest-osworld: sandbox, runner, recorder)"
SETUP_ENTRY = "task setup (config)"
SERVICES_ENTRY = "shared services"
POSTCONFIG_STEP = "task postconfig (before the evaluation)"
_ALLURE_STATUS = {"passed": "passed", "failed": "failed", "masked": "broken", "skipped": "skipped"}
_WORST_FIRST = ("broken", "failed", "skipped", "passed")
_Hook = TypeVar("_Hook", bound=Callable[..., None])


def _hookimpl(**options: Any) -> Callable[[_Hook], _Hook]:
    """allure-commons' hook marker; a no-op without allure (``TaskPages`` is then never registered)."""
    if allure is None:  # pragma: no cover
        return lambda function: function
    marker: Callable[[_Hook], _Hook] = allure_commons.hookimpl(**options)
    return marker


def is_internal_fixture(name: str | None) -> bool:
    """Whether an allure-pytest fixture entry (``name``, or a finalizer's ``name::<lambda>``) is the plugin's."""
    base = (name or "").split("::", 1)[0]
    return base.startswith(_INTERNAL_PREFIX) or base in _INTERNAL_NAMES


def history_id(page: TaskPage) -> str:
    """The id Allure groups results by: every repeat of a task shares it (Allure 3 shows them as retries)."""
    return hashlib.md5(page.history_key.encode("utf-8"), usedforsecurity=False).hexdigest()


def _timed(step: TimedStep) -> Any:
    """A task's setup step: what it reported is a parameter when it went well, the error when it did not."""
    passed = step.status == "passed"
    return TestStepResult(
        name=step.title,
        status=step.status,
        statusDetails=StatusDetails(message=step.message) if step.message and not passed else None,
        parameters=[Parameter(name="result", value=step.message)] if step.message and passed else [],
        start=step.start,
        stop=step.stop,
    )


def _entry(kind: Any, name: str, steps: list[Any]) -> Any:
    """One set-up entry over ``steps``: the worst status, the first problem's details, their time span."""
    statuses = {s.status for s in steps}
    status = next((s for s in _WORST_FIRST if s in statuses), "passed")
    details = next((s.statusDetails for s in steps if s.status == status and s.statusDetails), None)
    starts = [s.start for s in steps if s.start is not None]
    stops = [s.stop for s in steps if s.stop is not None]
    return kind(
        name=name,
        status=status,
        statusDetails=details,
        steps=steps,
        start=min(starts) if starts else None,
        stop=max(stops) if stops else None,
    )


def fold_fixtures(befores: list[Any]) -> Any:
    """The plugin's fixtures of one test as one set-up entry, each fixture a step with its time and status.

    In the order they were ready: pytest sets a fixture's dependencies up inside its own set-up.
    """
    steps = [
        TestStepResult(name=b.name, status=b.status, statusDetails=b.statusDetails, start=b.start, stop=b.stop)
        for b in sorted(befores, key=lambda b: (b.stop or 0, b.start or 0))
    ]
    return _entry(TestBeforeResult, FIXTURES_ENTRY, steps)


def _ms(iso: str | None) -> int | None:
    try:
        return round(datetime.fromisoformat(iso).timestamp() * 1000) if iso else None
    except ValueError:
        return None


def _service_step(name: str, use: ServiceRecord, record: TaskResult, failed: str | None) -> Any:
    """One service as the task held it: its container, image and turn as parameters."""
    held = _ms(use.held_at)
    start = held - round(use.waited_seconds * 1000) if held is not None else _ms(record.started_at)
    broken = failed == name
    return TestStepResult(
        name=f"service {name} ({use.id[:12]})",
        status="broken" if broken else "passed",
        statusDetails=StatusDetails(message=sanitize(record.message or "")) if broken else None,
        parameters=[
            Parameter(name=key, value=sanitize(value))
            for key, value in (
                ("image", use.image),
                ("exclusive", "yes" if use.exclusive else "no"),
                ("waited", f"{use.waited_seconds:.2f} s"),
                ("restarted", "yes" if use.restarted else "no"),
                ("state key", use.state_key or "-"),
            )
        ],
        start=start,
        stop=held if held is not None else start,
    )


def service_steps(record: TaskResult | None) -> list[Any]:
    """The shared services a task held, one step each; a service its ``service_error`` mask names is
    broken with the mask's message (a step of its own when the task never got to hold it)."""
    if record is None:
        return []
    failed = failed_service(record)
    used = record.services or {}
    steps = [_service_step(name, use, record, failed) for name, use in sorted(used.items())]
    if failed is not None and failed not in used:
        at = _ms(record.finished_at)
        steps.append(
            TestStepResult(
                name=f"service {failed}",
                status="broken",
                statusDetails=StatusDetails(message=sanitize(record.message or "")),
                start=at,
                stop=at,
            )
        )
    return steps


def apply_page(result: Any, page: TaskPage, folded: list[Any], record: TaskResult | None = None) -> Any:
    """Shape allure-pytest's result of a task item as the page says (and its record's services); returns
    the container of its set-up."""
    result.description = page.description
    result.descriptionHtml = page.description_html
    names = {name for name, _ in page.parameters}
    # Excluded from the history id: repeats differ in them, yet are the same test (and so are runs).
    result.parameters = [p for p in result.parameters if p.name not in names] + [
        Parameter(name=name, value=value, excluded=True) for name, value in page.parameters
    ]
    result.historyId = result.testCaseId = history_id(page)
    _apply_status(result, page)
    known = {link.url for link in result.links}
    result.links += [Link(type="link", url=url, name=name) for name, url in page.links if url not in known]
    if page.postconfig:
        result.steps.append(_entry(TestStepResult, POSTCONFIG_STEP, [_timed(s) for s in page.postconfig]))
    befores = []
    if folded:
        befores.append(fold_fixtures(folded))
    if services := service_steps(record):
        befores.append(_entry(TestBeforeResult, SERVICES_ENTRY, services))
    if page.setup:
        befores.append(_entry(TestBeforeResult, SETUP_ENTRY, [_timed(s) for s in page.setup]))
    if not befores:
        return None
    return TestResultContainer(
        uuid=str(uuid.uuid4()),
        children=[result.uuid],
        befores=befores,
        start=min((b.start for b in befores if b.start is not None), default=None),
        stop=max((b.stop for b in befores if b.stop is not None), default=None),
    )


def _apply_status(result: Any, page: TaskPage) -> None:
    status = _ALLURE_STATUS[page.status]
    if status == "passed" and result.status not in (None, "passed"):
        return  # a passed task whose teardown then broke: allure-pytest's status and trace say so
    trace = result.statusDetails.trace if result.statusDetails is not None else None
    result.status = status
    result.statusDetails = StatusDetails(message=page.message, trace=trace) if page.message or trace else None


class TaskPages:
    """An allure-commons plugin that shapes each task item's result and fixture containers before the
    file logger writes them (its hooks run first).

    Tests run one at a time in a process, so the page staged by the deciding report is the running
    item's: the containers allure-pytest reports during its teardown, and then its result, are that
    item's. A container reported later (a session fixture's) loses only its task children.
    """

    def __init__(self) -> None:
        self._pending: TaskPage | None = None
        self._record: TaskResult | None = None
        self._folded: list[Any] = []
        self._reported: set[str] = set()  # results of this process already written
        self._tasks: set[str] = set()  # ... of which task items
        self._own: set[str] = set()  # containers this plugin made

    def stage(self, page: TaskPage, record: TaskResult | None = None) -> None:
        """The running task item's page and record, once its outcome is known (before its teardown)."""
        self._pending, self._record, self._folded = page, record, []

    @_hookimpl(tryfirst=True)
    def report_container(self, container: Any) -> None:
        if container.uuid in self._own:
            return
        self._folded += hide_internal(container, self._tasks, self._reported, self._pending is not None)

    @_hookimpl(tryfirst=True)
    def report_result(self, result: Any) -> None:
        page, record, folded = self._pending, self._record, self._folded
        self._pending, self._record, self._folded = None, None, []
        self._reported.add(result.uuid)
        if page is None or result.name != page.name:
            return
        self._tasks.add(result.uuid)
        container = apply_page(result, page, folded, record)
        if container is not None:
            self._own.add(container.uuid)
            allure_commons.plugin_manager.hook.report_container(container=container)


def hide_internal(container: Any, tasks: set[str], reported: set[str], task_running: bool) -> list[Any]:
    """Tidy a fixture container for the task items it serves; returns the befores to fold into the
    running task's page (when the container is the plugin's and served only that task).

    A child not reported yet is the running test's: every earlier test of this process was reported.
    """
    running = [c for c in container.children if c not in reported] if task_running else []
    ours = [c for c in container.children if c in tasks] + running
    if not ours:
        return []
    names = [b.name for b in container.befores] + [a.name for a in container.afters]
    # allure-pytest records pytest's own post-finalizer callback as ``<fixture>::<lambda>`` and reports the
    # container from inside it: an entry that never stops, with no status, on every page. Not a teardown.
    container.afters = [a for a in container.afters if a.status is not None or a.stop is not None]
    if not names or not all(is_internal_fixture(n) for n in names):
        return []
    only_running = bool(running) and len(container.children) == len(running)
    container.children = [c for c in container.children if c not in ours]
    return list(container.befores) if only_running else []


def register(pages: TaskPages) -> Callable[[], None]:
    """Register ``pages`` with allure-commons; returns the function that unregisters it."""
    allure_commons.plugin_manager.register(pages)

    def unregister() -> None:
        if allure_commons.plugin_manager.is_registered(pages):
            allure_commons.plugin_manager.unregister(pages)

    return unregister
