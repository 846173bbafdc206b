"""pytest hooks and fixtures of the sandbox layer.

- ``osworld_sandbox_provider`` (session): the provider of this process, built from the settings.
- ``osworld_sandbox`` (function): one started sandbox per test, always torn down.

Before any test: the profile is checked on every environment host (``SandboxConfigError`` becomes
a usage error) and containers left by ended runs are reported. SIGTERM is turned into the same
teardown as Ctrl-C. At the very end the process that owns the run (the xdist controller, or the
plain pytest process) ends the run's sandboxes wherever they ran (``end_run``): under xdist whatever
containers of this run are still there (a worker killed hard cannot remove its own); on ray the
node agents, their warm pools and what is left on every node.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_osworld.plugin import keep
from pytest_osworld.plugin.items import OsworldItem, names_task_inputs
from pytest_osworld.plugin.run import get_run, given_paths, runs_no_test
from pytest_osworld.record import TaskResult
from pytest_osworld.sandbox import (
    Owner,
    Sandbox,
    SandboxConfigError,
    SandboxError,
    SandboxProvider,
    SigtermAsInterrupt,
    check_pool,
    describe_pool,
    end_run,
    make_provider,
    own_identity,
    run_leftovers,
    summary_line,
)
from pytest_osworld.sandbox.profiles import DESKTOP
from pytest_osworld.services.pool import TaskServices
from pytest_osworld.settings import Settings

SANDBOX_FIXTURES = ("osworld_sandbox", "osworld_sandbox_provider")
_USED_KEY = "osworld_sandbox_used"  # in xdist's workeroutput: this worker started a provider


@dataclass
class _State:
    sigterm: SigtermAsInterrupt = field(default_factory=SigtermAsInterrupt)
    checked: bool = False
    workers_may_have_sandboxes: bool = False


_STATE = pytest.StashKey[_State]()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _is_controller(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("dsession")


def owner_of(config: pytest.Config) -> Owner:
    run = get_run(config)
    workerinput = getattr(config, "workerinput", {})
    return Owner(
        run_id=run.run_id,
        worker_id=run.worker_id,
        run_pid=workerinput.get("osworld_run_pid"),
        run_process_start=workerinput.get("osworld_run_process_start"),
    )


def pytest_configure(config: pytest.Config) -> None:
    state = _State()
    state.sigterm.install()
    config.stash[_STATE] = state
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistSandboxHooks(), "osworld-sandbox-xdist")


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None:
        state.sigterm.restore()


class _XdistSandboxHooks:
    """Hooks that exist only with pytest-xdist (controller side)."""

    def pytest_configure_node(self, node: Any) -> None:
        # Workers label their containers with the controller's pid: the run lives as long as it does.
        node.workerinput["osworld_run_pid"] = os.getpid()
        node.workerinput["osworld_run_process_start"] = own_identity()

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        if error is not None or output.get(_USED_KEY):
            node.config.stash[_STATE].workers_may_have_sandboxes = True


def describe_sandboxes(config: pytest.Config) -> dict[str, Any]:
    """The run manifest's ``sandbox`` entry: the profile, and per host its images (and the qcow2)."""
    try:
        return describe_pool(get_run(config).settings, owner_of(config))
    except Exception as exc:  # noqa: BLE001 - the manifest says why instead of failing a finished run
        return {"problem": f"{type(exc).__name__}: {exc}"}


# --- the check before the session
def _terminal_line(config: pytest.Config, text: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(text)


def _check_and_report(config: pytest.Config) -> None:
    state = config.stash[_STATE]
    settings = get_run(config).settings
    owner = owner_of(config)
    try:
        check_pool(settings, owner, progress=lambda line: _terminal_line(config, f"osworld: {line}"))
    except SandboxConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    state.checked = True
    _report_leftovers(config, settings)


def _report_leftovers(config: pytest.Config, settings: Settings) -> None:
    try:
        leftovers = run_leftovers(settings, owner_of(config))
    except SandboxConfigError:
        return  # the check before said what is wrong
    if leftovers:
        _terminal_line(config, summary_line(leftovers))


def _needs_sandbox(items: list[pytest.Item]) -> bool:
    """Whether a test that will run uses a sandbox (a test skipped unconditionally never starts one)."""
    return any(
        item.get_closest_marker("skip") is None
        and any(n in getattr(item, "fixturenames", ()) for n in SANDBOX_FIXTURES)
        for item in items
    )


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if not _is_controller(config) or config.option.collectonly:
        return
    # The controller of xdist collects nothing, so it cannot see which tests need a sandbox: it checks
    # when the profile was chosen on purpose, or when task inputs are given.
    if get_run(config).settings.sandbox.name != DESKTOP or _has_task_inputs(config):
        _check_and_report(config)


def _has_task_inputs(config: pytest.Config) -> bool:
    return names_task_inputs(given_paths(config))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    if _is_worker(config) or _is_controller(config) or runs_no_test(session):
        return
    if _needs_sandbox(session.items):
        _check_and_report(config)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The run's owner ends its sandboxes: under xdist after xdist has stopped the workers (what they
    could not remove); in a plain run after its tests, when the session checked a sandbox."""
    config = session.config
    state = config.stash.get(_STATE, None)
    if state is None or _is_worker(config):
        return
    if _is_controller(config):
        wanted = state.checked or state.workers_may_have_sandboxes or session.exitstatus == pytest.ExitCode.INTERRUPTED
    else:
        wanted = state.checked
    if not wanted:
        return
    run_id = get_run(config).run_id
    keep.before_run_end(session, owner_of(config))  # sandboxes kept for a look: a wait, with until-exit
    try:
        # The run's shared services are not leftovers here: plugin/services.py removes them after this.
        removed = end_run(get_run(config).settings, owner_of(config))
    except SandboxConfigError:
        return
    if removed:
        whose = f"workers of run {run_id}" if _is_controller(config) else f"run {run_id}"
        kept = keep.kept_count(config)
        note = f" ({kept} of them kept for a look)" if kept else ""
        _terminal_line(config, f"osworld: removed {removed} sandbox container(s) that {whose} left{note}")


# --- fixtures
@pytest.fixture(scope="session")
def osworld_sandbox_provider(pytestconfig: pytest.Config) -> Iterator[SandboxProvider]:
    """The sandbox provider of this pytest process (its xdist worker's environment host)."""
    settings = get_run(pytestconfig).settings
    owner = owner_of(pytestconfig)
    try:
        provider = make_provider(settings, owner)
    except SandboxConfigError as exc:
        raise SandboxError(str(exc)) from None
    workeroutput = getattr(pytestconfig, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_USED_KEY] = True
    try:
        yield provider
    finally:
        try:
            # A container whose creation was cut short by an interrupt has no handle to remove it by.
            provider.sweep(owner.run_id, pid=os.getpid())
        finally:
            provider.close()


@pytest.fixture
def osworld_sandbox(
    osworld_sandbox_provider: SandboxProvider,
    osworld_task_services: TaskServices | None,
    request: pytest.FixtureRequest,
) -> Iterator[Sandbox]:
    """A fresh sandbox for this test; removed when the test ends, however it ends.

    A task that needs shared services gets them first (held, healthy), and its sandbox on their
    network, where their hostnames resolve; any other sandbox starts as before.
    """
    # A user's own test may ask for a sandbox too: it is labelled with its node id.
    task_key = request.node.run_key if isinstance(request.node, OsworldItem) else request.node.nodeid
    if osworld_task_services is not None:
        sandbox = osworld_sandbox_provider.start_on_network(task_key=task_key, network=osworld_task_services.network)
    else:
        sandbox = osworld_sandbox_provider.start(task_key=task_key)
    try:
        yield sandbox
    finally:
        end_sandbox(request.node, sandbox)


def end_sandbox(item: pytest.Item, sandbox: Sandbox, result: TaskResult | None = None) -> None:
    """Remove a test's sandbox at its end, unless it is a failed or masked task's that
    ``--osworld-keep-failed`` keeps until the run's end (``result``: the task's record, when the caller
    has it before the test's report)."""
    if not keep.keep_after_test(item, sandbox, owner_of(item.config), result):
        sandbox.stop()
