"""The project's own tests: which of them need the Docker engine, and the guard that keeps that true.

A test that needs the engine carries the ``docker`` marker (``pytest -m "not docker"`` runs the rest
with no engine at all); one without it that reaches the engine fails (tests/support/engine_guard.py).
The fixtures several folders share are here, or in the tests/support plugins loaded here: the engine,
the desktop image and its containers, the forge server, and the real runs that several tests read
(started once per session).
"""

from __future__ import annotations

import secrets
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest

from tests.support import bundled_runs
from tests.support.guest_containers import Guest, start_guest
from tests.support.shared_runs import SharedRun, session_folder


def pytest_configure(config: pytest.Config) -> None:
    # A suite started in the background (nohup, CI) may inherit SIGINT ignored, and every pytest run a
    # test starts would inherit that too and never see the Ctrl-C a test sends it: give it back its
    # default, as a terminal's foreground job has it.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    config.pluginmanager.import_plugin("tests.support.engine_guard")
    config.pluginmanager.import_plugin("tests.support.xdist_groups")
    config.pluginmanager.import_plugin("tests.support.desktop_fixtures")  # desktop_ref, shared/fresh_desktop
    config.pluginmanager.import_plugin("tests.support.forge")  # forge_server


# --- the Docker engine and the desktop image (tests using them carry the docker marker)


@pytest.fixture(scope="session")
def engine() -> Iterator[docker.DockerClient]:
    """The Docker engine; a test that needs one fails (never skips) when none answers."""
    from pytest_osworld.guest import build
    from pytest_osworld.guest.errors import DockerUnavailableError

    try:
        client = build.connect()
    except DockerUnavailableError as exc:
        pytest.fail(f"no Docker engine answers ({exc}); start dockerd (.ci/setup does)", pytrace=False)
    yield client
    client.close()


@pytest.fixture(scope="session")
def desktop_image(engine: docker.DockerClient) -> str:
    """The id of the current desktop image, built first when missing or stale."""
    from pytest_osworld.guest import build

    return build.ensure_image(engine, progress=lambda line: print(line, file=sys.stderr)).id


@pytest.fixture
def run_id(engine: docker.DockerClient) -> Iterator[str]:
    """A run id of this test's own; whatever containers and networks of it are left are removed afterwards
    (a test that must leave nothing checks before)."""
    from pytest_osworld.sandbox import LABEL_MANAGED, LABEL_RUN_ID

    value = f"t-{secrets.token_hex(4)}"
    yield value
    labels = {"label": [f"{LABEL_MANAGED}=1", f"{LABEL_RUN_ID}={value}"]}
    for container in engine.containers.list(all=True, filters=labels):
        container.remove(force=True, v=True)
    for network in engine.networks.list(filters=labels):
        network.remove()


@pytest.fixture
def make_guest(engine: docker.DockerClient, desktop_image: str) -> Iterator[Callable[..., Guest]]:
    """Start fresh desktop containers (with optional environment) that are removed after the test."""
    started: list[Guest] = []

    def make(environment: dict[str, str] | None = None) -> Guest:
        new = start_guest(engine, desktop_image, environment)
        started.append(new)
        return new

    yield make
    for each in started:
        each.close()


# --- the session's shared real runs (tests/support/shared_runs.py): started once, read by many tests


@pytest.fixture(scope="session")
def shared_runs_root(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    return session_folder(tmp_path_factory, worker_id)


@pytest.fixture(scope="session")
def bundled_oracle(shared_runs_root: Path) -> SharedRun:
    """The oracle over every bundled task (the README's main job, with a judge that answers YES)."""
    return bundled_runs.oracle_run(shared_runs_root)


@pytest.fixture(scope="session")
def bundled_null(shared_runs_root: Path, bundled_oracle: SharedRun) -> SharedRun:
    """The null control over every bundled task, its gate against the oracle run."""
    return bundled_runs.null_run(shared_runs_root, bundled_oracle)


# --- how the suite runs in parallel (pytest -n N --dist loadgroup; docs/architecture.md, "The tests")

# Tests that must share one xdist worker: the VM tests (QEMU under TCG takes a whole core for minutes,
# and they share one saved state), and the readers of the bundled shared runs (the runs start several
# desktops each; one lane keeps them from starving each other, and their readers wait on no other
# worker). The fault matrix's runs are one lane too (each run starts two desktops, and one of its faults
# restarts an engine of its own). xdist schedules the largest groups first, so these long lanes start at once.
_GROUPS_BY_FIXTURE = {"bundled_oracle": "bundled-runs", "bundled_null": "bundled-runs", "bad_actions": "bundled-runs"}
_GROUPS_BY_FOLDER = {"vm": "vm", "faults": "faults"}


@pytest.hookimpl(tryfirst=True)  # before the hooks that read the groups (tests/support/xdist_groups.py)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = Path(__file__).parent
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue  # a lane the module chose itself (the native runs share one, the Ray cluster its own)
        group = next((g for f, g in _GROUPS_BY_FIXTURE.items() if f in getattr(item, "fixturenames", ())), None)
        inside = item.path.relative_to(tests) if item.path.is_relative_to(tests) else None
        if group is None and inside is not None:
            group = _GROUPS_BY_FOLDER.get(inside.parts[0])
        if group is None and inside is not None and _shares_a_module_fixture(item):
            # Made once per worker that runs one of the module's tests: spread over three workers, a module's
            # real run (the live page's, keep-failed's) ran three times at once. One lane makes it once.
            group = f"module:{inside.as_posix()}"
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)  # pytest's own record of the item's fixtures
    if info is None:
        return False
    return any(defs and defs[-1].scope == "module" for defs in info.name2fixturedefs.values())
