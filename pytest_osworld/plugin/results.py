"""The hooks of results: outcomes into records, resume's deselection, the summary, the gate, report plugins.

The hooks stay thin: the work is in :mod:`pytest_osworld.plugin.reporting`, whose per-session object
also carries the hooks that need its state (``pytest_runtest_logreport``, ``pytest_report_teststatus``).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pytest_osworld.plugin import crashes, reporting, resume
from pytest_osworld.plugin.items import OsworldItem
from pytest_osworld.results.recorder import EpisodeRecorder
from pytest_osworld.results.store import RunStore


def pytest_configure(config: pytest.Config) -> None:
    reporting.configure(config)
    crashes.configure(config)  # a worker that dies under a task: its record, on the controller


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Generator[None, None, None]:
    # A wrapper: resume deselects after -k/-m and the shard have chosen, so a resumed shard keeps its share.
    yield
    resume.deselect_done(config, items)
    reporting.state(config).after_selection(items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    reporting.state(item.config).begin(item)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    # trylast makes this the innermost wrapper: the report is final for allure-pytest, pytest-html and
    # junitxml, which read it after this returns.
    report = yield
    reporting.state(item.config).on_report(item, call, report)
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if resume.refused(session.config):  # the earlier run's summary stays as it was, like its manifest
        return
    reporting.state(session.config).finish(session)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    for line in reporting.state(config).terminal_lines():
        if line.startswith("=="):
            terminalreporter.write_sep("=", line.strip("= "))
        else:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def osworld_store(pytestconfig: pytest.Config) -> RunStore:
    """The run store of this session: the episode writes its steps, screenshots and record through it."""
    return reporting.get_store(pytestconfig)


@pytest.fixture
def osworld_recorder(request: pytest.FixtureRequest, osworld_store: RunStore) -> EpisodeRecorder:
    """Writes one task item's files and its Allure steps; ``finish(result)`` records the outcome."""
    item = request.node
    if not isinstance(item, OsworldItem):
        pytest.fail("osworld_recorder is only available to OSWorld task items", pytrace=False)
    return EpisodeRecorder(osworld_store, item.run_key, item.keep_result)
