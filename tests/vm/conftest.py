"""Fixtures of the VM tests: a real engine, the real QEMU and VM images, QEMU under TCG.

This host's /dev/kvm cannot boot a guest, so every VM here is emulated (TCG), as a user without
KVM would ask for with ``--osworld-vm-accel tcg``. The tests use a machine configuration of their
own (a different memory size), so their saved state never touches the one real runs use.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import docker
import pytest

from pytest_osworld.sandbox import LABEL_MANAGED, LABEL_RUN_ID, EngineHost, Owner
from pytest_osworld.settings import Settings
from pytest_osworld.vm import config as vm_config
from pytest_osworld.vm.kvm_probe import probe_boot
from pytest_osworld.vm.provider import VmProvider
from pytest_osworld.vm.qemu_image import ensure_qemu_image

TEST_MEMORY = "2000m"  # not the default 2048m: the tests' saved state is their own


@pytest.fixture(scope="session")
def qemu_image(engine: docker.DockerClient) -> str:
    return ensure_qemu_image(engine)


@pytest.fixture(scope="session")
def kvm_boots(engine: docker.DockerClient, qemu_image: str) -> bool:
    """Whether KVM boots a guest on this host, by the probe's own boot (tests of what follows from the
    answer hold either way; the probe's answer itself is tested in test_units.py)."""
    return probe_boot(engine, qemu_image, labels={}, accel="kvm", deadline=60).booted


def remove_run(client: docker.DockerClient, run_id: str) -> list[str]:
    """Remove the containers of a run; returns the names of those that were still there."""
    found = client.containers.list(all=True, filters={"label": [f"{LABEL_MANAGED}=1", f"{LABEL_RUN_ID}={run_id}"]})
    for container in found:
        container.remove(force=True, v=True)
    return [c.name for c in found]


def vm_settings(**extra: object) -> Settings:
    return Settings(sandbox="vm", vm_accel="tcg", vm_memory=TEST_MEMORY, **extra)


@pytest.fixture(scope="module")
def provider(engine: docker.DockerClient) -> Iterator[VmProvider]:
    """A snapshot-reset VM provider of a run of its own; nothing of that run may be left afterwards."""
    run_id = f"vmt-{secrets.token_hex(4)}"
    made = VmProvider(vm_config.resolve(vm_settings(reset="snapshot")), EngineHost(), Owner(run_id=run_id))
    made.prepare()
    yield made
    made.close()
    left = remove_run(engine, run_id)
    assert not left, f"containers left by the VM provider: {left}"
