"""OSWorld-V2 collection: a split or a task file becomes a ``V2TaskFile`` yielding ``V2TaskItem``s.

The files are read statically (:mod:`pytest_osworld.v2.reading.task_file`), pinned before anything runs
(:mod:`pytest_osworld.v2.reading.pins`), and marked (:mod:`pytest_osworld.v2.reading.markers`), so
``--collect-only``, ``-k`` and ``-m`` work on them. :func:`skip_reason` skips, before any sandbox, what
cannot run here (a service the run does not define); :func:`osworld_v2_task` runs the rest through the
same fixtures as a v1 item (plugin/fixtures.py): first ``osworld_v2_loaded`` (:func:`load_v2_task`: the
task's services held, its file imported with the task API in place, :mod:`pytest_osworld.v2.api.loader`),
then its runner, its sandbox on the services' network and a
:class:`~pytest_osworld.v2.episode.V2Episode` (``osworld_episode``, with what :class:`V2TaskItem` adds).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NoReturn

import pytest

from pytest_osworld.agents import RunnerContext
from pytest_osworld.episode import Episode
from pytest_osworld.errors import TaskInputErrors
from pytest_osworld.models import ModelClient
from pytest_osworld.plugin.items import OsworldItem
from pytest_osworld.plugin.judge import dead_judge
from pytest_osworld.plugin.outcomes import TestedEpisode, end_test
from pytest_osworld.plugin.run import OsworldRun, get_run, given_paths
from pytest_osworld.record import LoopRecord, ServiceRecord, TaskResult, Termination
from pytest_osworld.results.recorder import EpisodeRecorder
from pytest_osworld.services import defined, undefined_reason
from pytest_osworld.services.access import ServiceAccess
from pytest_osworld.services.pool import ServiceError, TaskServices
from pytest_osworld.settings import Settings
from pytest_osworld.tasks.model import Task
from pytest_osworld.tasks.readers import TaskEntry
from pytest_osworld.v2.api.assets import BASE_ENV
from pytest_osworld.v2.api.loader import ApiMode, TaskLoadError, checkout_environment, load_task, unload
from pytest_osworld.v2.api.state import TaskRuntime, active
from pytest_osworld.v2.episode import Phase, V2Episode
from pytest_osworld.v2.llm.judge import Judge
from pytest_osworld.v2.reading.markers import v2_markers
from pytest_osworld.v2.reading.pins import PinError
from pytest_osworld.v2.reading.splits import has_split_beside, is_v2_split, read_input
from pytest_osworld.v2.reading.task_file import TASK_FOLDER, V2Task, is_task_file_name

V2_IMAGE_PASSWORD = "osworld-public-evaluation"  # the guest user's password in OSWorld-V2's VM image
CONTROL_WORDS = ("DONE", "FAIL")
NO_RUNNER = "no runner chosen: set --osworld-agent (oracle plays a task's solution; null does nothing)"
NO_SOLUTION = "oracle runner: task has no reference solution (its class sets no solution list)"


def is_v2_input(file_path: Path, config: pytest.Config) -> bool:
    """Whether pytest should collect this file as an OSWorld-V2 input.

    A ``.py`` is taken only when given by name as ``task_*.py``, or met as ``task_*.py`` inside a
    ``task_class/`` folder (unless a split beside that folder collects the same tasks, and the walk did
    not start inside the folder). A ``.json`` is a V2 split beside a ``task_class/`` folder; met while
    walking, only ``test_*.json`` (capability splits beside it are read for markers, not collected).
    """
    resolved = file_path.resolve()
    given = given_paths(config)
    if file_path.suffix == ".json":
        return (resolved in given or file_path.name.startswith("test_")) and is_v2_split(file_path)
    if not is_task_file_name(file_path):
        return False
    if resolved in given:
        return True
    folder = resolved.parent
    if folder.name != TASK_FOLDER:
        return False
    walked_inside = any(p == folder or folder in p.parents for p in given)
    return walked_inside or not has_split_beside(folder)


class V2TaskFile(pytest.File):
    """A V2 split file or one V2 task file."""

    def collect(self) -> Iterator[V2TaskItem]:
        run = get_run(self.config)
        try:
            tasks = read_input(self.path)
            _check_pins(self.config, tasks)
            run.register_v2(tasks, self.path)
        except (TaskInputErrors, PinError) as exc:
            raise self.CollectError(str(exc)) from None
        repeats = run.settings.tasks.repeat
        for task in tasks:
            for repeat in range(1, repeats + 1):
                yield V2TaskItem.from_task(self, task, repeat, repeats)


def _check_pins(config: pytest.Config, tasks: list[V2Task]) -> None:
    """Before any item exists (so before any sandbox): every task file matches its pin."""
    pins = get_run(config).v2_pins
    if pins is None:
        return
    problems = [p for p in (pins.problem(t.file) for t in tasks) if p]
    if problems:
        raise PinError("\n".join(problems))


class V2TaskItem(OsworldItem):
    """One OSWorld-V2 task (and one repeat of it), named ``v2/<id>`` as v1 items are ``<domain>/<id>``.

    Its ``entry`` is the task as the reports show it before it runs (its statically read fields); the
    episode's fixtures go through ``osworld_v2_loaded`` for the task as it runs (:func:`load_v2_task`).
    """

    task: V2Task
    no_runner: ClassVar[str] = NO_RUNNER
    cache_prefix: ClassVar[str] = "osworld-v2-task-"

    @classmethod
    def from_task(cls, parent: V2TaskFile, task: V2Task, repeat: int, repeats: int) -> V2TaskItem:
        name = task.key if repeats == 1 else f"{task.key}[r{repeat}]"
        item: V2TaskItem = cls.from_parent(parent, name=name, callobj=osworld_v2_task, originalname=name)
        item.task = task
        item.repeat = repeat
        item.entry = static_entry(task)
        for marker, kwargs in v2_markers(task):
            item.add_marker(getattr(pytest.mark, marker)(**kwargs))
        return item

    @property
    def task_key(self) -> str:
        return self.task.key

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.task.file, self.task.line - 1, self.name

    def service_names(self, settings: Settings) -> list[str]:
        return needed_services(self.task, settings)

    def task_settings(self, settings: Settings) -> Settings:
        return v2_settings(settings, self.task.id)

    def loaded(self, request: pytest.FixtureRequest) -> V2Loaded:
        loaded: V2Loaded = request.getfixturevalue("osworld_v2_loaded")
        return loaded

    def episode_entry(self, request: pytest.FixtureRequest, services: TaskServices | None) -> TaskEntry:
        return self.loaded(request).entry

    def runner_context(
        self, request: pytest.FixtureRequest, entry: TaskEntry, settings: Settings, model: ModelClient | None
    ) -> RunnerContext:
        asks_user = bool(self.loaded(request).task.get("user_simulator"))
        return RunnerContext(entry=entry, settings=settings, model=model, asks_user=asks_user)

    def record_markers(self) -> list[str]:
        return [marker for marker, _ in v2_markers(self.task)]

    def episode_class(self) -> type[TestedEpisode]:
        return TestedV2Episode

    def prepare_episode(self, request: pytest.FixtureRequest, episode: Episode) -> None:
        assert isinstance(episode, V2Episode)
        loaded = self.loaded(request)
        episode.configure(
            task=loaded.task,
            mode=loaded.mode,
            runtime=loaded.runtime,
            judge=loaded.judge,
            phases=loaded.phases,
            enable_proxy="proxy" in loaded.access,
        )


class TestedV2Episode(V2Episode, TestedEpisode):
    """A V2 episode as a task item runs it: run to its end, then judged by the outcome table."""

    __test__ = False


def needed_services(task: V2Task, settings: Settings) -> list[str]:
    """The services a V2 task holds here: those it uses, and ``proxy`` for ``proxy = True`` only when the
    run enables the proxy and defines one (as for v1 tasks)."""
    names = [s for s in task.services if s != "proxy"]
    if task.proxy and settings.services.proxy and "proxy" in defined(settings):
        names.append("proxy")
    return names


def skip_reason(task: V2Task, settings: Settings) -> str | None:
    """Why a V2 task cannot run here, known before any sandbox starts (the hooks skip it with this)."""
    reason = undefined_reason(needed_services(task, settings), defined(settings))
    if reason:
        return f"unsupported here: {reason}"
    disk = disk_problem(task, settings)
    if disk:
        return f"unsupported here: {disk}"
    if settings.runner_name is None:
        return NO_RUNNER
    # Only a class that sets none: a solution that did not resolve statically is known at import.
    if settings.runner_name == "oracle" and not task.multi_phase and task.fields.get("solution") is None:
        return NO_SOLUTION
    return None


def disk_problem(task: V2Task, settings: Settings) -> str | None:
    """A ``volume_size`` (GB) larger than the sandbox's disk: only OSWorld's VM has a fixed one here
    (``upstream_vm_disk_size``); a container's disk is its engine's."""
    wanted = task.fields.get("volume_size")
    if settings.sandbox.name != "osworld-vm" or not isinstance(wanted, int | float) or isinstance(wanted, bool):
        return None
    size = settings.vm.upstream_disk_size.strip().upper().removesuffix("B").removesuffix("G")
    if not size.isdigit() or int(size) >= wanted:
        return None
    return (
        f"the task needs a {wanted:g} GB disk (volume_size) and the osworld-vm sandbox gives "
        f"{settings.vm.upstream_disk_size}; set upstream_vm_disk_size to {wanted:g}G or more"
    )


def v2_settings(settings: Settings, task_id: str) -> Settings:
    """The task's settings; OSWorld-V2's guest password when the sandbox runs its VM image."""
    settings = settings.for_task(task_id)
    if settings.sandbox.v2_image:
        return settings.replace(client_password=V2_IMAGE_PASSWORD)
    return settings


def _phases(task: Any) -> list[Phase] | None:
    get_phases = getattr(task, "get_phases", None)
    if not callable(get_phases):
        return None
    raw = get_phases()
    if not isinstance(raw, list) or not raw:
        raise TaskLoadError(f"task {task.get('id')}: get_phases() gave no list of phases")
    return [Phase.from_dict(p, n, str(task.get("id"))) for n, p in enumerate(raw, 1)]


def _solution(task: Any) -> list[Any] | None:
    """The oracle's actions: the class's ``solution``, or each phase's, each ending in DONE."""
    get_phases = getattr(task, "get_phases", None)
    if callable(get_phases):
        actions: list[Any] = []
        for phase in get_phases():
            steps = list(phase.get("solution") or []) if isinstance(phase, dict) else []
            if not steps:
                return None
            ends = isinstance(steps[-1], str) and steps[-1].strip() in CONTROL_WORDS
            actions += steps if ends else [*steps, "DONE"]
        return actions
    solution = getattr(task, "solution", None)
    return list(solution) if solution else None


def static_entry(v2: V2Task) -> TaskEntry:
    """The task as read from its file (an unresolved instruction shown as its ``<unresolved: ...>`` text)."""
    data = {
        "id": v2.id,
        "instruction": str(v2.instruction),
        "evaluator": {"func": "evaluate"},
        "related_apps": v2.related_apps,
        "solution": v2.solution,
        "domain": v2.domain,
    }
    return TaskEntry(task=Task.model_validate(data), domain=v2.domain, origin=v2.origin)


def task_entry(v2: V2Task, task: Any) -> TaskEntry:
    """The loaded task as the runner and the record see it (its instruction as it ran, its solution)."""
    data = {
        "id": v2.id,
        "instruction": str(task.get("instruction") or ""),
        "evaluator": {"func": "evaluate"},
        "related_apps": v2.related_apps,
        "solution": _solution(task),
        "domain": v2.domain,
    }
    return TaskEntry(task=Task.model_validate(data), domain=v2.domain, origin=v2.origin)


def _masked_record(run: OsworldRun, item: V2TaskItem, termination: Termination, message: str) -> TaskResult:
    return TaskResult(
        run_id=run.run_id,
        task_id=item.task.id,
        domain=item.task.domain,
        repeat=item.repeat,
        termination=termination,
        message=message,
        related_apps=item.task.related_apps,
        markers=item.record_markers(),
        worker=run.worker_id,
        loop=LoopRecord.model_validate(run.settings.loop_record()),
    )


@dataclass(frozen=True)
class V2Loaded:
    """A V2 item's task as it runs: the task instance from its file, its phases, its entry for the
    runner and the record, the runtime and API mode it runs in, its services' access, the judge."""

    task: Any
    phases: list[Phase] | None
    entry: TaskEntry
    runtime: TaskRuntime
    mode: ApiMode
    access: dict[str, ServiceAccess]
    judge: Judge | None


def _mask(
    run: OsworldRun,
    item: V2TaskItem,
    recorder: EpisodeRecorder,
    termination: Termination,
    message: str,
    services: dict[str, ServiceRecord] | None = None,
) -> NoReturn:
    result = _masked_record(run, item, termination, message)
    if services is not None:
        result.services = services
    recorder.finish(result)
    end_test(result)
    raise AssertionError("end_test returns only for a score of 1")  # pragma: no cover - a mask always raises


@contextlib.contextmanager
def load_v2_task(
    request: pytest.FixtureRequest, run: OsworldRun, recorder: EpisodeRecorder, judge: Judge | None
) -> Iterator[V2Loaded]:
    """The ``osworld_v2_loaded`` fixture's work: the item's services held (``osworld_task_services``),
    then its file imported with the task API in place; each mask known before a sandbox is recorded
    and ends the test (a dead judge before its services, a service down, a file that does not load).
    The task's module is unloaded after the block."""
    item = request.node
    if not isinstance(item, V2TaskItem):
        pytest.fail("osworld_v2_loaded is only available to OSWorld-V2 task items", pytrace=False)
    settings = item.task_settings(run.settings)
    if settings.runner_name is None:  # skipped before it runs (skip_reason); a conftest's own item may still get here
        pytest.fail(NO_RUNNER, pytrace=False)
    dead = dead_judge(item)
    if dead is not None:  # masked before its services or sandbox start: nothing could score it
        _mask(run, item, recorder, Termination.JUDGE_ERROR, dead)
    try:
        held: TaskServices | None = request.getfixturevalue("osworld_task_services")
    except ServiceError as exc:
        _mask(run, item, recorder, Termination.SERVICE_ERROR, str(exc), services=item.osworld_services or {})
    access = dict(held.access) if held is not None else {}
    file_base = os.environ.get(BASE_ENV)
    runtime = TaskRuntime(item.task.id, services=access, file_base=file_base)
    mode = ApiMode(settings.tasks.v2_code, checkout_environment(access, file_base) if settings.tasks.v2_code else None)
    try:
        with active(runtime), mode.api(loading=True):
            _, task = load_task(item.task.file, item.task.id)
            phases = _phases(task)
            entry = task_entry(item.task, task)
    except (TaskLoadError, ValueError) as exc:
        unload(item.task.id)
        _mask(run, item, recorder, Termination.SETUP_ERROR, str(exc))
    try:
        yield V2Loaded(task, phases, entry, runtime, mode, access, judge)
    finally:
        unload(item.task.id)


def osworld_v2_task(osworld_v2_loaded: V2Loaded, osworld_episode: TestedEpisode) -> None:
    """The test function of every V2 item: its task loaded first (``osworld_v2_loaded``: the masks
    known before any sandbox), then the same episode fixtures as a v1 item's (runner before sandbox),
    judged by the outcome table."""
    osworld_episode.run_and_judge()
