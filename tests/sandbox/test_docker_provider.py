"""The container provider on a real engine, with a small stand-in guest image.

The machinery is what is tested here (ports, labels, readiness, death while starting, a lost
container, limits); the real desktop is started by the fixture tests.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest

from pytest_osworld.procs import hostname
from pytest_osworld.sandbox import (
    LABEL_HOSTNAME,
    LABEL_MANAGED,
    LABEL_PID,
    LABEL_RUN_ID,
    LABEL_TASK,
    LABEL_WORKER,
    Owner,
    SandboxConfigError,
    SandboxError,
    check_pool,
    describe_pool,
    make_provider,
)
from pytest_osworld.sandbox.providers.container import ContainerProvider, ContainerSandbox
from pytest_osworld.settings import Settings

pytestmark = pytest.mark.docker


def stand_in_settings(image: str, **profile: Any) -> Settings:
    flat = {k: profile.pop(k) for k in list(profile) if k.startswith("sandbox_")}
    entry = {"image": image, "ports": [5000], "readiness": {"deadline": 20}, **profile}
    return Settings(sandbox="stand-in", sandbox_profiles={"stand-in": entry}, **flat)


@pytest.fixture
def provider(stand_in: str, run_id: str) -> Iterator[ContainerProvider]:
    made = make_provider(stand_in_settings(stand_in), Owner(run_id=run_id, worker_id="gw7"))
    assert isinstance(made, ContainerProvider)
    yield made
    made.close()


def container_of(engine: docker.DockerClient, sandbox: ContainerSandbox) -> Any:
    return engine.containers.get(sandbox.container_id)


def test_start_publishes_on_loopback_and_labels(
    provider: ContainerProvider, engine: docker.DockerClient, run_id: str
) -> None:
    with provider.start(task_key="chrome/abc") as sandbox:
        assert isinstance(sandbox, ContainerSandbox)
        assert httpx.get(sandbox.api_url + "/platform", trust_env=False).text == "Linux"
        container = container_of(engine, sandbox)
        bindings = container.attrs["NetworkSettings"]["Ports"]["5000/tcp"]
        assert bindings[0]["HostIp"] == "127.0.0.1"
        assert sandbox.api_url == f"http://127.0.0.1:{bindings[0]['HostPort']}"
        labels = container.labels
        assert labels[LABEL_MANAGED] == "1" and labels[LABEL_RUN_ID] == run_id
        assert labels[LABEL_WORKER] == "gw7" and labels[LABEL_TASK] == "chrome/abc"
        assert labels[LABEL_PID] == str(os.getpid()) and labels[LABEL_HOSTNAME] == hostname()
        assert sandbox.alive()
        assert sandbox.describe()["image_id"].startswith("sha256:")
        with pytest.raises(SandboxError, match="guest port 9222 is not published"):
            sandbox.url(9222)
    assert not sandbox.alive()
    assert not engine.containers.list(all=True, filters={"id": sandbox.container_id})
    sandbox.stop()  # idempotent


def test_concurrent_sandboxes_get_their_own_ports(provider: ContainerProvider) -> None:
    first = provider.start(task_key="a")
    second = provider.start(task_key="b")
    try:
        assert first.api_url != second.api_url
        for sandbox in (first, second):
            assert httpx.get(sandbox.api_url + "/screenshot", trust_env=False).status_code == 200
    finally:
        first.stop()
        second.stop()


def test_death_while_starting_fails_at_once_with_the_log(
    stand_in: str, run_id: str, engine: docker.DockerClient
) -> None:
    settings = stand_in_settings(stand_in, env={"FAIL_AT_START": "no display"}, readiness={"deadline": 60})
    provider = make_provider(settings, Owner(run_id=run_id))
    started = time.monotonic()
    with pytest.raises(SandboxError) as info:
        provider.start(task_key="t")
    assert time.monotonic() - started < 15, "must not wait for the deadline"
    message = str(info.value)
    assert "died while starting" in message and "exit code 3" in message
    assert "stand-in guest: fatal: no display" in message
    provider.close()
    assert not engine.containers.list(all=True, filters={"label": f"{LABEL_RUN_ID}={run_id}"})


def test_silent_guest_hits_the_deadline(stand_in: str, run_id: str, engine: docker.DockerClient) -> None:
    settings = stand_in_settings(stand_in, env={"SILENT": "1"}, readiness={"deadline": 2})
    provider = make_provider(settings, Owner(run_id=run_id))
    with pytest.raises(SandboxError, match=r"did not answer GET /screenshot on guest port 5000 with 200 within 2 s"):
        provider.start(task_key="t")
    provider.close()
    assert not engine.containers.list(all=True, filters={"label": f"{LABEL_RUN_ID}={run_id}"})


def test_killed_container_is_lost_and_the_next_one_works(
    provider: ContainerProvider, engine: docker.DockerClient
) -> None:
    sandbox = provider.start(task_key="victim")
    container_of(engine, sandbox).kill()
    assert not sandbox.alive()
    with pytest.raises(httpx.HTTPError):
        httpx.get(sandbox.api_url + "/screenshot", trust_env=False, timeout=5)
    lost = sandbox.lost("the guest stopped answering")
    assert "exited" in str(lost) and lost.reason == "sandbox_lost"
    sandbox.stop()
    with provider.start(task_key="next") as fresh:
        assert httpx.get(fresh.api_url + "/screenshot", trust_env=False).status_code == 200


def test_removed_container_is_lost_and_stop_is_quiet(provider: ContainerProvider, engine: docker.DockerClient) -> None:
    sandbox = provider.start(task_key="victim")
    container_of(engine, sandbox).remove(force=True)
    assert not sandbox.alive()
    sandbox.stop()


def _data_disk() -> str:
    """The disk under /var/lib/docker, found here independently of the provider (the engine is local)."""
    dev = os.stat("/var/lib/docker").st_dev
    sys_dir = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve()
    if (sys_dir / "partition").exists():
        sys_dir = sys_dir.parent
    return f"/dev/{sys_dir.name}"


def test_limits_reach_the_container_and_hold(stand_in: str, run_id: str, engine: docker.DockerClient) -> None:
    settings = stand_in_settings(
        stand_in, sandbox_cpus=0.5, sandbox_memory="256m", sandbox_write_bps="2m", sandbox_write_iops=200
    )
    provider = make_provider(settings, Owner(run_id=run_id))
    with provider.start(task_key="limits") as sandbox:
        assert isinstance(sandbox, ContainerSandbox)
        container = container_of(engine, sandbox)
        host_config = container.attrs["HostConfig"]
        assert host_config["NanoCpus"] == 500_000_000
        assert host_config["Memory"] == 256 * 1024**2
        disk = _data_disk()
        assert host_config["BlkioDeviceWriteBps"] == [{"Path": disk, "Rate": 2 * 1024**2}]
        assert host_config["BlkioDeviceWriteIOps"] == [{"Path": disk, "Rate": 200}]
        # The bandwidth limit holds: 4 MiB of direct writes at 2 MiB/s take about 2 s.
        started = time.monotonic()
        code, output = container.exec_run(["dd", "if=/dev/zero", "of=/tmp/f", "bs=1M", "count=4", "oflag=direct"])
        assert code == 0, output
        assert time.monotonic() - started > 1.2
    provider.close()


def test_write_device_can_be_named(stand_in: str, run_id: str, engine: docker.DockerClient) -> None:
    disk = _data_disk()
    settings = stand_in_settings(stand_in, sandbox_write_iops=500, sandbox_write_device=disk)
    provider = make_provider(settings, Owner(run_id=run_id))
    with provider.start(task_key="limits") as sandbox:
        assert isinstance(sandbox, ContainerSandbox)
        host_config = container_of(engine, sandbox).attrs["HostConfig"]
        assert host_config["BlkioDeviceWriteIOps"] == [{"Path": disk, "Rate": 500}]
    provider.close()


def test_missing_image_says_how_to_load_it(run_id: str) -> None:
    settings = Settings(sandbox="x", sandbox_profiles={"x": {"image": "example/absent@sha256:" + "0" * 64}})
    expected = r"not on the engine (.|\n)*`docker load -i image.tar`(.|\n)*sandbox_profiles.x.image: sha256:"
    with pytest.raises(SandboxConfigError, match=expected):
        check_pool(settings, Owner(run_id=run_id))
    provider = make_provider(settings, Owner(run_id=run_id))
    with pytest.raises(SandboxError, match="is not on the engine"):
        provider.start(task_key="t")  # a start failure is a SandboxError (masked), never a crash
    provider.close()


def test_describe_for_the_manifest(stand_in: str, run_id: str, engine: docker.DockerClient) -> None:
    described = describe_pool(stand_in_settings(stand_in), Owner(run_id=run_id))
    image = engine.images.get(stand_in)
    assert described["profile"] == "stand-in"
    [host] = described["hosts"]
    assert host["image"]["id"] == image.id
    assert host["image"]["digest"] == ((image.attrs.get("RepoDigests") or [None])[0] or image.id)
