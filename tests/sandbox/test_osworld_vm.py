"""The osworld-vm profile: what is missing is said before any test runs; up to the container boundary
it starts a container exactly as OSWorld's image needs it (tried with a stand-in image: OSWorld's cannot
be pulled here)."""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from tests.sandbox import support

pytestmark = pytest.mark.docker

ONE_TEST = "def test_never_runs(osworld_sandbox):\n    raise AssertionError('a test ran')\n"


def host_has_cpu_virtualization() -> bool:
    flags = Path("/proc/cpuinfo").read_text()
    return " vmx" in flags or " svm" in flags


@pytest.fixture
def qcow2(tmp_path: Path) -> Path:
    path = tmp_path / "Ubuntu.qcow2"
    path.write_bytes(b"QFI\xfb" + b"\0" * 4092)  # the QCOW2 header magic is what the check reads
    return path


def run_vm(pytester: pytest.Pytester, run_id: str, *options: str) -> pytest.RunResult:
    pytester.makepyfile(test_vm=ONE_TEST)
    return pytester.runpytest_subprocess(f"--osworld-run-id={run_id}", "--osworld-sandbox=osworld-vm", *options)


def assert_stopped_before_tests(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    text = result.stderr.str()
    assert "a test ran" not in result.stdout.str() and "1 passed" not in result.stdout.str()
    assert "no test was started" in text
    assert "Traceback" not in text + result.stdout.str()
    return text


def test_no_qcow2_and_no_image(osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str) -> None:
    text = assert_stopped_before_tests(run_vm(osworld_pytester, run_id))
    assert "no qcow2 is set for osworld-vm" in text
    assert "huggingface.co/datasets/xlangai/ubuntu_osworld" in text and "--osworld-upstream-vm-qcow2" in text
    assert "happysixd/osworld-docker@sha256:" in text and "is not on the engine" in text
    assert "docker load -i image.tar" in text
    assert support.run_containers(engine, run_id) == []


def test_qcow2_path_missing(
    osworld_pytester: pytest.Pytester, stand_in: str, tmp_path: Path, engine: docker.DockerClient, run_id: str
) -> None:
    missing = tmp_path / "vm" / "Ubuntu.qcow2"
    text = assert_stopped_before_tests(
        run_vm(
            osworld_pytester,
            run_id,
            f"--osworld-upstream-vm-image={stand_in}",
            f"--osworld-upstream-vm-qcow2={missing}",
            "--osworld-no-upstream-vm-kvm",
        )
    )
    assert f"the qcow2 {missing} does not exist on environment host" in text
    assert "Ubuntu.qcow2.zip" in text
    assert "is not on the engine" not in text and "KVM" not in text
    assert not missing.exists(), "the check must not make the engine create the path"


def test_a_zip_is_not_a_qcow2(osworld_pytester: pytest.Pytester, stand_in: str, tmp_path: Path, run_id: str) -> None:
    archive = tmp_path / "Ubuntu.qcow2.zip"
    archive.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    text = assert_stopped_before_tests(
        run_vm(
            osworld_pytester,
            run_id,
            f"--osworld-upstream-vm-image={stand_in}",
            f"--osworld-upstream-vm-qcow2={archive}",
            "--osworld-no-upstream-vm-kvm",
        )
    )
    assert "is not a qcow2 image" in text and "unzip it first" in text


@pytest.mark.skipif(host_has_cpu_virtualization(), reason="this host has working KVM: no KVM error to see")
def test_no_kvm_says_what_to_do(
    osworld_pytester: pytest.Pytester, stand_in: str, qcow2: Path, engine: docker.DockerClient, run_id: str
) -> None:
    # This host has /dev/kvm, but its CPU exposes no VT-x/AMD-V: the probe must not be fooled by the node.
    text = assert_stopped_before_tests(
        run_vm(
            osworld_pytester,
            run_id,
            f"--osworld-upstream-vm-image={stand_in}",
            f"--osworld-upstream-vm-qcow2={qcow2}",
        )
    )
    assert "no usable KVM on environment host unix:///var/run/docker.sock" in text
    assert "no vmx or svm" in text and "--osworld-no-upstream-vm-kvm" in text
    assert "qcow2" not in text.split("no usable KVM")[0].split("no test was started")[1]
    assert support.run_containers(engine, run_id) == []


def test_container_as_osworld_needs_it(
    osworld_pytester: pytest.Pytester, stand_in: str, qcow2: Path, engine: docker.DockerClient, run_id: str
) -> None:
    osworld_pytester.makepyfile(
        test_vm=f"""
import docker, httpx

def test_container(osworld_sandbox):
    attrs = docker.from_env().containers.get(osworld_sandbox.container_id).attrs
    mounts = [(m["Source"], m["Destination"], m["RW"]) for m in attrs["Mounts"]]
    assert ({str(qcow2)!r}, "/System.qcow2", False) in mounts
    assert attrs["HostConfig"]["CapAdd"] == ["NET_ADMIN"]
    env = dict(e.split("=", 1) for e in attrs["Config"]["Env"])
    assert (env["DISK_SIZE"], env["RAM_SIZE"], env["CPU_CORES"], env["KVM"]) == ("16G", "3G", "2", "N")
    assert not attrs["HostConfig"]["Devices"]
    published = attrs["NetworkSettings"]["Ports"]
    assert sorted(published) == ["5000/tcp", "8006/tcp", "8080/tcp", "9222/tcp"]
    assert {{b[0]["HostIp"] for b in published.values()}} == {{"127.0.0.1"}}
    assert httpx.get(osworld_sandbox.api_url + "/screenshot", trust_env=False).status_code == 200
"""
    )
    result = osworld_pytester.runpytest_subprocess(
        f"--osworld-run-id={run_id}",
        "--osworld-sandbox=osworld-vm",
        f"--osworld-upstream-vm-image={stand_in}",
        f"--osworld-upstream-vm-qcow2={qcow2}",
        "--osworld-no-upstream-vm-kvm",
        "--osworld-upstream-vm-disk-size=16G",
        "--osworld-upstream-vm-ram-size=3G",
        "--osworld-upstream-vm-cpu-cores=2",
    )
    result.assert_outcomes(passed=1)
    assert support.run_containers(engine, run_id) == []


def test_qcow2_is_described_and_hashed_once(
    stand_in: str, qcow2: Path, run_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    from pytest_osworld.sandbox import Owner, describe_pool
    from pytest_osworld.settings import Settings

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    settings = Settings(
        sandbox="osworld-vm", upstream_vm_image=stand_in, upstream_vm_qcow2=qcow2, upstream_vm_kvm=False
    )
    described = describe_pool(settings, Owner(run_id=run_id))
    [host] = described["hosts"]
    expected = hashlib.sha256(qcow2.read_bytes()).hexdigest()
    assert host["qcow2"] == {
        "path": str(qcow2),
        "host": "unix:///var/run/docker.sock",
        "size": 4096,
        "sha256": expected,
    }
    cache = tmp_path / "cache" / "pytest-osworld" / "qcow2-sha256.json"
    assert expected in cache.read_text()
    # A cached hash is used as it is: poison it and see it come back.
    cache.write_text(cache.read_text().replace(expected, "f" * 64))
    assert describe_pool(settings, Owner(run_id=run_id))["hosts"][0]["qcow2"]["sha256"] == "f" * 64
