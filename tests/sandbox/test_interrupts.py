"""A session stopped by a signal while a test holds a sandbox leaves no container behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest

from tests.sandbox import support

pytestmark = pytest.mark.docker

HOLDING_TEST = """
import os, pathlib, time

def test_hold(osworld_sandbox):
    marker = pathlib.Path(os.environ["HOLDING_DIR"]) / f"{os.getpid()}"
    marker.write_text(osworld_sandbox.container_id)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # held until the signal comes
        time.sleep(0.1)
"""


def start_session(
    pytester: pytest.Pytester, run_id: str, *extra: str, tests: int = 1
) -> tuple[subprocess.Popen[bytes], Path]:
    body = HOLDING_TEST + "".join(
        f"\ndef test_hold_{i}(osworld_sandbox):\n    test_hold(osworld_sandbox)\n" for i in range(1, tests)
    )
    pytester.makepyfile(test_holding=body)
    holding = pytester.path / "holding"
    holding.mkdir()
    env = {**os.environ, "HOLDING_DIR": str(holding)}
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--osworld-run-id={run_id}", *extra],
        cwd=pytester.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, like a terminal's foreground job
    )
    return process, holding


def wait_holding(process: subprocess.Popen[bytes], holding: Path, count: int) -> list[str]:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        markers = list(holding.iterdir())
        if len(markers) >= count:
            return [m.read_text() for m in markers]
        if process.poll() is not None:
            output = process.stdout.read().decode() if process.stdout else ""
            pytest.fail(f"the session ended before holding its sandboxes:\n{output}")
        time.sleep(0.1)
    process.kill()
    pytest.fail("no sandbox was held within 180 s")


def finish(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    try:
        output, _ = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"the session did not end after the signal:\n{output.decode()}")
    return process.returncode, output.decode()


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
