"""Containers of a run that died without teardown: reported at the next session start, removed by
``pytest-osworld cleanup``."""

from __future__ import annotations

import os
import signal
import time

import docker
import pytest

from tests.sandbox import support
from tests.sandbox.sessions import cleanup, start_session, wait_holding

pytestmark = pytest.mark.docker


def leave_a_container(pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str) -> str:
    """A session killed hard while holding a sandbox: nothing in it can tear down."""
    process, holding = start_session(pytester, run_id)
    [container_id] = wait_holding(process, holding, 1)
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    assert engine.containers.get(container_id).status == "running"
    return container_id


def test_leftover_reported_then_cleaned(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str, stand_in: str
) -> None:
    container_id = leave_a_container(osworld_pytester, engine, run_id)

    # The next session start says so, and runs its own tests normally.
    next_session = osworld_pytester.mkdir("next")
    (next_session / "test_next.py").write_text("def test_one(osworld_sandbox):\n    assert osworld_sandbox.alive()\n")
    (next_session / "profile.yaml").write_text(
        f"sandbox: stand-in\nsandbox_profiles:\n  stand-in: {{image: {stand_in}, ports: [5000]}}\n"
    )
    result = osworld_pytester.runpytest_subprocess(
        str(next_session), "--osworld-run-id", f"{run_id}-next", "--osworld-profile", str(next_session / "profile.yaml")
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"osworld: warning: *left by ended runs on unix://*{run_id} (1)*`pytest-osworld cleanup`*"]
    )
    assert support.run_containers(engine, f"{run_id}-next") == []

    dry = cleanup("--dry-run")
    assert "would remove unix:///var/run/docker.sock" in dry.stdout and container_id[:12] in dry.stdout
    assert engine.containers.get(container_id)

    done = cleanup()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "removed unix:///var/run/docker.sock" in done.stdout and container_id[:12] in done.stdout
    assert f"run {run_id}" in done.stdout
    assert support.run_containers(engine, run_id) == []


def test_cleanup_of_one_run_spares_live_ones(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str, stand_in: str
) -> None:
    from pytest_osworld.sandbox import Owner, make_provider
    from pytest_osworld.sandbox.providers.container import ContainerSandbox
    from pytest_osworld.settings import Settings

    # A live sandbox of this process (its run is alive) and one of another run, also alive.
    settings = Settings(sandbox="s", sandbox_profiles={"s": {"image": stand_in, "ports": [5000]}})
    live = make_provider(settings, Owner(run_id=run_id))
    other = make_provider(settings, Owner(run_id=f"{run_id}-b"))
    try:
        mine, theirs = live.start(task_key="a"), other.start(task_key="b")
        assert isinstance(mine, ContainerSandbox) and isinstance(theirs, ContainerSandbox)
        spared = cleanup()
        assert mine.container_id[:12] not in spared.stdout and theirs.container_id[:12] not in spared.stdout
        assert mine.alive() and theirs.alive()

        by_run = cleanup("--run-id", f"{run_id}-b")
        assert by_run.returncode == 0
        assert theirs.container_id[:12] in by_run.stdout and "1 container(s) removed" in by_run.stdout
        assert not theirs.alive() and mine.alive()
        mine.stop()
    finally:
        live.close()
        other.close()
        support.remove_run(engine, f"{run_id}-b")


def test_old_containers_count_as_leftovers_whatever_their_labels(
    engine: docker.DockerClient, run_id: str, stand_in: str
) -> None:
    from pytest_osworld.sandbox import EngineHost, Owner, list_managed, make_provider
    from pytest_osworld.sandbox.providers.container import ContainerSandbox
    from pytest_osworld.settings import Settings

    settings = Settings(sandbox="s", sandbox_profiles={"s": {"image": stand_in, "ports": [5000]}})
    provider = make_provider(settings, Owner(run_id=run_id))
    with provider.start(task_key="a") as sandbox:
        assert isinstance(sandbox, ContainerSandbox)
        time.sleep(0.2)  # an age above the bound below
        young = list_managed(engine, EngineHost(), max_age=3600, run_id=run_id)
        old = list_managed(engine, EngineHost(), max_age=0.1, run_id=run_id)
        assert [m.id for m in young] == [sandbox.container_id] and not young[0].leftover
        assert young[0].alive_reason == "its run's process is alive"
        assert [m.leftover for m in old] == [True]
    provider.close()
