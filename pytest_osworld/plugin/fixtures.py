"""Fixtures of pytest-osworld. Task items use them; so can a user's own tests, and a conftest may
override any of them (e.g. ``osworld_runner`` to plug an agent in without a runner plugin).

The order of ``osworld_episode``'s arguments matters: the runner is made before the sandbox starts,
so a task the runner cannot play is skipped without paying for a sandbox.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_osworld.agents import Runner, RunnerContext, RunnerUnavailable, make_runner
from pytest_osworld.agents.endpoint import make_model_client
from pytest_osworld.episode import Episode
from pytest_osworld.models import ModelClient
from pytest_osworld.plugin import live
from pytest_osworld.plugin.items import TaskItem
from pytest_osworld.plugin.outcomes import end_test
from pytest_osworld.plugin.run import OsworldRun, get_run
from pytest_osworld.record import TaskResult
from pytest_osworld.results.recorder import EpisodeRecorder
from pytest_osworld.sandbox.base import Sandbox
from pytest_osworld.services.access import PlaceholderError, with_services
from pytest_osworld.services.pool import TaskServices
from pytest_osworld.settings import Settings
from pytest_osworld.tasks.markers import task_markers
from pytest_osworld.tasks.readers import TaskEntry


class TestedEpisode(Episode):
    """An episode as a task item runs it: run to its end, then judged by the outcome table."""

    __test__ = False  # a project class, not a test class for pytest to collect

    def run_and_judge(self) -> TaskResult:
        result = self.run()
        end_test(result)
        return result


def _task_item(request: pytest.FixtureRequest, fixture: str) -> TaskItem:
    if not isinstance(request.node, TaskItem):
        pytest.fail(f"{fixture} is only available to OSWorld task items", pytrace=False)
    return request.node


@pytest.fixture(scope="session")
def osworld_run(pytestconfig: pytest.Config) -> OsworldRun:
    return get_run(pytestconfig)


@pytest.fixture(scope="session")
def osworld_settings(osworld_run: OsworldRun) -> Settings:
    return osworld_run.settings


@pytest.fixture
def osworld_entry(request: pytest.FixtureRequest, osworld_task_services: TaskServices | None) -> TaskEntry:
    """The task of the running task item; with shared services, its service placeholders filled
    (``{SERVICE_URL:name}``, ``{SERVICE_KEY:name}``: docs/services.md)."""
    entry = _task_item(request, "osworld_entry").entry
    if osworld_task_services is None:
        return entry
    try:
        return with_services(entry, osworld_task_services.access)
    except PlaceholderError as exc:
        pytest.fail(f"{entry.origin}: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def osworld_model(osworld_settings: Settings) -> Iterator[ModelClient | None]:
    """The model endpoint client of this process (None without ``--osworld-model-url``).

    The endpoint itself was checked once at session start, before any sandbox.
    """
    client = make_model_client(osworld_settings)
    try:
        yield client
    finally:
        if client is not None:
            client.close()


@pytest.fixture
def osworld_runner(
    osworld_entry: TaskEntry, osworld_settings: Settings, osworld_model: ModelClient | None
) -> Iterator[Runner]:
    """The agent of this episode; a task it cannot play is skipped here, before any sandbox starts."""
    settings = osworld_settings.for_task(osworld_entry.id)
    name = settings.runner_name
    if name is None:
        pytest.fail("no runner chosen: set --osworld-agent", pytrace=False)
    try:
        runner = make_runner(name, RunnerContext(entry=osworld_entry, settings=settings, model=osworld_model))
    except RunnerUnavailable as exc:
        pytest.skip(f"{name} runner: {exc}")
    try:
        yield runner
    finally:
        runner.close()


@pytest.fixture
def osworld_episode(
    request: pytest.FixtureRequest,
    osworld_run: OsworldRun,
    osworld_entry: TaskEntry,
    osworld_runner: Runner,
    osworld_recorder: EpisodeRecorder,
    osworld_task_services: TaskServices | None,
    osworld_sandbox: Sandbox,
    osworld_model: ModelClient | None,
) -> Iterator[TestedEpisode]:
    """One episode of the item's task: its sandbox, runner and recorder, ready to run.

    With shared services, its record names them, and one that died during the task masks it.
    """
    settings = osworld_run.settings.for_task(osworld_entry.id)
    with tempfile.TemporaryDirectory(prefix="osworld-task-") as cache:
        episode = TestedEpisode.build(
            entry=osworld_entry,
            settings=settings,
            run_id=osworld_run.run_id,
            repeat=_task_item(request, "osworld_episode").repeat,
            sandbox=osworld_sandbox,
            runner=osworld_runner,
            recorder=osworld_recorder,
            model=osworld_model.describe() if osworld_model is not None else None,
            # The collected task's markers: its filled copy names service hosts, not internet sites.
            markers=task_markers(_task_item(request, "osworld_episode").entry.task, osworld_entry.domain),
            worker=osworld_run.worker_id,
            cache_dir=Path(cache),
        )
        if osworld_task_services is not None:
            episode.result.services = dict(osworld_task_services.records)
            episode.context.services = dict(osworld_task_services.access)
            episode.service_check = osworld_task_services.problem
        live.attach(request.config, _task_item(request, "osworld_episode").run_key, episode)  # --osworld-live
        yield episode
