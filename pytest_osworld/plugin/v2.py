"""OSWorld-V2 collection: a split or a task file becomes a ``V2TaskFile`` yielding ``V2TaskItem``s.

The files are read statically (:mod:`pytest_osworld.tasks.v2.task_file`), pinned before anything runs
(:mod:`pytest_osworld.tasks.v2.pins`), and marked (:mod:`pytest_osworld.tasks.v2.markers`), so
``--collect-only``, ``-k`` and ``-m`` work on them. :func:`skip_reason` skips, before any sandbox, what
cannot run here (a service the run does not define); :func:`osworld_v2_task` runs the rest: it holds the
task's services, imports its file with the task API in place (:mod:`pytest_osworld.v2.runtime.loader`),
makes its runner, starts its sandbox and runs a :class:`~pytest_osworld.v2.episode.V2Episode`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.agents import RunnerContext, RunnerUnavailable, make_runner
from pytest_osworld.errors import OsworldError, TaskInputErrors
from pytest_osworld.models import ModelClient
from pytest_osworld.plugin import live
from pytest_osworld.plugin.judge import dead_judge
from pytest_osworld.plugin.outcomes import OutcomeError, end_test
from pytest_osworld.plugin.run import OsworldRun, get_run, given_paths
from pytest_osworld.plugin.sandbox import end_sandbox
from pytest_osworld.record import LoopRecord, ServiceRecord, TaskResult, Termination
from pytest_osworld.results.recorder import EpisodeRecorder
from pytest_osworld.results.store import RunStore
from pytest_osworld.sandbox.base import SandboxProvider
from pytest_osworld.services import defined, undefined_reason
from pytest_osworld.services.access import ServiceAccess
from pytest_osworld.services.pool import ServiceError, ServicePool
from pytest_osworld.settings import Settings
from pytest_osworld.tasks.model import Task
from pytest_osworld.tasks.readers import TaskEntry
from pytest_osworld.tasks.v2.markers import v2_markers
from pytest_osworld.tasks.v2.pins import PinError
from pytest_osworld.tasks.v2.task_file import (
    TASK_FOLDER,
    V2Task,
    has_split_beside,
    is_task_file_name,
    is_v2_split,
    read_input,
)
from pytest_osworld.v2.episode import Phase, V2Episode
from pytest_osworld.v2.judge import Judge
from pytest_osworld.v2.runtime.desktop_env.file_source import BASE_ENV
from pytest_osworld.v2.runtime.loader import ApiMode, TaskLoadError, checkout_environment, load_task, unload
from pytest_osworld.v2.runtime.state import TaskRuntime, active

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


class V2TaskItem(pytest.Function):
    """One OSWorld-V2 task (and one repeat of it), named ``v2/<id>`` as v1 items are ``<domain>/<id>``."""

    task: V2Task
    repeat: int
    # The task as the reports show it before it runs (its statically read fields), as a v1 item's entry.
    entry: TaskEntry
    # The episode's record once it is written, and the services it held (for a record the plugin writes).
    osworld_result: TaskResult | None = None
    osworld_services: dict[str, ServiceRecord] | None = None

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
    def run_key(self) -> str:
        return self.task.key if self.repeat == 1 else f"{self.task.key}#r{self.repeat}"

    def keep_result(self, result: TaskResult) -> None:
        self.osworld_result = result

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.task.file, self.task.line - 1, self.name

    def repr_failure(  # type: ignore[override]  # pytest's own signature adds a style argument
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> Any:
        if isinstance(excinfo.value, OutcomeError | OsworldError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


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
        markers=[marker for marker, _ in v2_markers(item.task)],
        worker=run.worker_id,
        loop=LoopRecord.model_validate(run.settings.loop_record()),
    )


def osworld_v2_task(
    request: pytest.FixtureRequest,
    osworld_run: OsworldRun,
    osworld_store: RunStore,
    osworld_judge: Judge | None,
    osworld_model: ModelClient | None,
    osworld_sandbox_provider: SandboxProvider,
) -> None:
    """The test function of every V2 item: the task's services, its file imported, its runner, its
    sandbox and its episode, judged by the outcome table."""
    item = request.node
    assert isinstance(item, V2TaskItem)
    settings = v2_settings(osworld_run.settings, item.task.id)
    name = settings.runner_name
    if name is None:  # skipped before it runs (skip_reason); a conftest's own item may still get here
        pytest.fail(NO_RUNNER, pytrace=False)
    recorder = EpisodeRecorder(osworld_store, item.run_key, item.keep_result)
    dead = dead_judge(item)
    if dead is not None:  # masked before its services or sandbox start: nothing could score it
        result = _masked_record(osworld_run, item, Termination.JUDGE_ERROR, dead)
        recorder.finish(result)
        end_test(result)
        return
    names = needed_services(item.task, settings)
    records: dict[str, ServiceRecord] = {}
    item.osworld_services = records if names else None
    with contextlib.ExitStack() as stack:
        access: dict[str, ServiceAccess] = {}
        network: str | None = None
        if names:
            pool: ServicePool = request.getfixturevalue("osworld_services")
            try:
                held = stack.enter_context(pool.for_task(names, item.run_key, records=records))
            except ServiceError as exc:
                result = _masked_record(osworld_run, item, Termination.SERVICE_ERROR, str(exc))
                result.services = records
                recorder.finish(result)
                end_test(result)
                return
            access, network = dict(held.access), held.network
            service_check = held.problem
        file_base = os.environ.get(BASE_ENV)
        runtime = TaskRuntime(item.task.id, services=access, file_base=file_base)
        mode = ApiMode(
            settings.tasks.v2_code, checkout_environment(access, file_base) if settings.tasks.v2_code else None
        )
        try:
            with active(runtime), mode.api(loading=True):
                _, task = load_task(item.task.file, item.task.id)
                phases = _phases(task)
                entry = task_entry(item.task, task)
        except (TaskLoadError, ValueError) as exc:
            unload(item.task.id)
            result = _masked_record(osworld_run, item, Termination.SETUP_ERROR, str(exc))
            recorder.finish(result)
            end_test(result)
            return
        stack.callback(unload, item.task.id)
        try:
            context = RunnerContext(
                entry=entry, settings=settings, model=osworld_model, asks_user=bool(task.get("user_simulator"))
            )
            runner = make_runner(name, context)
        except RunnerUnavailable as exc:
            pytest.skip(f"{name} runner: {exc}")
        stack.callback(runner.close)
        if network is not None:
            sandbox = osworld_sandbox_provider.start_on_network(task_key=item.run_key, network=network)
        else:
            sandbox = osworld_sandbox_provider.start(task_key=item.run_key)
        built: list[V2Episode] = []  # its record, once it ran, says whether a failed task's sandbox is kept
        stack.callback(lambda: end_sandbox(item, sandbox, built[0].result if built else None))
        cache = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="osworld-v2-task-")))
        episode = V2Episode.build(
            entry=entry,
            settings=settings,
            run_id=osworld_run.run_id,
            repeat=item.repeat,
            sandbox=sandbox,
            runner=runner,
            recorder=recorder,
            model=osworld_model.describe() if osworld_model is not None else None,
            markers=[marker for marker, _ in v2_markers(item.task)],
            worker=osworld_run.worker_id,
            cache_dir=cache,
        )
        built.append(episode)
        episode.configure(
            task=task,
            mode=mode,
            runtime=runtime,
            judge=osworld_judge,
            phases=phases,
            enable_proxy="proxy" in access,
        )
        if names:
            episode.result.services = dict(records)
            episode.context.services = access
            episode.service_check = service_check
        live.attach(request.config, item.run_key, episode)  # --osworld-live
        end_test(episode.run())
