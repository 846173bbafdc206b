"""A session stopped by a signal while a test holds a sandbox leaves no container behind."""

from __future__ import annotations

import os
import signal

import docker
import pytest

from tests.sandbox import support
from tests.sandbox.sessions import finish, start_session, wait_holding

pytestmark = pytest.mark.docker


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_to_a_session(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str, signum: signal.Signals
) -> None:
    process, holding = start_session(osworld_pytester, run_id)
    [container_id] = wait_holding(process, holding, 1)
    assert engine.containers.get(container_id).status == "running"
    process.send_signal(signum)
    code, output = finish(process)
    assert code == pytest.ExitCode.INTERRUPTED, output
    assert "KeyboardInterrupt" in output
    assert support.run_containers(engine, run_id) == [], output


@pytest.mark.parametrize(
    ("signum", "to_group"),
    [(signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["SIGINT-to-all-like-ctrl-c", "SIGTERM-to-the-controller"],
)
def test_signal_to_an_xdist_session(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str, signum: signal.Signals, to_group: bool
) -> None:
    process, holding = start_session(osworld_pytester, run_id, "-p", "xdist", "-n", "2", tests=2)
    held = wait_holding(process, holding, 2)
    assert len(held) == 2
    if to_group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    code, output = finish(process)
    assert code != 0, output
    assert support.run_containers(engine, run_id) == [], output


def test_worker_killed_hard_is_cleaned_by_the_controller(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str
) -> None:
    osworld_pytester.makepyfile(
        test_crash="""
import os, signal

def test_worker_dies(osworld_sandbox):
    assert osworld_sandbox.alive()
    os.kill(os.getpid(), signal.SIGKILL)  # no teardown can run in this worker
"""
    )
    result = osworld_pytester.runpytest_subprocess(
        "-p", "xdist", "-n", "2", "--max-worker-restart=0", f"--osworld-run-id={run_id}"
    )
    result.stdout.fnmatch_lines(["*removed 1 sandbox container(s) that workers of run*"])
    assert support.run_containers(engine, run_id) == []
