"""The pieces of the VM sandbox on their own: the command line, the state key, the boot probe, the check."""

from __future__ import annotations

import secrets

import docker
import pytest

from pytest_osworld.sandbox import EngineHost, Owner, SandboxConfigError
from pytest_osworld.settings import Settings
from pytest_osworld.vm import config as vm_config
from pytest_osworld.vm.kvm_probe import probe_boot
from pytest_osworld.vm.provider import check_pool
from pytest_osworld.vm.qemu_args import DiskBoot, KernelBoot, MachineSpec, state_key
from tests.vm.conftest import remove_run

KERNEL = KernelBoot("/store/images/abc/vmlinuz", "/store/images/abc/initrd.img")


def _spec(**changes: object) -> MachineSpec:
    values: dict[str, object] = {"memory_mib": 2048, "cpus": 2, "accel": "tcg", "boot": KERNEL}
    values.update(changes)
    return MachineSpec(**values)  # type: ignore[arg-type]


def test_the_command_line_forwards_the_guest_ports_and_the_monitor() -> None:
    argv = _spec().argv()
    netdev = argv[argv.index("-netdev") + 1]
    for port in (5000, 9222, 8006, 8080):
        assert f"hostfwd=tcp::{port}-:{port}" in netdev
    assert "tcp:0.0.0.0:4444,server=on,wait=off" in argv
    assert argv[argv.index("-accel") + 1].startswith("tcg")
    assert "-incoming" not in argv
    assert argv[-2:] != ["-incoming", "x"] and _spec().argv(incoming="exec:cat s")[-2:] == ["-incoming", "exec:cat s"]


def test_kvm_and_uefi_command_lines() -> None:
    argv = _spec(accel="kvm", boot=DiskBoot("uefi")).argv()
    assert argv[argv.index("-accel") + 1] == "kvm" and argv[argv.index("-cpu") + 1] == "host"
    assert any("OVMF_CODE" in a for a in argv) and any("vars.fd" in a for a in argv)
    assert "-kernel" not in argv


def test_the_state_key_changes_with_the_qemu_arguments_and_the_base() -> None:
    key = state_key(_spec(), base_identity="image:1", qemu_identity="qemu:1")
    assert key == state_key(_spec(), base_identity="image:1", qemu_identity="qemu:1")
    others = {
        state_key(_spec(memory_mib=4096), base_identity="image:1", qemu_identity="qemu:1"),
        state_key(_spec(cpus=4), base_identity="image:1", qemu_identity="qemu:1"),
        state_key(_spec(accel="kvm"), base_identity="image:1", qemu_identity="qemu:1"),
        state_key(
            _spec(boot=KernelBoot(KERNEL.kernel, KERNEL.initrd, (1280, 720))),
            base_identity="image:1",
            qemu_identity="qemu:1",
        ),
        state_key(_spec(), base_identity="image:2", qemu_identity="qemu:1"),
        state_key(_spec(), base_identity="/vm/Ubuntu.qcow2|25000000000|1700000000", qemu_identity="qemu:1"),
        state_key(_spec(), base_identity="image:1", qemu_identity="qemu:2"),
    }
    assert key not in others and len(others) == 7


def test_settings_resolve_to_a_vm_configuration() -> None:
    own = vm_config.resolve(Settings(sandbox="vm"))
    assert (own.accel, own.reset, own.memory_mib, own.cpus, own.qcow2) == ("kvm", "snapshot", 2048, 2, None)
    ubuntu = vm_config.resolve(Settings(sandbox="vm", vm_qcow2="/vm/Ubuntu.qcow2", reset="boot", vm_accel="tcg"))
    assert (ubuntu.reset, ubuntu.memory_mib, ubuntu.cpus, ubuntu.qcow2, ubuntu.firmware) == (
        "boot",
        4096,
        4,
        "/vm/Ubuntu.qcow2",
        "uefi",
    )
    assert ubuntu.boot_timeout > own.boot_timeout  # TCG boots take minutes


@pytest.mark.docker
def test_the_kvm_probe_answers_for_this_host_either_way(engine: docker.DockerClient, qemu_image: str) -> None:
    # Whether KVM can boot a stock kernel is the host's: some cannot though /dev/kvm opens (a console that
    # stays silent, or QEMU aborting on a CPU feature), some can. The probe must answer either way, with
    # its own reason, and never by waiting out its deadline.
    report = probe_boot(engine, qemu_image, labels={}, accel="kvm", deadline=60)
    if report.booted:
        assert report.detail == "booted"
        return
    assert report.detail and report.detail != "no output", report
    assert "qemu exit 137" not in report.detail, f"the probe waited out its deadline: {report.detail}"
    message = report.problem("unix:///var/run/docker.sock")
    assert "KVM cannot boot a guest on environment host unix:///var/run/docker.sock" in message
    assert report.detail in message and "--osworld-vm-accel tcg" in message


@pytest.mark.docker
def test_the_boot_probe_says_yes_when_the_guest_boots(engine: docker.DockerClient, qemu_image: str) -> None:
    # The same probe under emulation reaches its marker: a "no" above is KVM's, not the probe's.
    report = probe_boot(engine, qemu_image, labels={}, accel="tcg", deadline=120)
    assert report.booted, report.detail


@pytest.mark.docker
def test_without_kvm_and_without_tcg_asked_for_the_check_stops_with_the_fix(
    engine: docker.DockerClient, kvm_boots: bool
) -> None:
    run_id = f"vmt-{secrets.token_hex(4)}"
    try:
        if kvm_boots:  # a host whose KVM works: nothing to stop
            check_pool(vm_config.resolve(Settings(sandbox="vm")), [EngineHost()], Owner(run_id=run_id))
            return
        with pytest.raises(SandboxConfigError) as info:
            check_pool(vm_config.resolve(Settings(sandbox="vm")), [EngineHost()], Owner(run_id=run_id))
        assert "KVM cannot boot a guest" in str(info.value) and "--osworld-vm-accel tcg" in str(info.value)
    finally:
        assert not remove_run(engine, run_id)


@pytest.mark.docker
def test_a_session_without_usable_kvm_stops_before_any_test(pytester: pytest.Pytester, kvm_boots: bool) -> None:
    pytester.makeini("[pytest]\n")
    tasks = pytester.path / "t.jsonl"
    tasks.write_text(
        '{"id": "t1", "domain": "os", "instruction": "x", "config": [], '
        '"evaluator": {"func": "infeasible"}, "solution": ["FAIL"]}\n'
    )
    result = pytester.runpytest_subprocess(
        str(tasks),
        "-p",
        "no:cacheprovider",
        "--osworld-agent",
        "oracle",
        "--osworld-sandbox",
        "vm",
        "--osworld-report-dir",
        str(pytester.path / "reports"),
    )
    assert "Traceback" not in result.stderr.str()
    if kvm_boots:  # a host whose KVM works runs the task (the oracle's FAIL on an infeasible task passes)
        result.assert_outcomes(passed=1)
        return
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*KVM cannot boot a guest on environment host*--osworld-vm-accel tcg*"])


@pytest.mark.docker
@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/nonexistent/Ubuntu.qcow2", "cannot be read on the environment host"),
        ("/etc/hostname", "is not a qcow2 image"),
    ],
)
def test_a_base_qcow2_that_is_missing_or_not_a_qcow2_stops_the_check(
    engine: docker.DockerClient, path: str, says: str
) -> None:
    run_id = f"vmt-{secrets.token_hex(4)}"
    config = vm_config.resolve(Settings(sandbox="vm", vm_accel="tcg", vm_qcow2=path))
    try:
        with pytest.raises(SandboxConfigError) as info:
            check_pool(config, [EngineHost()], Owner(run_id=run_id))
        assert path in str(info.value) and says in str(info.value)
    finally:
        assert not remove_run(engine, run_id)
