"""Collection: task inputs become ``TaskFile`` collectors that yield one ``TaskItem`` per task; ``OsworldItem``
is the base of v1's and OSWorld-V2's items.

A ``TaskItem`` is a ``pytest.Function`` over :func:`osworld_task`, so fixtures, ``-k``, ``-m``, ``--lf``,
xdist and the report plugins all treat it as an ordinary test.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar, Protocol

import pytest

from pytest_osworld.agents import RunnerContext
from pytest_osworld.episode import Episode
from pytest_osworld.errors import OsworldError, TaskInputErrors
from pytest_osworld.models import ModelClient
from pytest_osworld.plugin.outcomes import OutcomeError, TestedEpisode
from pytest_osworld.plugin.run import get_run, register_domain_marker
from pytest_osworld.record import ServiceRecord, TaskResult
from pytest_osworld.services import defined, required
from pytest_osworld.services.access import PlaceholderError, with_services
from pytest_osworld.services.pool import TaskServices
from pytest_osworld.settings import Settings
from pytest_osworld.tasks.markers import task_markers
from pytest_osworld.tasks.readers import TaskEntry, looks_like_split, looks_like_task_jsonl, read_input
from pytest_osworld.v2.reading.splits import is_v2_split


def is_task_input(file_path: Path, explicitly_given: bool) -> bool:
    """Whether pytest should collect this file as a (v1) task input; V2 inputs are plugin/v2.py's."""
    if file_path.suffix == ".jsonl":
        return explicitly_given or looks_like_task_jsonl(file_path)
    if file_path.suffix == ".json":
        # A V2 split may sit beside examples/ too (upstream's evaluation_examples holds both versions).
        return (explicitly_given or looks_like_split(file_path)) and not is_v2_split(file_path)
    return False


def names_task_inputs(paths: Iterable[Path]) -> bool:
    """Whether any of these command-line paths is, or holds, a task input."""
    for path in paths:
        if path.is_file() and is_task_input(path, explicitly_given=True):
            return True
        if path.is_dir():
            candidates = [*path.rglob("*.jsonl"), *path.rglob("test_*.json")]
            if any(is_task_input(c, explicitly_given=False) for c in candidates):
                return True
    return False


class TaskFile(pytest.File):
    """A JSONL task file or an upstream split file."""

    def collect(self) -> Iterator[TaskItem]:
        run = get_run(self.config)
        try:
            entries = read_input(self.path)
            run.register(entries, self.path)
        except TaskInputErrors as exc:
            raise self.CollectError(str(exc)) from None
        for entry in entries:
            register_domain_marker(self.config, entry.domain)
            for repeat in range(1, run.settings.tasks.repeat + 1):
                item = TaskItem.from_entry(self, entry, repeat, run.settings.tasks.repeat)
                if run.settings.tasks.app_keywords:
                    item.extra_keyword_matches.update(entry.task.related_apps)
                yield item


def _split_origin(origin: str) -> tuple[Path, int | None]:
    """``file:line`` (a JSONL line) or ``file`` (an example file) -> the path and a 0-based line."""
    head, _, tail = origin.rpartition(":")
    if head and tail.isdigit():
        return Path(head), int(tail) - 1
    return Path(origin), None


class OsworldItem(pytest.Function):
    """One episode of one task (and one repeat of it): the base of v1's :class:`TaskItem` and
    OSWorld-V2's ``V2TaskItem`` (plugin/v2.py).

    The fixtures of an episode (plugin/fixtures.py, sandbox.py, services.py, results.py) take what
    differs between the two from the item: its services, its settings, its task as the runner sees it,
    the episode's class and what it adds to the episode.
    """

    entry: TaskEntry
    repeat: int
    # The episode's record once it is written (the outcome hooks read it when the report is made).
    osworld_result: TaskResult | None = None
    # The shared services the item held, for a record the plugin writes when a fixture masked it.
    osworld_services: dict[str, ServiceRecord] | None = None
    # What a run without a runner is told (a task item that gets to run without one fails with it).
    no_runner: ClassVar[str] = "no runner chosen: set --osworld-agent"
    cache_prefix: ClassVar[str] = "osworld-task-"  # the episode's cache folder

    @property
    def task_key(self) -> str:
        """``domain/task_id``: the task's key in a run."""
        return self.entry.key

    @property
    def run_key(self) -> str:
        """``domain/task_id`` or ``domain/task_id#r2``: where this item's result lives in a run."""
        return self.task_key if self.repeat == 1 else f"{self.task_key}#r{self.repeat}"

    def keep_result(self, result: TaskResult) -> None:
        self.osworld_result = result

    def repr_failure(  # type: ignore[override]  # pytest's own signature adds a style argument
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> Any:
        # The project's own errors are messages for the user; a traceback into the plugin would hide them.
        if isinstance(excinfo.value, OutcomeError | OsworldError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    # --- what the episode's fixtures take from the item

    def service_names(self, settings: Settings) -> list[str]:
        """The shared services the task holds for its whole episode."""
        raise NotImplementedError

    def task_settings(self, settings: Settings) -> Settings:
        """The run's settings for this task (its per-task overrides applied)."""
        raise NotImplementedError

    def episode_entry(self, request: pytest.FixtureRequest, services: TaskServices | None) -> TaskEntry:
        """The task as its runner and its record see it."""
        raise NotImplementedError

    def runner_context(
        self, request: pytest.FixtureRequest, entry: TaskEntry, settings: Settings, model: ModelClient | None
    ) -> RunnerContext:
        return RunnerContext(entry=entry, settings=settings, model=model)

    def record_markers(self) -> list[str]:
        """The markers the episode's record names."""
        raise NotImplementedError

    def episode_class(self) -> type[TestedEpisode]:
        raise NotImplementedError

    def prepare_episode(self, request: pytest.FixtureRequest, episode: Episode) -> None:
        """What the item adds to its built episode before it runs (nothing for a v1 task)."""


class TaskItem(OsworldItem):
    """One episode of one (v1) task (and one repeat of it)."""

    @classmethod
    def from_entry(cls, parent: TaskFile, entry: TaskEntry, repeat: int, repeats: int) -> TaskItem:
        name = entry.key if repeats == 1 else f"{entry.key}[r{repeat}]"
        # The whole name is the original name: pytest 9.1+ builds a node id from ``originalname`` and the
        # parametrization, so ``[rN]`` given only in ``name`` would make every repeat the same node id.
        item: TaskItem = cls.from_parent(parent, name=name, callobj=osworld_task, originalname=name)
        item.entry = entry
        item.repeat = repeat
        for marker in task_markers(entry.task, entry.domain):
            item.add_marker(marker)
        # Related apps select with -m "app(name='chrome')": as -k keywords (only with app_keywords) they
        # would make -k chrome match every multi-app task that touches Chrome, not the chrome domain.
        for app in dict.fromkeys(entry.task.related_apps):
            item.add_marker(pytest.mark.app(name=app))
        for service in entry.task.needed_services:
            item.add_marker(pytest.mark.service(name=service))
        return item

    def reportinfo(self) -> tuple[Path, int, str]:
        # pytest needs a line for skip reports: an example file's task starts at its first line.
        path, line = _split_origin(self.entry.origin)
        return path, line or 0, self.name

    def service_names(self, settings: Settings) -> list[str]:
        return required(self.entry.task, defined(settings), proxy=settings.services.proxy)

    def task_settings(self, settings: Settings) -> Settings:
        return settings.for_task(self.entry.id)

    def episode_entry(self, request: pytest.FixtureRequest, services: TaskServices | None) -> TaskEntry:
        """With shared services, the task's service placeholders filled (``{SERVICE_URL:name}``,
        ``{SERVICE_KEY:name}``: docs/services.md)."""
        if services is None:
            return self.entry
        try:
            return with_services(self.entry, services.access)
        except PlaceholderError as exc:
            pytest.fail(f"{self.entry.origin}: {exc}", pytrace=False)

    def record_markers(self) -> list[str]:
        # The collected task's markers: its filled copy names service hosts, not internet sites.
        return task_markers(self.entry.task, self.entry.domain)

    def episode_class(self) -> type[TestedEpisode]:
        return TestedEpisode


class _Judged(Protocol):
    def run_and_judge(self) -> object: ...


def osworld_task(request: pytest.FixtureRequest, osworld_episode: _Judged) -> None:
    """The test function of every task item: one episode, judged by the outcome table.

    ``osworld_episode`` is anything with ``run_and_judge()`` (a conftest may override the fixture).
    """
    osworld_episode.run_and_judge()
