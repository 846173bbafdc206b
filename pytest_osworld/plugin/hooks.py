"""The session-level hooks: options, configuration, collection of task inputs, selection, the manifest.

Each hook is a few lines that delegate: settings to :mod:`pytest_osworld.settings`, reading task
inputs to :mod:`pytest_osworld.plugin.items` (OSWorld-V2 inputs to :mod:`pytest_osworld.plugin.v2`),
support (the engine's, and the chosen sandbox's provides against each task's needs) to
:mod:`pytest_osworld.runnable`, shards to :mod:`pytest_osworld.tasks.shard`, the manifest to its
owner (:class:`pytest_osworld.results.manifest.ManifestOwner`).
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld import settings as settings_mod
from pytest_osworld.errors import OsworldError, SettingsError
from pytest_osworld.models.secrets import EndpointUrl
from pytest_osworld.plugin import reporting, resume
from pytest_osworld.plugin.items import OsworldItem, TaskFile, TaskItem, is_task_input, names_task_inputs
from pytest_osworld.plugin.run import (
    OsworldRun,
    get_run,
    given_paths,
    new_run_id,
    register_domain_marker,
    runs_no_test,
    start_run,
)
from pytest_osworld.plugin.sandbox import describe_sandboxes
from pytest_osworld.plugin.v2 import V2TaskFile, V2TaskItem, is_v2_input
from pytest_osworld.plugin.v2 import skip_reason as v2_skip_reason
from pytest_osworld.results.manifest import ModelIdentity
from pytest_osworld.results.store import StoreError
from pytest_osworld.results.views import UNRUNNABLE_MARKER
from pytest_osworld.runnable import engine_skip, sandbox_skip, unknown_provides_line
from pytest_osworld.sandbox import Provides, SandboxConfigError, unknown
from pytest_osworld.sandbox.profiles import sandbox_provides
from pytest_osworld.tasks.markers import KNOWN_DOMAINS, MARKERS
from pytest_osworld.v2.reading.markers import V2_MARKERS
from pytest_osworld.v2.reading.pins import PinError, read_pins

UNRUNNABLE_HELP = (
    "set at collection on a task the chosen sandbox lacks apps or commands of (it is skipped, and counted "
    "in the all view's denominator)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    settings_mod.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """The run exists before any other plugin of the project configures (they all read it)."""
    try:
        settings = settings_mod.from_pytest_config(config)
    except SettingsError as exc:
        raise pytest.UsageError(str(exc)) from None
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        run_id, worker_id = workerinput["osworld_run_id"], workerinput["workerid"]
    else:
        run_id, worker_id = settings.reports.run_id or new_run_id(), None
    run = OsworldRun(settings=settings, run_id=run_id, worker_id=worker_id)
    start_run(config, run)
    if settings.tasks.v2_hashes is not None:
        try:
            run.v2_pins = read_pins(settings.tasks.v2_hashes)
        except PinError as exc:
            raise pytest.UsageError(str(exc)) from None
    for name, help_text in {**MARKERS, **V2_MARKERS, UNRUNNABLE_MARKER: UNRUNNABLE_HELP}.items():
        config.addinivalue_line("markers", f"{name}: {help_text}")
    for domain in KNOWN_DOMAINS:
        register_domain_marker(config, domain)
    resume.configure(config, run)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks(), "osworld-xdist")


class _XdistHooks:
    """Hooks that exist only when pytest-xdist is installed."""

    def pytest_configure_node(self, node: Any) -> None:
        # Every worker writes into the controller's run.
        node.workerinput["osworld_run_id"] = get_run(node.config).run_id


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(
    file_path: Path, parent: pytest.Collector
) -> Generator[None, list[pytest.Collector], list[pytest.Collector]]:
    collectors = yield
    if is_v2_input(file_path, parent.config):
        # pytest's Python collector takes a .py given by name, and would import (run) the task file.
        kept = [c for c in collectors if not isinstance(c, pytest.Module)]
        return [*kept, V2TaskFile.from_parent(parent, path=file_path)]
    given = file_path.resolve() in given_paths(parent.config)
    if is_task_input(file_path, explicitly_given=given):
        return [*collectors, TaskFile.from_parent(parent, path=file_path)]
    return collectors


def pytest_sessionstart(session: pytest.Session) -> None:
    """A runner asked for is checked once, with its model endpoint, before any sandbox starts."""
    config = session.config
    run = get_run(config)
    if run.is_worker or config.option.collectonly:
        return
    distributing = config.pluginmanager.has_plugin("dsession")  # xdist's controller collects nothing
    if distributing and names_task_inputs(given_paths(config)):
        _say_unknown_provides(config, run)  # the workers decide the skips, where nothing they say is shown
    if not run.settings.runner_name and not (distributing and names_task_inputs(given_paths(config))):
        return  # without tasks, no runner is needed; a plain run checks after collection
    try:
        run.check_agent(endpoint=True)
    except OsworldError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """After ``-k``/``-m`` have deselected: skip what cannot run here, keep this shard's share."""
    run = get_run(config)
    if (
        not run.is_worker
        and not config.option.collectonly
        and not run.settings.runner_name
        and any(isinstance(i, TaskItem) for i in items)
    ):
        try:
            run.check_agent(endpoint=False)  # names the runners to choose from
        except OsworldError as exc:
            raise pytest.UsageError(str(exc)) from None
    _skip_unsupported(session, run, items)
    shard = run.settings.tasks.shard
    if shard is None:
        return
    chosen = shard.select(item.name for item in items if isinstance(item, OsworldItem))
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        (kept if not isinstance(item, OsworldItem) or item.name in chosen else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _skip_unsupported(session: pytest.Session, run: OsworldRun, items: list[pytest.Item]) -> None:
    """A task whose steps, getters, metrics or credentials this engine lacks, or whose apps or commands
    the chosen sandbox lacks (marked ``unrunnable``), is skipped, never scored (nor masked every time for
    a reason known in advance); so is a V2 task this version cannot run."""
    tasks = [item for item in items if isinstance(item, TaskItem)]
    skips = {item.run_key: engine_skip(item.entry.task, run.settings) for item in tasks}
    # What the sandbox provides is read from its engine, not for a session that runs no test
    # (--collect-only lists tasks without an engine, and a bad task file is said at once).
    wanted = not runs_no_test(session) and any(skip is None for skip in skips.values())
    provides = _run_provides(session.config, run) if wanted else None
    for item in tasks:
        skip = skips[item.run_key]
        if skip is None and provides is not None:
            skip = sandbox_skip(item.entry.task, provides)
        if skip is not None:
            if skip.unrunnable:
                item.add_marker(pytest.mark.unrunnable(sandbox=run.settings.sandbox.name))
            item.add_marker(pytest.mark.skip(reason=skip.reason))
    for v2_item in items:
        if isinstance(v2_item, V2TaskItem) and (reason := v2_skip_reason(v2_item.task, run.settings)):
            v2_item.add_marker(pytest.mark.skip(reason=reason))


def _run_provides(config: pytest.Config, run: OsworldRun, *, build: bool = True) -> Provides:
    """What the chosen sandbox provides, its desktop image built first when missing or stale (the
    session's routine, with its progress); an unknown answer is said."""
    try:
        found = sandbox_provides(run.settings, build=build, progress=lambda line: _say(config, line))
    except SandboxConfigError as exc:  # the session's check stops the run with it before any task starts
        found = unknown(run.settings.sandbox.name, f"sandbox {run.settings.sandbox.name!r}", str(exc))
    if not found.known:
        _say(config, unknown_provides_line(found))
    return found


def _say_unknown_provides(config: pytest.Config, run: OsworldRun) -> None:
    # The session's check has just built the desktop image (plugin/sandbox.py): nothing is built here.
    _run_provides(config, run, build=False)


def _say(config: pytest.Config, line: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"osworld: {line}")


def pytest_collection_finish(session: pytest.Session) -> None:
    """The manifest's start: the selection is final (the shard and resume have chosen)."""
    run = get_run(session.config)
    run.runs_tests = not runs_no_test(session)
    if session.config.option.collectonly or not run.writes_run_files or not (run.entries or run.v2_tasks):
        return
    if resume.refused(session.config):  # pytest calls this hook even after a usage error in selection
        return
    items = [item for item in session.items if isinstance(item, TaskItem)]
    v2_selected = {item.run_key for item in session.items if isinstance(item, V2TaskItem)}
    resumed = resume.state(session.config)
    counted = items + resumed.items if resumed else items
    run.manifest.start(
        entries=run.entries,
        sources=run.sources,
        selected={item.run_key for item in items} | v2_selected,
        needs_gdrive={item.run_key for item in counted if item.get_closest_marker("needs_gdrive")},
        shard=str(run.settings.tasks.shard) if run.settings.tasks.shard else None,
        repeat=run.settings.tasks.repeat,
        earlier=resumed.earlier if resumed else None,
        resumed=resumed.keys if resumed else None,
        v2=run.v2_input(v2_selected),
    )


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The manifest's end, before the summary is computed: the sandboxes, the runner and the model."""
    run = get_run(session.config)
    if run.is_worker or session.config.option.collectonly or not run.manifest.path.is_file():
        return
    if resume.refused(session.config):  # the earlier run's manifest stays as it was
        return
    s = run.settings
    model = (
        ModelIdentity(api=s.model.api, name=s.model.name, url=EndpointUrl.parse(s.model.url).base)
        if s.model.url
        else None
    )
    # An unreadable manifest is reported by the summary, which reads it next; one that cannot be written
    # (a full disk) is a problem of the run, and the hooks after this one (the sweeps) still run.
    try:
        run.manifest.end(sandbox=describe_sandboxes(session.config), runner=s.runner_name, model=model)
    except StoreError:
        pass
    except OSError as exc:
        reporting.state(session.config).errors.append(f"could not complete {run.manifest.path}: {exc}")


def pytest_report_header(config: pytest.Config) -> list[str]:
    run = get_run(config)
    s = run.settings
    return [f"osworld: run {run.run_id} -> {run.run_dir}, agent {s.runner_name or '-'}, sandbox {s.sandbox.name}"]
