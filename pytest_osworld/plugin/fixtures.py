"""Fixtures of pytest-osworld. Task items use them, v1's and OSWorld-V2's alike; so can a user's own
tests, and a conftest may override any of them (e.g. ``osworld_runner`` to plug an agent in without a
runner plugin).

What differs between a v1 and a V2 task item, the fixtures take from the item (``OsworldItem``:
its services, settings, task, the episode's class and what it adds to it). A V2 item first goes through
``osworld_v2_loaded`` (plugin/v2.py): its task file imported under the task API, with the masks known
before any sandbox (a dead judge, a service down, a file that does not load).

The order of ``osworld_episode``'s arguments matters: the runner is made before the sandbox starts,
so a task the runner cannot play is skipped without paying for a sandbox.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_osworld.agents import Runner, RunnerUnavailable, make_runner
from pytest_osworld.agents.endpoint import make_model_client
from pytest_osworld.models import ModelClient
from pytest_osworld.plugin import live
from pytest_osworld.plugin.items import OsworldItem
from pytest_osworld.plugin.outcomes import TestedEpisode
from pytest_osworld.plugin.run import OsworldRun, get_run
from pytest_osworld.plugin.v2 import V2Loaded, load_v2_task
from pytest_osworld.results.recorder import EpisodeRecorder
from pytest_osworld.sandbox.base import Sandbox
from pytest_osworld.services.pool import TaskServices
from pytest_osworld.settings import Settings
from pytest_osworld.tasks.readers import TaskEntry
from pytest_osworld.v2.llm.judge import Judge

__all__ = ["TestedEpisode"]  # where a conftest that overrides osworld_episode finds it


def _task_item(request: pytest.FixtureRequest, fixture: str) -> OsworldItem:
    if not isinstance(request.node, OsworldItem):
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
    (``{SERVICE_URL:name}``, ``{SERVICE_KEY:name}``: docs/services.md). A V2 task's is its loaded
    task's (its instruction as it runs, its solution)."""
    return _task_item(request, "osworld_entry").episode_entry(request, osworld_task_services)


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
    request: pytest.FixtureRequest,
    osworld_entry: TaskEntry,
    osworld_settings: Settings,
    osworld_model: ModelClient | None,
) -> Iterator[Runner]:
    """The agent of this episode; a task it cannot play is skipped here, before any sandbox starts."""
    item = _task_item(request, "osworld_runner")
    settings = item.task_settings(osworld_settings)
    name = settings.runner_name
    if name is None:
        pytest.fail(item.no_runner, pytrace=False)
    try:
        runner = make_runner(name, item.runner_context(request, osworld_entry, settings, osworld_model))
    except RunnerUnavailable as exc:
        pytest.skip(f"{name} runner: {exc}")
    try:
        yield runner
    finally:
        runner.close()


@pytest.fixture
def osworld_v2_loaded(
    request: pytest.FixtureRequest,
    osworld_run: OsworldRun,
    osworld_recorder: EpisodeRecorder,
    osworld_judge: Judge | None,
) -> Iterator[V2Loaded]:
    """An OSWorld-V2 item's task file imported under the task API, its services held first
    (``osworld_task_services``); masked before any sandbox when the judge it needs failed its
    preflight (``judge_error``), a service is down (``service_error``) or the file does not load
    (``setup_error``). The module is unloaded at the end."""
    with load_v2_task(request, osworld_run, osworld_recorder, osworld_judge) as loaded:
        yield loaded


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
    item = _task_item(request, "osworld_episode")
    settings = item.task_settings(osworld_run.settings)
    with tempfile.TemporaryDirectory(prefix=item.cache_prefix) as cache:
        episode = item.episode_class().build(
            entry=osworld_entry,
            settings=settings,
            run_id=osworld_run.run_id,
            repeat=item.repeat,
            sandbox=osworld_sandbox,
            runner=osworld_runner,
            recorder=osworld_recorder,
            model=osworld_model.describe() if osworld_model is not None else None,
            markers=item.record_markers(),
            worker=osworld_run.worker_id,
            cache_dir=Path(cache),
        )
        item.prepare_episode(request, episode)
        if osworld_task_services is not None:
            episode.result.services = dict(osworld_task_services.records)
            episode.context.services = dict(osworld_task_services.access)
            episode.service_check = osworld_task_services.problem
        live.attach(request.config, _task_item(request, "osworld_episode").run_key, episode)  # --osworld-live
        yield episode
