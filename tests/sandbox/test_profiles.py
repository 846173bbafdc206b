"""Profiles and hosts as settings make them: validation, precedence, worker placement, redaction."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_osworld.sandbox import profiles
from pytest_osworld.sandbox.base import SandboxConfigError
from pytest_osworld.sandbox.hosts import EngineHost, parse_host, parse_hosts, pick_host, redact
from pytest_osworld.settings import OSWORLD_VM_IMAGE, Settings
from pytest_osworld.units import parse_bytes


def resolve(**values: object) -> profiles.ContainerProfile:
    return profiles.resolve(Settings(**values))


def test_desktop_is_the_default_and_builds_its_image() -> None:
    profile = resolve(screen_width=1280, screen_height=720)
    assert profile.name == "desktop"
    assert profile.build == "desktop"
    assert profile.image == profiles.DESKTOP_IMAGE
    assert profile.env["SCREEN_WIDTH"] == "1280" and profile.env["SCREEN_HEIGHT"] == "720"
    assert profile.ports == [5000, 8006, 8080, 9222]
    assert (profile.readiness.path, profile.readiness.status) == ("/screenshot", 200)


def test_osworld_vm_follows_the_contract() -> None:
    profile = resolve(sandbox="osworld-vm", upstream_vm_qcow2="/vm/Ubuntu.qcow2", upstream_vm_ram_size="8G")
    assert profile.image == OSWORLD_VM_IMAGE and "@sha256:" in profile.image
    assert profile.env == {"DISK_SIZE": "32G", "RAM_SIZE": "8G", "CPU_CORES": "4"}
    assert profile.devices == ["/dev/kvm:/dev/kvm:rwm"] and profile.kvm
    assert profile.cap_add == ["NET_ADMIN"]
    assert [(m.source, m.target, m.read_only) for m in profile.mounts] == [("/vm/Ubuntu.qcow2", "/System.qcow2", True)]
    assert profile.readiness.deadline == 300


def test_osworld_vm_without_kvm_only_when_asked() -> None:
    profile = resolve(sandbox="osworld-vm", upstream_vm_kvm=False)
    assert profile.env["KVM"] == "N" and profile.devices == [] and not profile.kvm


def test_flat_settings_win_over_the_profile_entry() -> None:
    settings = Settings(
        sandbox="osworld-vm",
        sandbox_profiles={
            "osworld-vm": {"ram_size": "2G", "cpu_cores": 2, "qcow2": "/a.qcow2", "resources": {"cpus": 1}}
        },
        upstream_vm_cpu_cores=8,
        sandbox_memory="6g",
    )
    profile = profiles.resolve(settings)
    assert profile.env["RAM_SIZE"] == "2G"  # only the entry set it
    assert profile.env["CPU_CORES"] == "8"  # given explicitly: wins
    assert profile.qcow2 == "/a.qcow2"
    assert profile.resources.cpus == 1 and profile.resources.memory == 6 * 1024**3


def test_own_profile_with_every_key() -> None:
    settings = Settings(
        sandbox="mine",
        sandbox_profiles={
            "mine": {
                "image": "example/desktop:1",
                "env": {"A": 1, "B": True},
                "devices": ["/dev/fuse"],
                "mounts": ["/srv/data:/data:ro", {"source": "/srv/out", "target": "/out", "read_only": False}],
                "ports": [5000, 6080],
                "readiness": {"port": 6080, "path": "/health", "status": 204, "deadline": 15},
                "resources": {"cpus": 1.5, "memory": "2g", "write_bps": "20m", "write_iops": 300},
                "cap_add": ["SYS_ADMIN"],
                "shm_size": "1g",
            }
        },
        sandbox_start_timeout=42,
    )
    profile = profiles.resolve(settings)
    assert profile.env == {"A": "1", "B": "Y"}
    assert [(m.target, m.read_only) for m in profile.mounts] == [("/data", True), ("/out", False)]
    assert profile.readiness.port == 6080 and profile.readiness.status == 204
    assert profile.readiness.deadline == 42
    assert profile.resources.memory == 2 * 1024**3 and profile.resources.write_bps == 20 * 1024**2
    assert profile.shm_size == 1024**3 and profile.build is None


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"image": "x", "readiness": {"status": "ok"}}, "sandbox_profiles.mine.readiness.status:"),
        ({"image": "x", "resources": {"memory": "lots"}}, "sandbox_profiles.mine.resources.memory:"),
        ({"image": "x", "mounts": ["relative:/data"]}, "sandbox_profiles.mine.mounts.0"),
        ({"image": "x", "portz": [1]}, "sandbox_profiles.mine.portz: unknown key"),
        ({"env": {}}, "sandbox_profiles.mine.image: Field required"),
        ({"image": "x", "readiness": {"path": "health"}}, "sandbox_profiles.mine.readiness.path:"),
    ],
)
def test_profile_errors_name_the_key(entry: dict[str, Any], expected: str) -> None:
    with pytest.raises(SandboxConfigError) as info:
        resolve(sandbox="mine", sandbox_profiles={"mine": entry})
    assert expected in str(info.value)


def test_unknown_profile_lists_the_known_ones() -> None:
    with pytest.raises(SandboxConfigError, match=r"'nope' is not defined \(known: desktop, osworld-vm, ray, vm\)"):
        resolve(sandbox="nope")


def test_builtin_overrides_are_checked_too() -> None:
    with pytest.raises(SandboxConfigError, match="sandbox_profiles.osworld-vm.cpu_cores"):
        resolve(sandbox="osworld-vm", sandbox_profiles={"osworld-vm": {"cpu_cores": 0}})


def test_sizes() -> None:
    assert parse_bytes("512m") == 512 * 1024**2
    assert parse_bytes("1.5G") == int(1.5 * 1024**3)
    assert parse_bytes("100") == 100
    with pytest.raises(ValueError):
        parse_bytes("fast")


def test_hosts_capacity_and_placement() -> None:
    hosts = parse_hosts(["ssh://root@a=2", "tcp://10.0.0.2:2375"])
    assert [h.capacity for h in hosts] == [2, 1]
    placed = [pick_host(hosts, f"gw{i}").display for i in range(6)]
    assert placed == ["ssh://root@a", "tcp://10.0.0.2:2375", "ssh://root@a"] * 2
    assert pick_host(hosts, None) == hosts[0]
    # The same worker always lands on the same host.
    assert pick_host(hosts, "gw4") == pick_host(parse_hosts(["ssh://root@a=2", "tcp://10.0.0.2:2375"]), "gw4")


def test_host_urls_are_checked_and_redacted() -> None:
    with pytest.raises(SandboxConfigError, match="expected unix://, tcp:// or ssh://"):
        parse_host("docker.example:2375")
    assert redact("ssh://deploy:hunter2@env1:2222") == "ssh://deploy@env1:2222"
    assert "hunter2" not in EngineHost("tcp://u:hunter2@10.1.1.1:2375").display
    assert EngineHost("tcp://10.1.1.1:2375").publish_ip() == "10.1.1.1"
    assert EngineHost("ssh://root@envhost").publish_ip() == "127.0.0.1"


def test_a_password_in_the_url_never_reaches_an_error() -> None:
    # A port nothing listens on: the connection fails and the message must not echo the secret.
    host = parse_host("tcp://admin:s3cr3t@127.0.0.1:9")
    with pytest.raises(SandboxConfigError) as info:
        host.connect(timeout=5)
    assert "s3cr3t" not in str(info.value)
    assert "tcp://admin@127.0.0.1:9" in str(info.value)
