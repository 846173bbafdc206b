"""The ``osworld_sandbox`` fixture as users get it: pytest runs (through pytester) of the real desktop."""

from __future__ import annotations

import docker
import pytest

from tests.sandbox import support
from tests.sandbox.sessions import GUEST_TESTS

pytestmark = pytest.mark.docker


def many_tests(count: int) -> str:
    body = GUEST_TESTS
    for i in range(count):
        body += f"\ndef test_guest_{i}(osworld_sandbox):\n    check(osworld_sandbox)\n"
    return body


def test_twenty_sandboxes_over_two_workers(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str
) -> None:
    osworld_pytester.makepyfile(test_guests=many_tests(20))
    result = osworld_pytester.runpytest_subprocess("-p", "xdist", "-n", "2", f"--osworld-run-id={run_id}")
    result.assert_outcomes(passed=20)
    assert support.run_containers(engine, run_id) == []


def test_lost_sandbox_then_the_next_test_runs(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str
) -> None:
    osworld_pytester.makepyfile(
        test_lost=GUEST_TESTS
        + """
import docker, httpx, pytest

def test_a_killed_container(osworld_sandbox):
    check(osworld_sandbox)
    docker.from_env().containers.get(osworld_sandbox.container_id).kill()
    assert not osworld_sandbox.alive()
    with pytest.raises(httpx.HTTPError):
        httpx.get(osworld_sandbox.api_url + "/screenshot", trust_env=False, timeout=10)

def test_the_next_one(osworld_sandbox):
    check(osworld_sandbox)
"""
    )
    result = osworld_pytester.runpytest_subprocess(f"--osworld-run-id={run_id}")
    result.assert_outcomes(passed=2)
    assert support.run_containers(engine, run_id) == []


def test_a_start_failure_is_an_error_of_that_test(
    osworld_pytester: pytest.Pytester, stand_in: str, engine: docker.DockerClient, run_id: str
) -> None:
    osworld_pytester.makefile(
        ".yaml",
        profile=f"""
sandbox: broken
sandbox_profiles:
  broken:
    image: {stand_in}
    ports: [5000]
    env: {{FAIL_AT_START: "cannot open display"}}
""",
    )
    osworld_pytester.makepyfile(test_broken="def test_one(osworld_sandbox):\n    pass\n")
    result = osworld_pytester.runpytest_subprocess(f"--osworld-run-id={run_id}", "--osworld-profile=profile.yaml")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*SandboxError*died while starting*", "*cannot open display*"])
    assert support.run_containers(engine, run_id) == []
