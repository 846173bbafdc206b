"""VM sandboxes of the project's image, reset from a saved state: real QEMU (TCG), real guest API."""

from __future__ import annotations

import time

import docker
import pytest

from pytest_osworld.guest.client import GuestClient
from pytest_osworld.sandbox import LABEL_RUN_ID
from pytest_osworld.vm import snapshot, store
from pytest_osworld.vm.provider import VmProvider, VmSandbox
from pytest_osworld.vm.qmp import QmpClient

pytestmark = pytest.mark.docker


def test_a_restored_sandbox_answers_keeps_uploads_and_has_the_hosts_clock(provider: VmProvider) -> None:
    provider.ensure_state()
    with provider.start(task_key="vm/uploads") as sandbox:
        assert isinstance(sandbox, VmSandbox)
        info = sandbox.describe()
        assert info["reset"] == "snapshot" and "fallback" not in info and info["state"] == provider.key
        assert info["profile"] == "vm" and info["accel"] == "tcg" and sandbox.alive()
        assert sandbox.ready_seconds < 30, "a restore is expected to take seconds, not a boot's minutes"
        with GuestClient(sandbox.api_url) as guest:
            assert guest.platform() == "Linux"
            assert guest.screenshot().startswith(b"\x89PNG")
            guest.upload("/home/user/Desktop/notes.txt", b"kept across calls\n")
            assert guest.file("/home/user/Desktop/notes.txt") == b"kept across calls\n"
            listing = guest.execute(["ls", "-l", "/home/user/Desktop/notes.txt"])
            assert listing.returncode == 0 and " user user " in (listing.output or "")
            # The saved state is older than this test; the clock was set from the host's after the restore.
            guest_now = float((guest.execute(["date", "+%s.%N"]).output or "0").strip())
            assert abs(guest_now - time.time()) < 5
            sudo = guest.execute(["sudo", "-n", "true"])
            assert sudo.returncode == 0, sudo.error  # setuid survived the trip into the qcow2


def test_a_restored_sandbox_does_not_see_the_previous_sandboxs_changes(provider: VmProvider) -> None:
    with provider.start(task_key="vm/first") as first, GuestClient(first.api_url) as guest:
        guest.upload("/home/user/Desktop/secret.txt", b"first sandbox only\n")
        assert guest.execute(["sudo", "-n", "touch", "/etc/first-was-here"]).returncode == 0
        assert guest.execute(["sync"]).returncode == 0
    assert not first.alive()
    with provider.start(task_key="vm/second") as second:
        assert second.describe()["reset"] == "snapshot"
        with GuestClient(second.api_url) as guest:
            assert guest.file("/home/user/Desktop/secret.txt") is None
            assert guest.execute(["test", "-e", "/etc/first-was-here"]).returncode == 1


def test_two_sandboxes_run_side_by_side_on_their_own_disks(provider: VmProvider) -> None:
    with provider.start(task_key="vm/a") as a, provider.start(task_key="vm/b") as b:
        assert a.api_url != b.api_url
        with GuestClient(a.api_url) as guest_a, GuestClient(b.api_url) as guest_b:
            guest_a.upload("/tmp/who", b"a")
            guest_b.upload("/tmp/who", b"b")
            assert (guest_a.file("/tmp/who"), guest_b.file("/tmp/who")) == (b"a", b"b")


def test_qemu_killed_in_a_sandbox_turns_it_lost(provider: VmProvider, engine: docker.DockerClient) -> None:
    sandbox = provider.start(task_key="vm/killed")
    try:
        container = engine.containers.get(sandbox.container_id)
        killed = container.exec_run(["sh", "-c", "kill -KILL $(cat /run/vm/qemu.pid)"])
        assert killed.exit_code == 0, killed.output
        deadline = time.monotonic() + 30
        while sandbox.alive() and time.monotonic() < deadline:
            time.sleep(0.1)  # poll interval while the container ends
        assert not sandbox.alive()
        assert "exit code" in str(sandbox.lost("QEMU was killed"))
    finally:
        sandbox.stop()
    with pytest.raises(docker.errors.NotFound):
        engine.containers.get(sandbox.container_id)


def test_a_corrupt_state_falls_back_to_one_cold_boot_and_is_saved_again(
    provider: VmProvider, engine: docker.DockerClient, qemu_image: str
) -> None:
    state = provider.ensure_state()
    garbage = store.run(
        engine,
        qemu_image,
        f"dd if=/dev/urandom of={state.ram} bs=4096 count=64 conv=notrunc 2>&1",
        labels={},
        writable=True,
    )
    assert garbage.exit_code == 0, garbage.output
    with provider.start(task_key="vm/corrupt") as sandbox:
        info = sandbox.describe()
        assert info["reset"] == "boot" and info["fallback"].startswith("restore failed: QEMU in")
        assert "exited while loading the state" in info["fallback"] and "Not a migration stream" in info["fallback"]
        with GuestClient(sandbox.api_url) as guest:
            assert guest.platform() == "Linux"  # the cold-booted sandbox is a working one
    # The bad state was dropped; the next sandbox saves a fresh one and restores from it.
    assert snapshot.find(engine, qemu_image, provider.key, {}) is None
    with provider.start(task_key="vm/after-corrupt") as sandbox:
        info = sandbox.describe()
        assert info["reset"] == "snapshot" and "fallback" not in info


def test_a_restore_past_its_deadline_falls_back_and_keeps_the_state(
    provider: VmProvider, engine: docker.DockerClient, qemu_image: str
) -> None:
    state = provider.ensure_state()
    config = provider.config
    try:
        provider.config = type(config)(**{**config.__dict__, "restore_timeout": 0.01})
        with provider.start(task_key="vm/slow-restore") as sandbox:
            info = sandbox.describe()
            assert info["reset"] == "boot" and "restore failed" in info["fallback"]
    finally:
        provider.config = config
    kept = snapshot.find(engine, qemu_image, provider.key, {})
    assert kept is not None and kept.token == state.token


def test_a_sandbox_vm_answers_its_monitor(provider: VmProvider) -> None:
    with provider.start(task_key="vm/qmp") as sandbox:
        assert isinstance(sandbox, VmSandbox)
        qmp = QmpClient.connect(*sandbox.qmp_address, deadline=time.monotonic() + 10)
        with qmp:
            assert qmp.execute("query-status")["status"] == "running"
            qmp.execute("stop")
            assert qmp.execute("query-status")["status"] == "paused"
            qmp.execute("cont")


def test_no_container_of_the_run_is_left(provider: VmProvider, engine: docker.DockerClient) -> None:
    left = engine.containers.list(all=True, filters={"label": f"{LABEL_RUN_ID}={provider.owner.run_id}"})
    assert [c.name for c in left] == []
